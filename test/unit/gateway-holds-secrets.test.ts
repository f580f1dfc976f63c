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
