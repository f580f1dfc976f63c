/**
 * Which workloads of a group the gateway counts as members (gateway/membership.ts
 * `runningMembers`): a status saying "running" counts only while its pid is that workload's
 * supervisor. A live process that merely holds a dead supervisor's recycled pid (here: another
 * process of this user, and a lookalike `__supervise` for a different workload) must not make
 * the gateway route to the workload's port.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import type { Subprocess } from "bun";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runningMembers } from "../../src/gateway/membership.ts";
import { resolvePaths } from "../../src/state/paths.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";
import { idleProcess } from "../support/processes.ts";

let root: string;
let store: WorkloadStore;
const started: Subprocess[] = [];
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "mcpmgr-membership-"));
  store = new WorkloadStore(resolvePaths({ MCPMGR_HOME: root }));
});
afterEach(() => {
  for (const proc of started.splice(0)) proc.kill("SIGKILL");
  rmSync(root, { recursive: true, force: true });
});

/** A live process of this user whose command line is `bun -e … [__supervise NAME]`. */
async function processRunning(...argv: string[]): Promise<number> {
  const proc = await idleProcess(argv);
  started.push(proc);
  return proc.pid;
}

async function runningWorkload(name: string, port: number, pid: number): Promise<void> {
  await store.create({
    name,
    group: "team",
    source: { kind: "remote", ref: "https://example.com/mcp" },
    transport: "streamable-http",
    proxyPort: port,
    runtime: "remote",
  });
  await store.writeStatus(name, { state: "running", pid });
}

test("a workload counts while its pid is its supervisor, not while the pid is some other live process", async () => {
  await runningWorkload("real", 41001, await processRunning("__supervise", "real"));
  await runningWorkload("recycled", 41002, await processRunning());
  await runningWorkload("someone-elses", 41003, await processRunning("__supervise", "real"));
  await runningWorkload("this-test", 41004, process.pid);
  const members = await runningMembers(store, "team");
  expect(members.map((m) => m.name)).toEqual(["real"]);
  expect(members[0]?.url).toBe("http://127.0.0.1:41001/mcp");
});

test("a member run again under its name and port with a secret is seen to hold secrets (the gateway's audit withholds its data)", async () => {
  const { followMembership } = await import("../../src/gateway/membership.ts");
  await runningWorkload("probe", 41005, await processRunning("__supervise", "probe"));
  const membership = await followMembership({ store, group: "team", onChange: () => {}, pollMs: 60_000 });
  try {
    expect(membership.current().map((m) => [m.name, m.holdsSecrets === true])).toEqual([["probe", false]]);
    // `mcpmgr rm probe` and `mcpmgr run … --name probe --proxy-port 41005 --secret key,target=KEY`: same name, same URL.
    await store.remove("probe");
    await store.create({
      name: "probe",
      group: "team",
      source: { kind: "remote", ref: "https://example.com/mcp" },
      transport: "streamable-http",
      proxyPort: 41005,
      runtime: "remote",
      secrets: [{ name: "key", target: "KEY" }],
    });
    await store.writeStatus("probe", { state: "running", pid: await processRunning("__supervise", "probe") });
    await membership.refresh();
    expect(membership.current().map((m) => [m.name, m.holdsSecrets === true])).toEqual([["probe", true]]);
  } finally {
    membership.close();
  }
});

test("a member seen holding a key from its env file keeps holding it while its supervisor runs, whatever the file says later", async () => {
  const { followMembership } = await import("../../src/gateway/membership.ts");
  const envFile = join(root, "probe.env");
  writeFileSync(envFile, "LOG_LEVEL=debug\nPROBE_API_KEY=env-file-key-8d21\n");
  const run = async (pid: number) => {
    await store.remove("probe").catch(() => {});
    await store.create({
      name: "probe",
      group: "team",
      source: { kind: "remote", ref: "https://example.com/mcp" },
      transport: "streamable-http",
      proxyPort: 41006,
      runtime: "remote",
      runOptions: ["https://example.com/mcp", "--env-file", envFile],
    });
    await store.writeStatus("probe", { state: "running", pid });
  };
  await run(await processRunning("__supervise", "probe"));
  const membership = await followMembership({ store, group: "team", onChange: () => {}, pollMs: 60_000 });
  const holds = () => membership.current().map((m) => [m.name, m.holdsSecrets === true]);
  try {
    expect(holds()).toEqual([["probe", true]]);
    // The key taken out of the file (or the file caught half written): the running server still has it.
    writeFileSync(envFile, "LOG_LEVEL=debug\n");
    await membership.refresh();
    expect(holds()).toEqual([["probe", true]]);
    // Restarted (another supervisor): its server read the file without the key.
    await run(await processRunning("__supervise", "probe"));
    await membership.refresh();
    expect(holds()).toEqual([["probe", false]]);
  } finally {
    membership.close();
  }
});
