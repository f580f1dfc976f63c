/**
 * `--secret NAME,target=VAR` names the variable the server reads the secret from. PATH, HOME, TMPDIR and LD_*
 * are refused on a new `run`, and so are MCP_TRANSPORT and MCP_PORT for an HTTP server (mcpmgr sets them over
 * the secret). Earlier versions accepted all of them: a workload they recorded still starts, as it did, with
 * a warning in its log. A stdio server is told neither MCP_ variable, so there a secret may set them.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv, expectOneLineError, runCli, runCliOk } from "../support/cli-home.ts";
import { CLI_ENTRY } from "../support/processes.ts";

setDefaultTimeout(60_000);

const PROBE = "npx://./test/fixtures/sandbox-probe";
const HTTP = [
  "npx://./test/fixtures/redirecting-http",
  "--transport",
  "streamable-http",
  "--permission-profile",
  "network",
];
const made = ["st-port", "st-home", "st-stdio"];
let home: string;
let env: Record<string, string>;

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-secret-target-"));
  env = { ...cliEnv(home), MCPMGR_SECRETS_PASSWORD: "secret-target-test" };
  const set = Bun.spawnSync([process.execPath, CLI_ENTRY, "secret", "set", "tok"], {
    env,
    stdin: Buffer.from("s3cr3t-value\n"),
  });
  expect(set.exitCode).toBe(0);
});

afterAll(() => {
  for (const name of made) runCli(env, ["rm", name]);
  rmSync(home, { recursive: true, force: true });
});

const statusOf = (name: string) =>
  (JSON.parse(runCliOk(env, ["list", "--format", "json"]).stdout) as { name: string; status: string }[]).find(
    (row) => row.name === name,
  )?.status;

const proxyLog = (name: string) => readFileSync(join(home, ".mcpmgr", "state", "logs", `${name}.proxy.log`), "utf8");

/** Makes `name` with a harmless target, then edits its record to `target`, as an earlier version recorded it. */
function recordWithTarget(name: string, args: readonly string[], target: string, after: readonly string[] = []): void {
  runCliOk(env, ["run", ...args, "--name", name, "--secret", "tok,target=API_TOKEN", ...after]);
  runCliOk(env, ["stop", name]);
  const file = join(home, ".mcpmgr", "state", "workloads", name, "workload.json");
  const record = JSON.parse(readFileSync(file, "utf8")) as { runOptions: string[] };
  const runOptions = record.runOptions.map((word) => (word === "tok,target=API_TOKEN" ? `tok,target=${target}` : word));
  expect(runOptions).toContain(`tok,target=${target}`);
  writeFileSync(file, JSON.stringify({ ...record, runOptions }));
}

test("a record an earlier version made with --secret …,target=MCP_PORT on an HTTP server still starts, warned about", () => {
  recordWithTarget("st-port", HTTP, "MCP_PORT", ["--", "browsers-elsewhere"]);
  runCliOk(env, ["start", "st-port"]);
  runCliOk(env, ["stop", "st-port"]);
  runCliOk(env, ["start", "--all"]);
  expect(statusOf("st-port")).toBe("running");
  const log = proxyLog("st-port");
  expect(log).toContain("--secret tok,target=MCP_PORT would be replaced: mcpmgr sets MCP_PORT");
  expect(log).toContain("ignored, as the version that recorded this workload did");
  runCliOk(env, ["stop", "st-port"]);
  // A new run is still refused, by the same words.
  const line = expectOneLineError(
    runCli(env, ["run", ...HTTP, "--name", "st-fresh", "--secret", "tok,target=MCP_TRANSPORT"]),
    2,
  );
  expect(line).toContain("--secret tok,target=MCP_TRANSPORT would be replaced: mcpmgr sets MCP_TRANSPORT");
});

test("a record an earlier version made with --secret …,target=HOME still starts, the secret set as before, warned about", () => {
  recordWithTarget("st-home", [PROBE], "HOME");
  const started = runCliOk(env, ["start", "st-home"]);
  // In start's terminal too, once (the supervisor's line relayed to stderr).
  expect(started.stderr.split("--secret tok,target=HOME: HOME is the server's own folder").length - 1).toBe(1);
  expect(statusOf("st-home")).toBe("running");
  const log = proxyLog("st-home");
  expect(log).toContain("--secret tok,target=HOME: HOME is the server's own folder");
  expect(log).toContain("the secret set as HOME all the same, as the version that recorded this workload did");
  runCliOk(env, ["stop", "st-home"]);
  for (const target of ["HOME", "PATH", "TMPDIR", "LD_PRELOAD"]) {
    const line = expectOneLineError(
      runCli(env, ["run", PROBE, "--name", "st-fresh", "--secret", `tok,target=${target}`]),
      2,
    );
    expect(line).toContain(`--secret tok,target=${target}: ${target} is`);
    expect(line).toContain("hint: write it as --secret NAME,target=VAR");
  }
});

test("a stdio server is told no MCP_PORT or MCP_TRANSPORT: a secret may set them there", () => {
  runCliOk(env, ["run", PROBE, "--name", "st-stdio", "--secret", "tok,target=MCP_PORT"]);
  expect(statusOf("st-stdio")).toBe("running");
  runCliOk(env, ["rm", "st-stdio"]);
  runCliOk(env, ["run", PROBE, "--name", "st-stdio", "--secret", "tok,target=MCP_TRANSPORT"]);
  expect(statusOf("st-stdio")).toBe("running");
});
