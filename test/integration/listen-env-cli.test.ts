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
