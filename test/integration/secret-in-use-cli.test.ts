/**
 * `secret delete` of a secret that recorded workloads use (walk 5): refused, naming each workload
 * and the option that names the secret, unless --force, which deletes it and says who still uses
 * it. Real background workloads (the sandbox probe with --secret, a remote with a header secret
 * in front of the conformance server) in a temporary MCPMGR_HOME with MCPMGR_SECRETS_PASSWORD.
 * `secret list` names the same users after each secret.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv, expectOneLineError, runCli, runCliOk } from "../support/cli-home.ts";
import { startConformanceServer } from "../support/conformance.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";

// Real processes: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

const PROBE = "npx://./test/fixtures/sandbox-probe";
let home: string;
let env: Record<string, string>;
let fixture: Awaited<ReturnType<typeof startConformanceServer>>;
const mcpmgr = (...args: string[]) => runCli(env, args);

function setSecret(name: string, value: string): void {
  const result = Bun.spawnSync([process.execPath, CLI_ENTRY, "secret", "set", name], {
    cwd: REPO_ROOT,
    env,
    stdin: Buffer.from(value),
  });
  expect(result.exitCode).toBe(0);
}

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-secret-in-use-"));
  env = { ...cliEnv(home), MCPMGR_SECRETS_PASSWORD: "secret-in-use-password" };
  fixture = await startConformanceServer();
});

afterAll(async () => {
  for (const name of ["probe1", "remote2", "remote3", "remote4", "remote5", "remote6"]) mcpmgr("rm", name);
  await fixture.stop();
  rmSync(home, { recursive: true, force: true });
});

test("a used secret is kept and its users named; --force deletes it and names them; an unused one just goes", () => {
  setSecret("probe-key", "probe-value");
  setSecret("unused", "value");
  runCliOk(env, ["run", PROBE, "--name", "probe1", "--secret", "probe-key,target=PROBE_KEY"]);
  runCliOk(env, ["run", fixture.url, "--name", "remote2", "--remote-forward-headers-secret", "X-Probe=probe-key"]);

  const line = expectOneLineError(mcpmgr("secret", "delete", "probe-key"), 1);
  expect(line).toContain(
    "secret 'probe-key' is used by probe1 (--secret probe-key,target=PROBE_KEY), remote2 (--remote-forward-headers-secret X-Probe=probe-key)",
  );
  expect(line).toContain("mcpmgr secret delete probe-key --force");
  expect(JSON.parse(mcpmgr("secret", "list", "--format", "json").stdout)).toContain("probe-key");
  // secret list says the same of each secret, before anyone tries to delete it; an unused one is its name alone.
  expect(runCliOk(env, ["secret", "list"]).stdout.split("\n")).toEqual([
    "probe-key  used by probe1 (--secret probe-key,target=PROBE_KEY), remote2 (--remote-forward-headers-secret X-Probe=probe-key)",
    "unused",
    "",
  ]);
  // The JSON form stays the array of names scripts read.
  expect(JSON.parse(mcpmgr("secret", "list", "--format", "json").stdout)).toEqual(["probe-key", "unused"]);
  // Still there: the workload restarts with it.
  runCliOk(env, ["restart", "probe1"]);

  const unused = runCliOk(env, ["secret", "delete", "unused"]);
  expect(unused.stderr).not.toContain("used by");

  const forced = runCliOk(env, ["secret", "delete", "probe-key", "--force"]);
  expect(forced.stderr).toContain("secret 'probe-key' deleted");
  expect(forced.stderr).toContain(
    "still used by probe1 (--secret probe-key,target=PROBE_KEY), remote2 (--remote-forward-headers-secret X-Probe=probe-key): their next start or restart fails until 'mcpmgr secret set probe-key'",
  );
  expect(JSON.parse(mcpmgr("secret", "list", "--format", "json").stdout)).toEqual([]);
  // What the warning says: the next restart fails.
  const restart = mcpmgr("restart", "probe1");
  expect(restart.code).toBe(1);
  expect(restart.stderr).toContain("secret 'probe-key' not found");
  // Gone already: not found, whoever names it.
  expect(expectOneLineError(mcpmgr("secret", "delete", "probe-key"), 1)).toContain("secret 'probe-key' not found");
});

test("a new value for a secret running workloads use: set names them and the restart that gives it to them", () => {
  const set = (value: string) =>
    Bun.spawnSync([process.execPath, CLI_ENTRY, "secret", "set", "rotated"], {
      cwd: REPO_ROOT,
      env,
      stdin: Buffer.from(value),
    });
  expect(set("first").exitCode).toBe(0);
  for (const name of ["remote3", "remote4", "remote5"])
    runCliOk(env, ["run", fixture.url, "--name", name, "--remote-forward-headers-secret", "X-Probe=rotated"]);
  runCliOk(env, ["stop", "remote4"]);
  const rotated = set("second");
  expect(rotated.exitCode).toBe(0);
  // Only the running ones keep the old value, named with the one restart that gives them the new one;
  // the stopped one looks it up when it starts.
  expect(rotated.stderr.toString()).toContain(
    "remote3, remote5 run with the old value until restarted: 'mcpmgr restart remote3 remote5'",
  );
  expect(rotated.stderr.toString()).not.toContain("remote4");
  runCliOk(env, ["stop", "remote5"]);
  // One running user: the command names it alone.
  expect(set("third").stderr.toString()).toContain(
    "remote3 runs with the old value until restarted: 'mcpmgr restart remote3'",
  );
  // The same value again changes nothing for anyone.
  expect(set("third").stderr.toString()).not.toContain("restart");
});

test("with the environment provider, secret list names each variable's users (records name the secret as given)", () => {
  const fromEnvironment = { ...env, MCPMGR_SECRETS_PROVIDER: "environment", MCPMGR_SECRET_HEADER_KEY_2: "from-env" };
  runCliOk(fromEnvironment, [
    "run",
    fixture.url,
    "--name",
    "remote6",
    "--remote-forward-headers-secret",
    "X-Probe=header.key-2",
  ]);
  // The provider lists the variable's spelling; the workload was given the secret's own.
  expect(runCliOk(fromEnvironment, ["secret", "list"]).stdout.split("\n")).toContain(
    "HEADER_KEY_2  used by remote6 (--remote-forward-headers-secret X-Probe=header.key-2)",
  );
});

test("secret delete --help says what --force is for", () => {
  const help = runCliOk(env, ["secret", "delete", "--help"]);
  expect(help.stdout).toContain("--force");
  expect(help.stdout).toContain("refused while recorded workloads use it");
});

test("secret list --help says it names the workloads using each secret", () => {
  const help = runCliOk(env, ["secret", "list", "--help"]);
  expect(help.stdout).toContain("each with the recorded workloads that use it");
});
