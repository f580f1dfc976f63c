/**
 * `mcpmgr run NAME` where NAME is one of the user's workloads and no registry server: a `run` typed
 * for `start`. The refusal says so (and which command starts it) instead of only pointing at the
 * registry, which does not have it.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv, expectOneLineError, runCli } from "../support/cli-home.ts";
import { CLI_ENTRY } from "../support/processes.ts";
import { resolvePaths } from "../../src/state/paths.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";

// Real processes: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

let home: string;

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-run-workload-name-"));
  // Recorded as `run npx://… --name notes` records it, then stopped: nothing runs.
  await new WorkloadStore(resolvePaths({ MCPMGR_HOME: join(home, ".mcpmgr") })).create({
    name: "notes",
    source: { kind: "package", ref: "npx://@modelcontextprotocol/server-everything" },
    transport: "stdio",
    proxyMode: "streamable-http",
    proxyPort: 41_335,
    proxyPath: "/mcp",
    runtime: "process",
    runOptions: ["npx://@modelcontextprotocol/server-everything", "--name", "notes", "--"],
  });
});

afterAll(() => {
  rmSync(home, { recursive: true, force: true });
});

test("run of a workload's name that is no registry server points to start", () => {
  const line = expectOneLineError(runCli(cliEnv(home), ["run", "notes"]), 2);
  expect(line).toBe(
    "[error] no server named 'notes' in the registry, but notes is one of your workloads (hint: 'mcpmgr start notes' starts it again ('mcpmgr restart notes' while it runs); 'mcpmgr run' is for a new server)",
  );
});

test("a name that is neither keeps the registry's own refusal", () => {
  const line = expectOneLineError(runCli(cliEnv(home), ["run", "nothing-here"]), 2);
  expect(line).toStartWith("[error] no server named 'nothing-here' in the registry (hint: ");
});

test("run of a taken name is refused in one line, before the placement warns about the server", () => {
  // The registry's everything gets no network in the process sandbox: its npx warning came first.
  const line = expectOneLineError(runCli(cliEnv(home), ["run", "everything", "--name", "notes"]), 1);
  expect(line).toStartWith("[error] a workload named notes already exists (hint: ");
});

test("a foreground run of a taken name is refused in one line too, before the placement warns", () => {
  // Its claim of the name refused it as well, but only after the npx warning.
  const line = expectOneLineError(runCli(cliEnv(home), ["run", "everything", "--name", "notes", "--foreground"]), 1);
  expect(line).toStartWith("[error] a workload named notes already exists (hint: ");
});

test("a name that is no registry server but a file or folder here says it is a local path, with the runners' form", () => {
  // `run myproject` typed for `run npx://./myproject`: the registry's refusal alone hid what was meant.
  const here = join(home, "here");
  mkdirSync(join(here, "myproject"), { recursive: true });
  writeFileSync(join(here, "server.py"), "");
  const inHere = (source: string) => {
    const done = Bun.spawnSync([process.execPath, CLI_ENTRY, "run", source], {
      cwd: here,
      env: cliEnv(home),
      stdin: "ignore",
    });
    return { code: done.exitCode, stdout: done.stdout.toString(), stderr: done.stderr.toString() };
  };
  expect(expectOneLineError(inHere("myproject"), 2)).toBe(
    "[error] no server named 'myproject' in the registry, and ./myproject is a local folder (hint: run a local project with its package runner: npx://./myproject, uvx://./myproject or go://./myproject; 'mcpmgr registry list' shows every server)",
  );
  expect(expectOneLineError(inHere("server.py"), 2)).toStartWith(
    "[error] no server named 'server.py' in the registry, and ./server.py is a local file (hint: run a local project with its package runner: npx://./dir, uvx://./dir or go://./dir (the project's folder); ",
  );
});
