/** The loopback rule (src/config/loopback.ts) for URL hosts and a listener's --host. */
import { expect, test } from "bun:test";
import { isLoopbackHostname } from "../../src/config/loopback.ts";

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
