/**
 * Helpers for running the official MCP conformance suite
 * (`@modelcontextprotocol/conformance`) against a server URL, and for starting
 * our conformance fixture server (test/fixtures/conformance-server.ts).
 *
 * The suite is a Node CLI that needs Node 22 APIs (fs.globSync, ...), which
 * the system Node may lack, so it is run under Bun (`process.execPath`).
 * Its console output is for humans; the numbers come from the checks.json
 * files it writes into the output directory, one per scenario:
 *   <outDir>/server-<scenario>-<ISO timestamp>/checks.json
 * each holding an array of checks `{ id, name, status, errorMessage?, ... }`
 * with status SUCCESS | FAILURE | WARNING | INFO.
 */
import { expect } from "bun:test";
import type { Subprocess } from "bun";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { CLI_ENTRY, spawnUntil } from "./processes.ts";

export const REPO_ROOT = resolve(import.meta.dir, "../..");
const CONFORMANCE_CLI = join(REPO_ROOT, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
/** The newest pre-release (0.2.0), which knows the 2026-07-28 requirement set. */
const CONFORMANCE_NEXT_CLI = join(REPO_ROOT, "node_modules/conformance-next/dist/index.js");
export const CONFORMANCE_FIXTURE = join(REPO_ROOT, "test/fixtures/conformance-server.ts");
/** The fixture that speaks 2026-07-28 itself (v2 SDK); CONFORMANCE_FIXTURE speaks only 2025-11-25. */
export const CONFORMANCE_FIXTURE_2026 = join(REPO_ROOT, "test/fixtures/conformance-server-2026.ts");

export interface ConformanceResult {
  /** Checks with status SUCCESS. */
  passed: number;
  /** Checks with status FAILURE, plus one if the suite timed out or crashed. */
  failed: number;
  /** Checks with status WARNING (SHOULD-level problems). INFO checks are ignored. */
  warnings: number;
  /** One line per failed check: `<scenario>/<check id>: <error message>`. */
  failures: string[];
  /** `<scenario>/<check id>` of every passed check, sorted: what to compare between runs. */
  passedChecks: string[];
}

interface Check {
  id: string;
  status: "SUCCESS" | "FAILURE" | "WARNING" | "INFO" | string;
  errorMessage?: string;
  description?: string;
}

/** `server-tools-list-2026-01-02T03-04-05-678Z` -> `tools-list` */
function scenarioFromDir(dir: string): string {
  return dir.replace(/^server-/, "").replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, "");
}

/** Last few lines of a process's output, for error messages. */
function tail(text: string, lines = 20): string {
  return text.trimEnd().split("\n").slice(-lines).join("\n");
}

/**
 * Runs the conformance suite's server scenarios against `url` (the active
 * suite, or just `opts.scenario`) and tallies the checks. Never hangs: the
 * suite is killed after `opts.timeoutMs` (default 240 s), which is reported
 * as a failure.
 */
export async function runConformance(
  url: string,
  opts: { timeoutMs?: number; scenario?: string; requirements?: "2026-07-28" } = {},
): Promise<ConformanceResult> {
  const timeoutMs = opts.timeoutMs ?? 240_000;
  const outDir = await mkdtemp(join(tmpdir(), "mcpmgr-conformance-"));
  try {
    const cli = opts.requirements ? CONFORMANCE_NEXT_CLI : CONFORMANCE_CLI;
    const args = [process.execPath, cli, "server", "--url", url, "-o", outDir];
    // A requirement set names its scenarios and the wire they run at (it replaces --scenario).
    if (opts.requirements) args.push("--requirements", opts.requirements);
    else if (opts.scenario) args.push("--scenario", opts.scenario);

    const proc = Bun.spawn(args, {
      cwd: REPO_ROOT,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, NO_COLOR: "1" },
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      proc.kill("SIGKILL");
    }, timeoutMs);
    // Drain both pipes while waiting, or a chatty suite could block on a full pipe.
    const [stdout, stderr, exitCode] = await Promise.all([
      new Response(proc.stdout).text(),
      new Response(proc.stderr).text(),
      proc.exited,
    ]).finally(() => clearTimeout(timer));

    const result: ConformanceResult = { passed: 0, failed: 0, warnings: 0, failures: [], passedChecks: [] };
    for await (const file of new Bun.Glob("*/checks.json").scan({ cwd: outDir })) {
      const scenario = scenarioFromDir(file.split("/")[0] ?? file);
      const checks = (await Bun.file(join(outDir, file)).json()) as Check[];
      for (const check of checks) {
        if (check.status === "SUCCESS") {
          result.passed++;
          result.passedChecks.push(`${scenario}/${check.id}`);
        } else if (check.status === "WARNING") result.warnings++;
        else if (check.status === "FAILURE") {
          result.failed++;
          result.failures.push(`${scenario}/${check.id}: ${check.errorMessage ?? check.description ?? "failed"}`);
        }
      }
    }

    // Problems that leave no FAILURE check behind must still fail the caller.
    if (timedOut) {
      result.failed++;
      result.failures.push(`conformance suite killed after ${timeoutMs} ms timeout\n${tail(stdout + stderr)}`);
    } else if (exitCode !== 0 && result.failed === 0) {
      // The CLI exits 1 when checks fail; any other non-zero exit is a crash.
      result.failed++;
      result.failures.push(`conformance suite exited with code ${exitCode}\n${tail(stdout + stderr)}`);
    }
    result.passedChecks.sort();
    return result;
  } finally {
    await rm(outDir, { recursive: true, force: true });
  }
}

/**
 * `mcpmgr run --foreground npx://DIR [args] -- stdio` of a local project whose bin starts `fixture`:
 * the fixture as a sandboxed stdio server behind the stdio bridge, with `args` as further run
 * options and `env` added to the environment. Resolves with the workload's URL once it prints
 * it; `stop` ends the workload and removes the project.
 */
export async function runStdioFixture(
  fixture: string,
  options: { readonly args?: readonly string[]; readonly env?: Record<string, string> } = {},
): Promise<{ url: string; stop(): Promise<void> }> {
  const packageDir = await mkdtemp(join(tmpdir(), "mcpmgr-conformance-pkg-"));
  const removeProject = () => rm(packageDir, { recursive: true, force: true });
  try {
    await writeFile(join(packageDir, "server.sh"), `#!/bin/sh\nexec ${process.execPath} ${fixture} "$@"\n`);
    await writeFile(
      join(packageDir, "package.json"),
      JSON.stringify({ name: "conformance-fixture", version: "1.0.0", bin: { "conformance-fixture": "server.sh" } }),
    );
    const run = await spawnUntil(
      [
        process.execPath,
        CLI_ENTRY,
        "run",
        "--foreground",
        `npx://${packageDir}`,
        "--permission-profile",
        "none",
        ...(options.args ?? []),
        "--",
        "stdio",
      ],
      /^(http:\/\/\S+)$/m,
      { timeoutMs: 30_000, ...(options.env ? { env: options.env } : {}) },
    );
    return {
      url: run.match[1] as string,
      stop: async () => {
        await run.stop();
        await removeProject();
      },
    };
  } catch (err) {
    await removeProject();
    throw err;
  }
}

export interface RunningFixture {
  /** e.g. http://127.0.0.1:41234/mcp */
  url: string;
  proc: Subprocess;
  /** Everything the fixture wrote to stderr so far (for diagnostics). */
  stderr(): string;
  stop(): Promise<void>;
}

/**
 * Starts test/fixtures/conformance-server.ts in HTTP mode on a free port and
 * resolves once it prints its `listening on <url>` line.
 */
export async function startConformanceServer(
  opts: { startupTimeoutMs?: number; fixture?: string; args?: readonly string[] } = {},
): Promise<RunningFixture> {
  const fixture = opts.fixture ?? CONFORMANCE_FIXTURE;
  const proc = Bun.spawn([process.execPath, fixture, "http", "--port", "0", ...(opts.args ?? [])], {
    cwd: REPO_ROOT,
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
  });

  let output = "";
  let onOutput = () => {};
  // Keep reading stderr for the fixture's whole life so it never blocks on a full pipe.
  void (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of proc.stderr) {
      output += decoder.decode(chunk, { stream: true });
      onOutput();
    }
    onOutput();
  })();

  const stop = async () => {
    proc.kill("SIGTERM");
    const exited = await Promise.race([proc.exited.then(() => true), Bun.sleep(3_000).then(() => false)]);
    if (!exited) proc.kill("SIGKILL");
    await proc.exited;
  };

  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`conformance fixture did not start in time:\n${output}`)),
      opts.startupTimeoutMs ?? 15_000,
    );
    onOutput = () => {
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolveUrl(match[1]);
      } else if (proc.exitCode !== null || proc.signalCode !== null) {
        clearTimeout(timer);
        reject(new Error(`conformance fixture exited before listening:\n${output}`));
      }
    };
    void proc.exited.then(() => onOutput());
  }).catch(async (error: unknown) => {
    await stop();
    throw error;
  });

  return { url, proc, stderr: () => output, stop };
}

/**
 * The run through mcpmgr (`via`) passed exactly the checks the fixture passes directly, failed
 * none, and the suite really ran (at least 40 checks).
 */
export function expectSameChecks(via: ConformanceResult, direct: ConformanceResult): void {
  expect(via.failures).toEqual(direct.failures);
  expect(via.passedChecks).toEqual(direct.passedChecks);
  expect(via.failed).toBe(0);
  expect(via.passed).toBeGreaterThanOrEqual(40);
}

/**
 * Scenarios the 2026-07-28 requirement set runs without scoring them that our fixtures do not
 * implement (the tasks extension, JSON Schema 2020-12 dialect checks). The two
 * header-validation scenarios the set also leaves unscored are held to passing: the bridge
 * checks Mcp-Method, Mcp-Name and Mcp-Param-* itself.
 */
export const NOT_SCORED_2026 = /^(tasks-|json-schema-2020-12\/)/;

/**
 * What no bridge can give a 2025-11-25 server: the suite asks for the input request key the
 * scenario's own server would choose ("user_name"); the bridge names the rounds it builds
 * from the server's requests itself ("elicitation").
 */
export const BEYOND_TRANSLATION_2026 = ["input-required-result-basic-elicitation/sep-2322-elicitation-incomplete"];

/** A 2026-07-28 stdio server served through the bridge gets the checks it gets over HTTP directly. */
export function expectSame2026Checks(via: ConformanceResult, direct: ConformanceResult): void {
  expect(via.failures.toSorted()).toEqual(direct.failures.toSorted());
  expect(via.passedChecks).toEqual(direct.passedChecks);
  expect(via.passed).toBeGreaterThanOrEqual(100);
  expect(direct.failures.filter((failure) => !NOT_SCORED_2026.test(failure))).toEqual([]);
}

/** A 2025-11-25 stdio server served as a 2026-07-28 one: everything but what no translation can provide. */
export function expectTranslated2026Checks(result: ConformanceResult): void {
  const failed = result.failures.map((failure) => failure.split(":")[0] as string);
  expect(failed.filter((id) => !NOT_SCORED_2026.test(id))).toEqual(BEYOND_TRANSLATION_2026);
  // The scenarios the bridge provides in full, by their checks.
  for (const scenario of [
    "server-stateless",
    "caching",
    "tools-list",
    "resources-list",
    "prompts-list",
    "input-required-result-multi-round",
    "input-required-result-tampered-state",
    "input-required-result-multiple-input-requests",
    "input-required-result-capability-check",
    "http-header-validation",
    "http-custom-header-server-validation",
  ])
    expect(result.passedChecks.some((id) => id.startsWith(`${scenario}/`))).toBe(true);
  expect(result.passed).toBeGreaterThanOrEqual(100);
}
