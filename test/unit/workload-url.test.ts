/**
 * Which URLs reach a recorded workload's own listener (`reachesWorkload`): what lets `proxy stdio URL`
 * refuse one of our own guarded members as `proxy stdio NAME` does, however the URL is written.
 */
import { expect, test } from "bun:test";
import { reachesWorkload } from "../../src/state/workload-url.ts";
import type { WorkloadRecord } from "../../src/state/workload-record.ts";

function recordOn(host: string, proxyPort = 41_500, proxyPath = "/mcp"): WorkloadRecord {
  return { host, proxyPort, proxyPath } as WorkloadRecord;
}

const reaches = (record: WorkloadRecord, url: string) => reachesWorkload(record, new URL(url));

test("the workload's own URL, and its loopback spelled otherwise, with any path or a trailing slash", () => {
  const member = recordOn("127.0.0.1");
  for (const url of [
    "http://127.0.0.1:41500/mcp",
    "http://localhost:41500/mcp",
    "http://LOCALHOST:41500/mcp/",
    "http://127.0.0.1:41500/",
    "http://127.0.0.1:41500/sse",
  ])
    expect(reaches(member, url)).toBe(true);
  // Recorded as `--host localhost`: bound as 127.0.0.1 (config/loopback.ts listenAddress).
  expect(reaches(recordOn("localhost"), "http://127.0.0.1:41500/mcp")).toBe(true);
  expect(reaches(recordOn("::1"), "http://localhost:41500/mcp")).toBe(true);
  expect(reaches(recordOn("::1"), "http://[::1]:41500/mcp")).toBe(true);
});

test("a wildcard binding is reached on the loopback of its family", () => {
  expect(reaches(recordOn("0.0.0.0"), "http://127.0.0.1:41500/mcp")).toBe(true);
  expect(reaches(recordOn("0.0.0.0"), "http://localhost:41500/mcp")).toBe(true);
  expect(reaches(recordOn("0.0.0.0"), "http://[::1]:41500/mcp")).toBe(false);
  expect(reaches(recordOn("::"), "http://[::1]:41500/mcp")).toBe(true);
  expect(reaches(recordOn("::"), "http://127.0.0.1:41500/mcp")).toBe(true);
});

test("another port, another host, another loopback family or https is not the workload", () => {
  const member = recordOn("127.0.0.1");
  expect(reaches(member, "http://127.0.0.1:41501/mcp")).toBe(false);
  expect(reaches(member, "http://127.0.0.1/mcp")).toBe(false);
  expect(reaches(member, "https://127.0.0.1:41500/mcp")).toBe(false);
  expect(reaches(member, "http://mcp.example.com:41500/mcp")).toBe(false);
  expect(reaches(member, "http://[::1]:41500/mcp")).toBe(false);
  expect(reaches(member, "http://127.0.0.2:41500/mcp")).toBe(false);
  expect(reaches(recordOn("192.0.2.7"), "http://localhost:41500/mcp")).toBe(false);
  expect(reaches(recordOn("192.0.2.7"), "http://192.0.2.7:41500/")).toBe(true);
  expect(reaches(recordOn("127.0.0.1", 80), "http://localhost/mcp")).toBe(true);
});

test("the addresses a connection is really made to: unspecified, IPv4-mapped, and this machine's own on a wildcard binding", () => {
  // On Linux a connection to 0.0.0.0 or :: is made to the loopback; ::ffff:127.0.0.1 is 127.0.0.1 over IPv4.
  for (const host of ["127.0.0.1", "localhost"]) {
    expect(reaches(recordOn(host), "http://0.0.0.0:41500/mcp")).toBe(true);
    expect(reaches(recordOn(host), "http://[::ffff:127.0.0.1]:41500/mcp")).toBe(true);
    expect(reaches(recordOn(host), "http://[::]:41500/mcp")).toBe(false);
  }
  expect(reaches(recordOn("::1"), "http://[::]:41500/mcp")).toBe(true);
  expect(reaches(recordOn("0:0:0:0:0:0:0:1"), "http://[::1]:41500/mcp")).toBe(true);
  expect(reaches(recordOn("::1"), "http://0.0.0.0:41500/mcp")).toBe(false);
  const local = new Set(["192.0.2.2", "fd00:0:0:0:0:0:0:2"]);
  const on = (host: string, url: string) => reachesWorkload(recordOn(host), new URL(url), local);
  for (const url of [
    "http://0.0.0.0:41500/mcp",
    "http://127.0.0.2:41500/mcp",
    "http://192.0.2.2:41500/mcp",
    "http://[::ffff:192.0.2.2]:41500/mcp",
    "http://[::ffff:127.0.0.1]:41500/mcp",
  ]) {
    expect(on("0.0.0.0", url)).toBe(true);
    expect(on("::", url)).toBe(true);
  }
  for (const url of ["http://[fd00::2]:41500/mcp", "http://[::]:41500/mcp", "http://[::1]:41500/mcp"]) {
    expect(on("0.0.0.0", url)).toBe(false);
    expect(on("::", url)).toBe(true);
  }
  // Another machine's address, and a specific binding reached on an interface address it is not bound to.
  expect(on("0.0.0.0", "http://192.0.2.99:41500/mcp")).toBe(false);
  expect(on("127.0.0.1", "http://192.0.2.2:41500/mcp")).toBe(false);
  expect(on("192.0.2.2", "http://[::ffff:192.0.2.2]:41500/mcp")).toBe(true);
});

test("every loopback name --host binds as an address reaches the workload on that address", () => {
  // config/loopback.ts loopbackNameAddress: `localhost.`, the names below localhost, ip6-localhost.
  for (const url of ["http://localhost.:41500/mcp", "http://app.localhost:41500/mcp", "http://LOCALHOST.:41500/"]) {
    expect(reaches(recordOn("127.0.0.1"), url)).toBe(true);
    expect(reaches(recordOn("0.0.0.0"), url)).toBe(true);
    expect(reaches(recordOn("192.0.2.7"), url)).toBe(false);
  }
  expect(reaches(recordOn("::1"), "http://ip6-localhost:41500/mcp")).toBe(true);
  expect(reaches(recordOn("::"), "http://ip6-loopback:41500/mcp")).toBe(true);
  expect(reaches(recordOn("127.0.0.1"), "http://ip6-localhost:41500/mcp")).toBe(false);
  expect(reaches(recordOn("0.0.0.0"), "http://ip6-localhost:41500/mcp")).toBe(false);
});
