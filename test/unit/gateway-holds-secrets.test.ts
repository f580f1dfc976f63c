/**
 * Which members a gateway's audit cannot vouch for (gateway/membership.ts holdsSecrets): those given
 * the secret values their own audit redacts. Its record says so: `--secret` references, and for a
 * remote the options that make mcpmgr send secrets, and the plain variables that are secrets by name or
 * value (`-e`, and the files it names, read as the member's start reads them). Options after `--` are
 * the server's own.
 */
import { expect, test } from "bun:test";
import { holdsSecrets } from "../../src/gateway/membership.ts";
import type { WorkloadRecord } from "../../src/state/workload-record.ts";

// As `run` records them: the source first (options that do not parse count as holding secrets).
const record = (runOptions: string[], secrets: { name: string; target: string }[] = [], workingDir?: string) =>
  ({
    secrets,
    runOptions: ["npx://server", ...runOptions],
    ...(workingDir ? { workingDir } : {}),
  }) as unknown as WorkloadRecord;

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

test("a member holds secrets when a plain variable is one by its name or value: -e, --env-file, --env-file-dir", async () => {
  for (const options of [
    ["-e", "OPENAI_API_KEY=key-1234"],
    ["--env=GITHUB_TOKEN=abcd1234"],
    ["-e", "LIMIT=10", "--env", "DB_PASSWORD=hunter22"],
    ["-e", "DATABASE_URL=postgres://app:pw-1234@db/app"],
    ["-e", "UPSTREAM=ghp_0123456789abcdef"],
    // A webhook URL: its path is the secret (by the host, or any URL under a webhook name).
    ["-e", "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/T0A1B2C3D/B0E4F5G6H/q8Yw3ZpLrT0vXk2N"],
    ["-e", "ALERTS=https://discord.com/api/webhooks/112233445566/Xy-Zz_0123456789abcdef"],
    ["-e", "DEPLOY_WEBHOOK_URL=https://ci.example.net/hooks/9f8e7d6c5b4a"],
  ]) {
    expect({ options, holds: holdsSecrets(record(options)) }).toEqual({ options, holds: true });
  }
  for (const options of [
    ["-e", "KEYBOARD=us"],
    ["-e", "MAX_TOKENS=4096", "-e", "AWS_ACCESS_KEY_ID=AKIDEXAMPLE"],
    ["-e", "AUTH_ENABLED=true", "-e", "USE_AUTH=false", "-e", "API_KEY="],
  ]) {
    expect({ options, holds: holdsSecrets(record(options)) }).toEqual({ options, holds: false });
  }
  // A record without options (by hand, or an early version's): its recorded `env` is what there is.
  const bare = (env: Record<string, string>) => ({ secrets: [], runOptions: [], env }) as unknown as WorkloadRecord;
  expect(holdsSecrets(bare({ GITHUB_TOKEN: "gh-token-value" }))).toBe(true);
  expect(holdsSecrets(bare({ LOG_LEVEL: "debug" }))).toBe(false);
  const { mkdtemp, mkdir, rm, writeFile } = await import("node:fs/promises");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const dir = await mkdtemp(join(tmpdir(), "holds-secrets-"));
  try {
    await writeFile(join(dir, "plain.env"), "LOG_LEVEL=debug\nREGION=eu-west-1\n");
    await writeFile(join(dir, "keys.env"), "LOG_LEVEL=debug\nANTHROPIC_API_KEY=an-api-key-value\n");
    await mkdir(join(dir, "env.d"));
    await writeFile(join(dir, "env.d", "10-plain"), "REGION=eu\n");
    await writeFile(join(dir, "env.d", "20-slack"), "SLACK_BOT_TOKEN=slack-token-value\n");
    expect(holdsSecrets(record(["--env-file", join(dir, "plain.env")]))).toBe(false);
    expect(holdsSecrets(record(["--env-file", join(dir, "keys.env")]))).toBe(true);
    // Relative to the folder `run` was given in, as the member's start reads it.
    expect(holdsSecrets(record(["--env-file", "keys.env"], [], dir))).toBe(true);
    expect(holdsSecrets(record(["--env-file-dir", join(dir, "env.d")]))).toBe(true);
    // A file gone since: the gateway cannot tell what the member read, so it counts.
    expect(holdsSecrets(record(["--env-file", join(dir, "gone.env")]))).toBe(true);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
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

test("a member holds secrets when a plain forwarded header is a credential (a record from before such headers were refused, started with it)", () => {
  for (const options of [
    ["--remote-forward-headers", "X-Api-Key=plain-key-1234"],
    ["--remote-forward-headers", "Authorization=Bearer abcd1234efgh"],
    ["--remote-forward-headers", "X-Tenant=acme", "--remote-forward-headers", "X-Upstream-Token=tok-5678"],
  ]) {
    expect({ options, holds: holdsSecrets(record(options)) }).toEqual({ options, holds: true });
  }
  expect(holdsSecrets(record(["--remote-forward-headers", "X-Tenant=acme"]))).toBe(false);
});
