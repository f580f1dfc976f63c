/**
 * The name a foreground run holds while it runs (state/foreground-runs.ts), against a temporary
 * MCPMGR_HOME: a record and a live foreground run exclude each other whatever comes first, and
 * a claim whose process is gone, or whose pid another process has since, holds nothing.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { liveForegroundRun } from "../../src/state/foreground-runs.ts";
import { resolvePaths, type McpmgrPaths } from "../../src/state/paths.ts";
import { WorkloadStore, type WorkloadInput } from "../../src/state/workloads.ts";
import { rejection } from "../support/errors.ts";

let home: string;
let paths: McpmgrPaths;
let store: WorkloadStore;

beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), "mcpmgr-foreground-runs-"));
  paths = resolvePaths({ MCPMGR_HOME: home });
  store = new WorkloadStore(paths);
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

const record = (name: string): WorkloadInput => ({
  name,
  source: { kind: "package", ref: "npx://@modelcontextprotocol/server-everything" },
  transport: "stdio",
  proxyPort: 41_000,
  runtime: "process",
});

test("a live claim refuses a record of its name until it is released, and a record refuses a claim", async () => {
  const release = await store.claimForegroundName("fg");
  expect(liveForegroundRun(paths, "fg")).toEqual({ pid: process.pid });
  const refused = await rejection(store.create(record("fg")), "WORKLOAD_EXISTS");
  expect(refused.message).toBe(`a foreground run named fg is running (pid ${process.pid})`);
  await rejection(store.claimForegroundName("fg"), "WORKLOAD_EXISTS");
  await release();
  expect(liveForegroundRun(paths, "fg")).toBeUndefined();
  await store.create(record("fg"));
  const taken = await rejection(store.claimForegroundName("fg"), "WORKLOAD_EXISTS");
  expect(taken.message).toBe("a workload named fg already exists");
  expect(taken.hint).toContain("mcpmgr start fg");
});

test("a claim of a process that is gone, of a reused pid, or unreadable holds nothing and is replaced", async () => {
  const dir = join(paths.stateDir, "foreground");
  await mkdir(dir, { recursive: true });
  const exited = Bun.spawn(["true"]);
  await exited.exited;
  await writeFile(join(dir, "gone.json"), JSON.stringify({ pid: exited.pid, startTime: "1" }));
  // Our own pid with another start time: a pid reused since.
  await writeFile(join(dir, "reused.json"), JSON.stringify({ pid: process.pid, startTime: "not-ours" }));
  await writeFile(join(dir, "broken.json"), "{");
  for (const name of ["gone", "reused", "broken"]) {
    expect(liveForegroundRun(paths, name)).toBeUndefined();
    await store.create({ ...record(name), proxyPort: 41_000 + name.length });
    await store.remove(name);
    const release = await store.claimForegroundName(name);
    expect(liveForegroundRun(paths, name)).toEqual({ pid: process.pid });
    await release();
  }
});

test("a claim made where XDG_RUNTIME_DIR is set holds against a run from a shell without it (sudo -u, su, cron)", async () => {
  // Review 8: the claim was kept in the runtime folder, which follows XDG_RUNTIME_DIR; the records do not.
  const userHome = join(home, "user");
  const session = resolvePaths({ XDG_RUNTIME_DIR: join(home, "xdg") }, "linux", userHome);
  const bare = resolvePaths({}, "linux", userHome);
  expect(session.runtimeDir).not.toBe(bare.runtimeDir);
  const release = await new WorkloadStore(session).claimForegroundName("fg");
  const refused = await rejection(new WorkloadStore(bare).create(record("fg")), "WORKLOAD_EXISTS");
  expect(refused.message).toBe(`a foreground run named fg is running (pid ${process.pid})`);
  await release();
});
