/**
 * MCP_TRANSPORT and MCP_PORT are how mcpmgr tells an HTTP server where to listen, set over the user's
 * variables: one given with -e, in --env-file or --env-file-dir, or in an export's run options was
 * replaced without a word. A value that differs from mcpmgr's is refused in one line, naming the option
 * that sets it; the same value, and any value for a stdio server (which mcpmgr tells nothing), is kept.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv, expectOneLineError, runCli, runCliOk } from "../support/cli-home.ts";
import { freePort } from "../support/processes.ts";

setDefaultTimeout(60_000);

const PROBE = "npx://./test/fixtures/sandbox-probe";
const HTTP = [PROBE, "--transport", "streamable-http"];
let home: string;
let env: Record<string, string>;

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-listen-env-"));
  env = cliEnv(home);
});

afterAll(() => {
  runCli(env, ["rm", "listens"]);
  runCli(env, ["rm", "recorded-port"]);
  rmSync(home, { recursive: true, force: true });
});

const names = () =>
  (JSON.parse(runCliOk(env, ["list", "--format", "json"]).stdout) as { name: string }[]).map((r) => r.name);

test("-e MCP_PORT for an HTTP server is refused, pointing to --target-port", () => {
  const line = expectOneLineError(runCli(env, ["run", ...HTTP, "--name", "listens", "-e", "MCP_PORT=9000"]), 2);
  expect(line).toContain("-e MCP_PORT=9000 would be replaced");
  expect(line).toContain("give --target-port 9000");
  expect(names()).not.toContain("listens");
});

test("-e MCP_TRANSPORT that differs from the server's transport is refused, pointing to --transport", () => {
  const line = expectOneLineError(runCli(env, ["run", ...HTTP, "--name", "listens", "-e", "MCP_TRANSPORT=sse"]), 2);
  expect(line).toContain("-e MCP_TRANSPORT=sse would be replaced");
  expect(line).toContain("give --transport sse");
});

test("the same through --env-file and --env-file-dir names the file's option", () => {
  const file = join(home, "listen.env");
  writeFileSync(file, "API_KEY=x\nMCP_PORT=9001\n");
  const line = expectOneLineError(runCli(env, ["run", ...HTTP, "--env-file", file]), 2);
  expect(line).toContain("MCP_PORT=9001 in --env-file would be replaced");
  const dir = join(home, "envs");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "listen"), "MCP_TRANSPORT=sse\n");
  const fromDir = expectOneLineError(runCli(env, ["run", ...HTTP, "--env-file-dir", dir]), 2);
  expect(fromDir).toContain("MCP_TRANSPORT=sse in --env-file-dir would be replaced");
});

test("an export's run options made to serve HTTP with -e MCP_PORT in them are refused at run --from-config", () => {
  // A stdio server is told nothing: its MCP_PORT is its own, and kept.
  runCliOk(env, ["run", PROBE, "--name", "listens", "-e", "MCP_PORT=9002"]);
  const file = join(home, "listens.json");
  runCliOk(env, ["export", "listens", file]);
  runCliOk(env, ["rm", "listens"]);
  const exported = JSON.parse(readFileSync(file, "utf8")) as { runOptions: string[] };
  // Before the final "--": what follows it goes to the server.
  const runOptions = [...exported.runOptions];
  runOptions.splice(runOptions.lastIndexOf("--"), 0, "--transport", "streamable-http");
  writeFileSync(file, JSON.stringify({ ...exported, runOptions }));
  const line = expectOneLineError(runCli(env, ["run", "--from-config", file]), 2);
  expect(line).toContain("-e MCP_PORT=9002 would be replaced");
  expect(names()).not.toContain("listens");
});

test("a record an earlier version made with -e MCP_PORT still starts (start, start --all), warned about in its log", async () => {
  // Earlier versions accepted -e MCP_PORT=9000 and told the server mcpmgr's port instead: such a workload
  // started at every boot. Made here with the same value (accepted), then the record given 9000 and no
  // --target-port, as that version recorded it. It must not fail to start after the upgrade.
  const port = await freePort();
  const http = ["npx://./test/fixtures/redirecting-http", "--transport", "streamable-http"];
  const args = [...http, "--permission-profile", "network", "--name", "recorded-port"];
  runCliOk(env, ["run", ...args, "--target-port", String(port), "-e", `MCP_PORT=${port}`, "--", "browsers-elsewhere"]);
  runCliOk(env, ["stop", "recorded-port"]);
  const file = join(home, ".mcpmgr", "state", "workloads", "recorded-port", "workload.json");
  const record = JSON.parse(readFileSync(file, "utf8")) as { runOptions: string[] };
  const runOptions = record.runOptions.map((word) => (word === `MCP_PORT=${port}` ? "MCP_PORT=9000" : word));
  runOptions.splice(runOptions.indexOf("--target-port"), 2);
  writeFileSync(file, JSON.stringify({ ...record, runOptions }));

  // Said once in the terminal of each start (stderr, the supervisor's line relayed), stdout the URL alone.
  const warning = "-e MCP_PORT=9000 would be replaced";
  const once = (text: string) => text.split(warning).length - 1;
  const started = runCliOk(env, ["start", "recorded-port"]);
  expect({ stderr: once(started.stderr), stdout: started.stdout.trim().split("\n").length }).toEqual({
    stderr: 1,
    stdout: 1,
  });
  expect(started.stderr).toContain("[warn] recorded-port: ");
  expect(started.stdout).not.toContain(warning);
  const restarted = runCliOk(env, ["restart", "recorded-port"]);
  expect(once(restarted.stderr)).toBe(1);
  runCliOk(env, ["stop", "recorded-port"]);
  const all = runCliOk(env, ["start", "--all"]);
  expect(once(all.stderr)).toBe(1);
  const listed = JSON.parse(runCliOk(env, ["list", "--format", "json"]).stdout) as { name: string; status: string }[];
  expect(listed.find((row) => row.name === "recorded-port")?.status).toBe("running");
  const log = readFileSync(join(home, ".mcpmgr", "state", "logs", "recorded-port.proxy.log"), "utf8");
  expect(log).toContain("-e MCP_PORT=9000 would be replaced");
  expect(log).toContain("ignored, as the version that recorded this workload did");
  // A new run with the same options is still refused.
  const line = expectOneLineError(runCli(env, ["run", ...http, "--name", "fresh", "-e", "MCP_PORT=9000"]), 2);
  expect(line).toContain("-e MCP_PORT=9000 would be replaced");
  runCliOk(env, ["stop", "recorded-port"]);
});
