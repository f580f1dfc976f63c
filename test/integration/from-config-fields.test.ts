/**
 * `run --from-config` of an exported file whose fields beside `runOptions` were edited: the run options
 * are what runs, so a hand-edited "env", "secrets", "host", "volumes" or "labels" is refused in one line
 * naming it, and an edited "proxyPort" is named in a warning; the documented way to run a copy (the
 * --proxy-port in runOptions edited alone) still works.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv, expectOneLineError, runCli, runCliOk } from "../support/cli-home.ts";
import { freePort } from "../support/processes.ts";

// Real workloads started and removed through the CLI.
setDefaultTimeout(60_000);

const PROBE = "npx://./test/fixtures/sandbox-probe";
let home: string;
let env: Record<string, string>;
let file: string;
let exported: Record<string, unknown> & { runOptions: string[]; proxyPort: number };

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-from-config-fields-"));
  env = cliEnv(home);
  file = join(home, "handed.json");
  runCliOk(env, ["run", PROBE, "--name", "handed", "-e", "PROBE_MODE=exported"]);
  runCliOk(env, ["export", "handed", file]);
  runCliOk(env, ["rm", "handed"]);
  exported = JSON.parse(readFileSync(file, "utf8"));
});

afterAll(() => {
  runCli(env, ["rm", "handed"]);
  rmSync(home, { recursive: true, force: true });
});

const names = () =>
  (JSON.parse(runCliOk(env, ["list", "--format", "json"]).stdout) as { name: string }[]).map((r) => r.name);

test.each([
  ["env", { PROBE_MODE: "exported", HAND: "edited" }],
  ["secrets", [{ name: "token", target: "TOKEN" }]],
  ["host", "0.0.0.0"],
  ["volumes", [{ hostPath: "/tmp", containerPath: "/data", readOnly: true }]],
  ["labels", { team: "a" }],
])('an edited "%s" is refused in one line saying that runOptions is what runs', (field, value) => {
  writeFileSync(file, JSON.stringify({ ...exported, [field]: value }));
  const line = expectOneLineError(runCli(env, ["run", "--from-config", file]), 2);
  expect(line).toContain(`its "${field}" is`);
  expect(line).toContain("runOptions is what runs");
  expect(names()).not.toContain("handed");
});

test('an edited "proxyPort" is named in a warning; the runOptions\' port is the one taken', () => {
  const port = exported.proxyPort;
  writeFileSync(file, JSON.stringify({ ...exported, proxyPort: port === 45999 ? 45998 : 45999 }));
  const run = runCliOk(env, ["run", "--from-config", file]);
  expect(run.stdout.trim()).toBe(`http://127.0.0.1:${port}/mcp`);
  const warnings = run.stderr.split("\n").filter((line) => line.includes('"proxyPort"'));
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toContain(`--proxy-port in its runOptions, ${port}, is the port it runs on`);
  runCliOk(env, ["rm", "handed"]);
});

test("the documented copy, --proxy-port edited in runOptions alone, runs on that port", async () => {
  const port = await freePort();
  const runOptions = [...exported.runOptions];
  runOptions[runOptions.indexOf("--proxy-port") + 1] = String(port);
  writeFileSync(file, JSON.stringify({ ...exported, runOptions }));
  const run = runCliOk(env, ["run", "--from-config", file]);
  expect(run.stdout.trim()).toBe(`http://127.0.0.1:${port}/mcp`);
  runCliOk(env, ["rm", "handed"]);
});

test("a file saved by Windows Notepad (byte order mark, CRLF line ends) runs as the export it is", () => {
  const text = JSON.stringify(exported, null, 2).replaceAll("\n", "\r\n");
  writeFileSync(file, `\uFEFF${text}\r\n`);
  const run = runCliOk(env, ["run", "--from-config", file]);
  expect(run.stdout.trim()).toBe(`http://127.0.0.1:${exported.proxyPort}/mcp`);
  expect(names()).toContain("handed");
  // It is still an earlier export of that workload: export replaces it.
  runCliOk(env, ["export", "handed", file]);
  expect(readFileSync(file, "utf8").charCodeAt(0)).toBe("{".charCodeAt(0));
  runCliOk(env, ["rm", "handed"]);
});

test("a field taken out of the file is named as missing, in words", () => {
  const { proxyPort: _gone, ...withoutPort } = exported;
  writeFileSync(file, JSON.stringify(withoutPort));
  const line = expectOneLineError(runCli(env, ["run", "--from-config", file]), 1);
  expect(line).toContain('is not a valid mcpmgr file: the field "proxyPort" is missing');
  expect(line).not.toContain("Invalid key");
});
