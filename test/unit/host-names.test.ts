/**
 * Which Host names a listener answers to (middleware/host-names.ts) and the `--allowed-hosts`
 * value (config/allowed-hosts.ts): the DNS-rebinding protection of listeners beyond loopback
 * (review 7, R7-M2).
 */
import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { allowedHostList } from "../../src/config/allowed-hosts.ts";
import { machineAddresses } from "../../src/config/ip-address.ts";
import { hostNamePolicy, listenerNames, machineNames } from "../../src/middleware/host-names.ts";

const beyond = (allowed: string[] = [], machine: string[] = ["buildbox", "buildbox.local"]) =>
  hostNamePolicy({
    beyondLoopback: true,
    allowed: allowed.length === 0 ? [] : v.parse(allowedHostList, allowed.join(",")),
    machine,
  }).answersTo;

describe("a listener bound beyond loopback", () => {
  const answersTo = beyond();

  test("answers to IP addresses, with and without a port (a rebinding needs a name)", () => {
    for (const host of [
      "192.0.2.7",
      "192.0.2.7:8080",
      "10.0.0.5:80",
      "[2001:db8::1]",
      "[2001:db8::1]:8080",
      "[::ffff:192.0.2.7]:1",
    ])
      expect({ host, ok: answersTo(host) }).toEqual({ host, ok: true });
  });

  test("answers to loopback names and this machine's names, whatever their case or trailing dot", () => {
    for (const host of ["localhost", "localhost:8080", "LocalHost.:8080", "app.localhost", "127.0.0.1:9", "[::1]:9"])
      expect({ host, ok: answersTo(host) }).toEqual({ host, ok: true });
    for (const host of ["buildbox", "BuildBox:8080", "buildbox.local", "buildbox.local.:8080"])
      expect({ host, ok: answersTo(host) }).toEqual({ host, ok: true });
  });

  test("refuses a rebound name, and names that only look like an address or a local name", () => {
    for (const host of [
      "rebind.attacker.example",
      "rebind.attacker.example:8080",
      "192.0.2.7.nip.io",
      "127.0.0.1.attacker.example",
      "localhost.attacker.example",
      "buildbox.attacker.example",
      "other.local",
      "",
      "[::1",
    ])
      expect({ host, ok: answersTo(host) }).toEqual({ host, ok: false });
  });

  test("answers to the names --allowed-hosts gives; a leading dot takes the domain and its subdomains", () => {
    const allows = beyond(["mcp.internal", ".corp.example"]);
    for (const host of ["mcp.internal", "MCP.Internal.:8080", "corp.example", "a.corp.example:443", "a.b.corp.example"])
      expect({ host, ok: allows(host) }).toEqual({ host, ok: true });
    for (const host of ["x.mcp.internal", "evilcorp.example", "corp.example.attacker.example", "mcp.internal.example"])
      expect({ host, ok: allows(host) }).toEqual({ host, ok: false });
  });
});

describe("a loopback listener", () => {
  const policy = hostNamePolicy({ beyondLoopback: false, allowed: [".example.com"], machine: ["buildbox"] });

  test("answers to loopback names and allowed names only: no addresses, not this machine's name", () => {
    expect(policy.answersTo("localhost:8080")).toBe(true);
    expect(policy.answersTo("www.example.com")).toBe(true);
    expect(policy.answersTo("192.0.2.7:8080")).toBe(false);
    expect(policy.answersTo("buildbox")).toBe(false);
    expect(policy.userAllowed("localhost")).toBe(false);
  });
});

describe("this machine's names", () => {
  test("the host name, its first label and that label's multicast-DNS name", () => {
    expect(machineNames("BuildBox.corp.example")).toEqual(["buildbox.corp.example", "buildbox", "buildbox.local"]);
    expect(machineNames("buildbox")).toEqual(["buildbox", "buildbox.local"]);
    expect(machineNames("")).toEqual([]);
  });
});

describe("--allowed-hosts values", () => {
  const parse = (text: string) => v.safeParse(allowedHostList, text);

  test("are names, normalized; a leading dot is kept", () => {
    expect(v.parse(allowedHostList, "MCP.Internal., .Corp.Example, [2001:db8::1], 192.0.2.7")).toEqual([
      "mcp.internal",
      ".corp.example",
      "2001:db8::1",
      "192.0.2.7",
    ]);
  });

  test("nothing turns the check off, and ports, URLs and patterns are refused with the reason", () => {
    const cases: [string, string][] = [
      ["*", "any name"],
      ["all", "any name"],
      ["a.example,ALL", "any name"],
      ["*.example.com", ".example.com"],
      ["example.com:8080", "without a port"],
      ["https://example.com", "not a URL"],
      ["exa mple.com", "not a host name"],
      [".192.0.2.7", "no subdomains"],
      ["", "at least one"],
    ];
    for (const [text, reason] of cases) {
      const result = parse(text);
      expect({ text, success: result.success }).toEqual({ text, success: false });
      expect(result.issues?.[0]?.message).toContain(reason);
    }
  });
});

describe("a trusted X-Forwarded-Host (the names an answer's URL may follow)", () => {
  test("beyond loopback, an address only if it is this machine's, in any spelling; names as for Host (review39)", () => {
    const names = listenerNames("0.0.0.0", ["mcp.internal"], ["192.0.2.2", "fd00::2"]);
    for (const host of [
      "192.0.2.2",
      "192.0.2.2:8443",
      "[fd00::2]",
      "[FD00:0:0::2]:443",
      "127.0.0.1:9",
      "[::1]",
      "mcp.internal",
    ])
      expect({ host, ok: names.answersTo(host) }).toEqual({ host, ok: true });
    for (const host of ["203.0.113.7", "203.0.113.7:8443", "[2001:db8::7]", "[fd00::3]", "rebind.attacker.example"])
      expect({ host, ok: names.answersTo(host) }).toEqual({ host, ok: false });
  });

  test("this machine's addresses include loopback and are in one spelling", () => {
    const addresses = machineAddresses();
    expect(addresses).toContain("127.0.0.1");
    expect(addresses.every((address) => address === address.toLowerCase() && !address.includes("%"))).toBe(true);
  });
});
