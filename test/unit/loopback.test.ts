/** The loopback rule (src/config/loopback.ts) for URL hosts and a listener's --host. */
import { expect, test } from "bun:test";
import * as v from "valibot";
import { isLoopbackHostname, listenAddress, localhostAudienceWarning } from "../../src/config/loopback.ts";
import { listenHost } from "../../src/config/values.ts";

test("loopback however it is written: names, 127.0.0.0/8, the IPv6 loopback and IPv4-mapped loopback", () => {
  for (const host of [
    "localhost",
    "LOCALHOST",
    "127.0.0.1",
    "127.1.2.3",
    "::1",
    "[::1]",
    // Review 11 F6: a listener's --host is not normalised as a URL's host is; these warned "reachable from the network".
    "0:0:0:0:0:0:0:1",
    "::ffff:127.0.0.1",
    "[::ffff:127.0.0.1]",
    "::ffff:7f00:1",
  ])
    expect([host, isLoopbackHostname(host)]).toEqual([host, true]);
  // As a URL normalises them.
  for (const url of ["http://[0:0:0:0:0:0:0:1]/", "http://[::ffff:127.0.0.1]/", "http://127.1/", "http://0x7f.1/"])
    expect([url, isLoopbackHostname(new URL(url).hostname)]).toEqual([url, true]);
});

test("anything else is not: DNS names that begin with 127, other addresses, unspecified ones", () => {
  for (const host of [
    "127.example.com",
    "127.0.0.1.example.com",
    "0.0.0.0",
    "::",
    "::ffff:10.0.0.1",
    "::ffff:0.0.0.0",
    "::2",
    "192.168.1.5",
    "localhost.example.com",
    "not:an:address",
  ])
    expect([host, isLoopbackHostname(host)]).toEqual([host, false]);
});

test("a listener's --host: every name for loopback is bound, and named, as its address, never left to the resolver", () => {
  // RFC 6761: localhost and the names below it, in any case, with or without the final dot.
  for (const host of ["localhost", "LOCALHOST", "localhost.", "LocalHost.", "app.localhost", "app.localhost."])
    expect([host, listenAddress(host)]).toEqual([host, "127.0.0.1"]);
  // The ::1 names of Debian's /etc/hosts, which other systems do not have.
  for (const host of ["ip6-localhost", "IP6-Loopback", "ip6-localhost."])
    expect([host, listenAddress(host)]).toEqual([host, "::1"]);
  for (const host of ["127.0.0.1", "::1", "0.0.0.0", "localhost.example.com", "ip6-localnet", "mybox"])
    expect([host, listenAddress(host)]).toEqual([host, host]);
});

test("--host refuses what is no host name even below .localhost, and takes the loopback names that are", () => {
  for (const host of ["a b.localhost", "..localhost", ".localhost", "x_y.localhost", "-x.localhost"])
    expect([host, v.safeParse(listenHost, host).success]).toEqual([host, false]);
  for (const [host, bound] of [
    ["localhost.", "127.0.0.1"],
    ["mcp-1.app.localhost", "127.0.0.1"],
    ["ip6-loopback", "::1"],
  ])
    expect([host, v.parse(listenHost, host)]).toEqual([host, bound]);
});

test("an --oidc-audience by a loopback name where clients are given the address is warned about, with the audience that fits", () => {
  expect(localhostAudienceWarning("http://LOCALHOST.:8080/mcp", "localhost", "/mcp")).toContain(
    "give --oidc-audience http://127.0.0.1:8080/mcp",
  );
  expect(localhostAudienceWarning("http://ip6-localhost:8080/mcp", "ip6-localhost", "/mcp")).toContain(
    "give --oidc-audience http://[::1]:8080/mcp",
  );
  // It says which name the audience gives, not "localhost" for every one of them.
  expect(localhostAudienceWarning("http://ip6-localhost:8080/mcp", "ip6-localhost", "/mcp")).toStartWith(
    "--oidc-audience http://ip6-localhost:8080/mcp names ip6-localhost, a name for loopback, but clients are given http://[::1]:8080/mcp",
  );
  // A name for the other loopback is not this listener's; the address itself is what clients use.
  expect(localhostAudienceWarning("http://localhost:8080/mcp", "::1", "/mcp")).toBeUndefined();
  expect(localhostAudienceWarning("http://[::1]:8080/mcp", "ip6-loopback", "/mcp")).toBeUndefined();
});
