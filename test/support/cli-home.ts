/**
 * Running the mcpmgr CLI as a user would, in a temporary HOME: the environment of the test
 * process without its own mcpmgr, XDG and AI-client variables (so nothing of the machine's
 * real configuration leaks in), with HOME and MCPMGR_HOME pointing at the test's folders.
 */
import { expect } from "bun:test";
import { join } from "node:path";
import { CLI_ENTRY, REPO_ROOT } from "./processes.ts";

/** AI-client variables that would move a client's configuration out of HOME. */
const CLIENT_HOME_VARIABLES = [
  "CODEX_HOME",
  "CLAUDE_CONFIG_DIR",
  "CONTINUE_GLOBAL_DIR",
  "CLINE_DIR",
  "CLINE_DATA_DIR",
  "CLINE_MCP_SETTINGS_PATH",
];

export function cliEnv(home: string, mcpmgrHome = join(home, ".mcpmgr")): Record<string, string> {
  const clean: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined || key.startsWith("MCPMGR_") || key.startsWith("XDG_") || key === "FORCE_COLOR") continue;
    if (CLIENT_HOME_VARIABLES.includes(key)) continue;
    clean[key] = value;
  }
  return { ...clean, HOME: home, MCPMGR_HOME: mcpmgrHome, MCPMGR_RUNTIME: "process", NO_COLOR: "1" };
}

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** One mcpmgr command to its end (stdin closed). */
export function runCli(env: Record<string, string>, args: readonly string[]): CliResult {
  const result = Bun.spawnSync([process.execPath, CLI_ENTRY, ...args], {
    cwd: REPO_ROOT,
    env,
    stdin: "ignore",
    timeout: 120_000,
  });
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

/** The same, throwing with its stderr when it fails. */
export function runCliOk(env: Record<string, string>, args: readonly string[]): CliResult {
  const result = runCli(env, args);
  if (result.code !== 0) throw new Error(`mcpmgr ${args.join(" ")} exited ${result.code}:\n${result.stderr}`);
  return result;
}

/** What a finished command gave, whichever runner made it (`code` here, `exitCode` from Bun.spawnSync). */
type Finished = { readonly stdout: string; readonly stderr: string } & (
  | { readonly code: number }
  | { readonly exitCode: number | null }
);

/**
 * A refusal as every command must give one: the exit code, nothing on stdout, one line on
 * stderr with a hint and no stack trace. Returns that line.
 */
export function expectOneLineError(result: Finished, exitCode: number): string {
  expect("code" in result ? result.code : result.exitCode).toBe(exitCode);
  expect(result.stdout).toBe("");
  expect(result.stderr).not.toContain("    at ");
  const lines = result.stderr.split("\n").filter((line) => line.trim() !== "");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toContain("hint");
  return lines[0] ?? "";
}
