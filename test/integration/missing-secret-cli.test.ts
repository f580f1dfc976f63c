/**
 * A secret that is not stored is reported in one line naming the option (or the file, webhook and
 * field) that asks for it, in the terminal of `run`, before anything is recorded or started.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv, expectOneLineError, runCli } from "../support/cli-home.ts";
import { CLI_ENTRY } from "../support/processes.ts";

// Real processes: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

let home: string;
const mcpmgr = (...args: string[]) =>
  runCli({ ...cliEnv(home), MCPMGR_SECRETS_PROVIDER: "environment", MCPMGR_SECRET_PRESENT: "present-value" }, args);
const REMOTE = "http://127.0.0.1:9/mcp";

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-missing-secret-"));
});

afterAll(() => {
  rmSync(home, { recursive: true, force: true });
});

test("--remote-forward-headers-secret: named in the error, found missing before the supervisor starts", () => {
  const line = expectOneLineError(
    mcpmgr("run", REMOTE, "--name", "ms1", "--remote-forward-headers-secret", "X-Key=nokey"),
    1,
  );
  expect(line).toContain("--remote-forward-headers-secret X-Key=nokey: secret 'nokey' not found");
  expect(line).not.toContain("failed to start");
  expect(mcpmgr("list", "--format", "json").stdout).not.toContain("ms1");
});

test("a webhook's hmac_secret_ref: the file, the webhook and the field are named", () => {
  const file = join(home, "wh.yaml");
  writeFileSync(
    file,
    "validating:\n  - name: policy-check\n    url: https://hooks.example.com/validate\n    hmac_secret_ref: hook-key\n",
  );
  const line = expectOneLineError(mcpmgr("run", REMOTE, "--name", "ms2", "--webhook-config", file), 1);
  expect(line).toContain(
    `--webhook-config ${file}: webhook policy-check: hmac_secret_ref: secret 'hook-key' not found`,
  );
});

test("--secret: the option with its target is named", () => {
  // After the grant summary (info lines): the error is its own last line.
  const result = mcpmgr(
    "run",
    "npx://./test/fixtures/sandbox-probe",
    "--name",
    "ms3",
    "--secret",
    "nokey,target=API_KEY",
  );
  expect(result.code).toBe(1);
  const last = result.stderr.trim().split("\n").at(-1);
  expect(last).toStartWith("[error] --secret nokey,target=API_KEY: secret 'nokey' not found (hint: ");
});

test("gateway --tool-search-embeddings-key-secret: the option is named", () => {
  const line = expectOneLineError(
    mcpmgr(
      "gateway",
      "default",
      "--tool-search",
      "--tool-search-embeddings",
      "http://127.0.0.1:9/v1",
      "--tool-search-embeddings-model",
      "m",
      "--tool-search-embeddings-key-secret",
      "nokey",
    ),
    1,
  );
  expect(line).toContain("--tool-search-embeddings-key-secret: secret 'nokey' not found");
});

test("a mistyped name gets the nearest stored one ahead of 'store it', in run, secret get and secret delete", () => {
  // The encrypted file: told only to store the name as typed, a user would keep the value twice.
  const env = { ...cliEnv(home), MCPMGR_SECRETS_PASSWORD: "typo-test-password" };
  const set = Bun.spawnSync([process.execPath, CLI_ENTRY, "secret", "set", "api-token"], {
    env,
    stdin: Buffer.from("value\n"),
  });
  expect(set.exitCode).toBe(0);
  const run = expectOneLineError(
    runCli(env, ["run", REMOTE, "--name", "ms5", "--remote-forward-headers-secret", "X-Key=api-tokn"]),
    1,
  );
  expect(run).toContain(
    "secret 'api-tokn' not found (hint: did you mean api-token? Otherwise store it with 'mcpmgr secret set api-tokn'",
  );
  expect(expectOneLineError(runCli(env, ["secret", "get", "api-tokn"]), 1)).toContain(
    "(hint: did you mean api-token? Otherwise store it with",
  );
  expect(expectOneLineError(runCli(env, ["secret", "delete", "api-tokn"]), 1)).toBe(
    "[error] secret 'api-tokn' not found (hint: did you mean api-token? 'mcpmgr secret list' shows the stored names)",
  );
  // Nothing near: the hint as it was.
  expect(expectOneLineError(runCli(env, ["secret", "get", "unrelated"]), 1)).toContain(
    "(hint: store it with 'mcpmgr secret set unrelated'",
  );
});
