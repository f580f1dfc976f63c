/**
 * `mcpmgr run NAME` where NAME is one of the user's workloads and no registry server: a `run` typed
 * for `start`. The refusal says so (and which command starts it) instead of only pointing at the
 * registry, which does not have it.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv, expectOneLineError, runCli } from "../support/cli-home.ts";
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
