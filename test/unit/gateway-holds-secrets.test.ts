/**
 * Which members a gateway's audit cannot vouch for (gateway/membership.ts holdsSecrets): those given
 * the secret values their own audit redacts. Its record says so: `--secret` references, and for a
 * remote the options that make mcpmgr send secrets. Options after `--` are the server's own.
 */
import { expect, test } from "bun:test";
import { holdsSecrets } from "../../src/gateway/membership.ts";
import type { WorkloadRecord } from "../../src/state/workload-record.ts";

const record = (runOptions: string[], secrets: { name: string; target: string }[] = []) =>
  ({ secrets, runOptions }) as unknown as WorkloadRecord;

test("a member holds secrets when given --secret, secret headers, a remote login or token exchange", () => {
  expect(holdsSecrets(record([], [{ name: "key", target: "API_KEY" }]))).toBe(true);
  for (const options of [
    ["--remote-forward-headers-secret", "X-Api-Key=key"],
    ["--remote-forward-headers-secret=X-Api-Key=key"],
    ["--remote-auth", "--remote-auth-issuer", "https://issuer.example"],
    ["--remote-auth-bearer-token-file", "/run/token"],
    ["--token-exchange-url", "https://sts.example/token"],
  ]) {
    expect({ options, holds: holdsSecrets(record(options)) }).toEqual({ options, holds: true });
  }
  // Plain headers and variables are recorded in clear anyway; the server's own arguments are not mcpmgr's.
  expect(holdsSecrets(record(["--remote-forward-headers", "X-Tenant=acme", "-e", "LIMIT=10"]))).toBe(false);
  expect(holdsSecrets(record(["--name", "x", "--", "--remote-auth"]))).toBe(false);
});

test("the gateway's audit data stays withheld for an hour after a member that held secrets left (its answers may still be quoted)", async () => {
  const { secretHolders, WITHHELD_AFTER_LEAVING_MS } = await import("../../src/gateway/membership.ts");
  let now = 0;
  const holder = { name: "holder", url: "http://127.0.0.1:1/mcp", holdsSecrets: true };
  const plain = { name: "plain", url: "http://127.0.0.1:2/mcp" };
  const holders = secretHolders(() => now);
  holders.see([holder, plain]);
  expect(holders.withhold()).toBe("holder holds secrets the gateway cannot redact; see its own audit");
  // `mcpmgr stop holder`: an answer of its may still be on its way, a client's next request may quote one.
  holders.see([plain]);
  now = WITHHELD_AFTER_LEAVING_MS - 1;
  expect(holders.withhold()).toBe("holder (left) holds secrets the gateway cannot redact; see its own audit");
  now = WITHHELD_AFTER_LEAVING_MS;
  expect(holders.withhold()).toBeUndefined();
  // Back in the group: withheld again, with no "(left)".
  holders.see([holder]);
  expect(holders.withhold()).toBe("holder holds secrets the gateway cannot redact; see its own audit");
  // A group that never had one records its data.
  const none = secretHolders();
  none.see([plain]);
  expect(none.withhold()).toBeUndefined();
});
