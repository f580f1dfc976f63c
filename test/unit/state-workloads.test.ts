/**
 * The workload store against a temporary MCPMGR_HOME: round trips, defaults, refusals by
 * code, status files, and what happens to corrupt or foreign files.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { McpmgrError } from "../../src/errors.ts";
import { resolvePaths, type McpmgrPaths } from "../../src/state/paths.ts";
import { processStartTime } from "../../src/state/process-start.ts";
import { WorkloadStore, reconcileStatus, type WorkloadInput, type WorkloadStatus } from "../../src/state/workloads.ts";
import { plainStop, recordSupervisorPid, removalUnderWay, restartUnderWay } from "../../src/workload/start-claim.ts";
import { stopSupervisor } from "../../src/workload/supervisor-control.ts";
import { rejection } from "../support/errors.ts";

const CLOCK = new Date("2030-01-02T03:04:05.000Z");
const posixOnly = process.platform === "win32" ? test.skip : test;
let home: string;
let paths: McpmgrPaths;
let store: WorkloadStore;

beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), "mcpmgr-state-workloads-"));
  paths = resolvePaths({ MCPMGR_HOME: home });
  store = new WorkloadStore(paths, { now: () => CLOCK });
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

function input(name: string, overrides: Partial<WorkloadInput> = {}): WorkloadInput {
  return {
    name,
    source: { kind: "package", ref: "npx://@modelcontextprotocol/server-everything" },
    transport: "stdio",
    proxyPort: 40_000 + name.length,
    runtime: "process",
    ...overrides,
  };
}

describe("records", () => {
  test("create fills the defaults and get returns the same frozen record", async () => {
    const created = await store.create(
      input("everything", { labels: { team: "a" }, env: { DEBUG: "1" }, args: ["--x"] }),
    );
    expect(created).toEqual({
      schema_version: 1,
      name: "everything",
      group: "default",
      labels: { team: "a" },
      source: { kind: "package", ref: "npx://@modelcontextprotocol/server-everything" },
      transport: "stdio",
      proxyMode: "streamable-http",
      host: "127.0.0.1",
      proxyPort: 40_010,
      proxyPath: "/mcp",
      runtime: "process",
      env: { DEBUG: "1" },
      secrets: [],
      args: ["--x"],
      volumes: [],
      runOptions: [],
      createdAt: CLOCK.toISOString(),
    });
    const read = await store.get("everything");
    expect(read).toEqual(created);
    expect(Object.isFrozen(read)).toBe(true);
    expect(Object.isFrozen(read?.labels)).toBe(true);
    expect(await store.get("missing")).toBeUndefined();
  });

  posixOnly("files are private", async () => {
    await store.create(input("fetch"));
    const dir = join(home, "state", "workloads", "fetch");
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect((await stat(join(dir, "workload.json"))).mode & 0o777).toBe(0o600);
  });

  test("list is sorted by name and skips folders without a record", async () => {
    expect(await store.list()).toEqual([]);
    await store.create(input("zeta", { proxyPort: 41_001 }));
    await store.create(input("alpha", { proxyPort: 41_002 }));
    await Bun.write(join(home, "state", "workloads", "half-created", ".keep"), "");
    expect((await store.list()).map((r) => r.name)).toEqual(["alpha", "zeta"]);
  });

  test("secrets are kept as references; stray values are not written", async () => {
    const sneaky = { name: "gh-token", target: "GITHUB_TOKEN", value: "ghp_secret" } as unknown as {
      name: string;
      target: string;
    };
    await store.create(input("github", { secrets: [sneaky] }));
    const text = await readFile(join(home, "state", "workloads", "github", "workload.json"), "utf8");
    expect(text).not.toContain("ghp_secret");
    expect((await store.getExisting("github")).secrets).toEqual([{ name: "gh-token", target: "GITHUB_TOKEN" }]);
  });

  test("a duplicate name is WORKLOAD_EXISTS, even when two creates race", async () => {
    await store.create(input("fetch"));
    await rejection(store.create(input("fetch", { proxyPort: 42_000 })), "WORKLOAD_EXISTS");
    const results = await Promise.allSettled([
      store.create(input("race", { proxyPort: 42_001 })),
      store.create(input("race", { proxyPort: 42_002 })),
    ]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const failed = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    expect((failed.reason as McpmgrError).code).toBe("WORKLOAD_EXISTS");
  });

  test("a proxy port kept by another workload is PORT_IN_USE", async () => {
    await store.create(input("one", { proxyPort: 43_000 }));
    const err = await rejection(store.create(input("two", { proxyPort: 43_000 })), "PORT_IN_USE");
    expect(err.message).toContain("one");
    await store.create(input("two", { proxyPort: 43_001 }));
    await rejection(
      store.update("two", (r) => ({ ...r, proxyPort: 43_000 })),
      "PORT_IN_USE",
    );
  });

  test("invalid records are INVALID_ARGUMENT with the field path", async () => {
    const err = await rejection(store.create(input("bad", { proxyPort: 0 })), "INVALID_ARGUMENT");
    expect(err.message).toContain("proxyPort:");
    await rejection(store.create(input("remote", { runtime: "remote", transport: "stdio" })), "INVALID_ARGUMENT");
    await rejection(store.create(input("Bad Name")), "INVALID_ARGUMENT");
    await rejection(store.create(input("env", { env: { "NOT-A-NAME": "x" } })), "INVALID_ARGUMENT");
  });

  test("update rewrites under the lock, keeps createdAt, and refuses renames", async () => {
    await store.create(input("fetch", { createdAt: "2029-12-31T00:00:00.000Z" }));
    const updated = await store.update("fetch", (r) => ({ ...r, proxyPort: 44_000, labels: { ...r.labels, x: "y" } }));
    expect(updated.proxyPort).toBe(44_000);
    expect(updated.createdAt).toBe("2029-12-31T00:00:00.000Z");
    expect(await store.get("fetch")).toEqual(updated);
    await rejection(
      store.update("fetch", (r) => ({ ...r, name: "other" })),
      "INVALID_ARGUMENT",
    );
    await rejection(
      store.update("missing", (r) => r),
      "WORKLOAD_NOT_FOUND",
    );
  });

  test("remove deletes the record, status and logs; a second remove is WORKLOAD_NOT_FOUND", async () => {
    await store.create(input("fetch"));
    await store.writeStatus("fetch", { state: "running", pid: process.pid });
    await Bun.write(store.logPath("fetch"), "server log");
    await Bun.write(store.proxyLogPath("fetch"), "proxy log");
    await store.remove("fetch");
    expect(await store.get("fetch")).toBeUndefined();
    expect(await store.readStatus("fetch")).toBeUndefined();
    expect(await Bun.file(store.logPath("fetch")).exists()).toBe(false);
    expect(await Bun.file(store.proxyLogPath("fetch")).exists()).toBe(false);
    expect((await readdir(join(home, "state", "workloads"))).filter((e) => !e.startsWith(".lock"))).toEqual([]);
    await rejection(store.remove("fetch"), "WORKLOAD_NOT_FOUND");
    await rejection(store.getExisting("fetch"), "WORKLOAD_NOT_FOUND");
  });

  test("a mistyped name is offered the nearest workload's, and only a near one", async () => {
    await store.create(input("everything"));
    await store.create(input("remote1", { proxyPort: 41_002 }));
    expect((await rejection(store.getExisting("everythin"), "WORKLOAD_NOT_FOUND")).hint).toBe(
      "did you mean everything? ('mcpmgr list' shows the workloads)",
    );
    expect((await rejection(store.getExisting("remot1"), "WORKLOAD_NOT_FOUND")).hint).toContain(
      "did you mean remote1?",
    );
    expect((await rejection(store.getExisting("zzzzzz"), "WORKLOAD_NOT_FOUND")).hint).toBe(
      "see the workloads with: mcpmgr list",
    );
  });

  test("names that could escape the state folder are refused before any file access", async () => {
    await rejection(store.get("../../etc"), "INVALID_ARGUMENT");
    await rejection(store.remove(".."), "INVALID_ARGUMENT");
    expect(() => store.logPath("a/b")).toThrow(McpmgrError);
  });

  test("log paths live in logDir and cannot collide", () => {
    expect(store.logPath("x")).toBe(join(paths.logDir, "x.log"));
    expect(store.proxyLogPath("x")).toBe(join(paths.logDir, "x.proxy.log"));
    expect(store.proxyLogPath("x")).not.toBe(store.logPath("x-proxy"));
  });
});

describe("corrupt files", () => {
  test("a broken record is STATE_CORRUPT naming the file, with an rm hint", async () => {
    await store.create(input("fetch"));
    const file = join(home, "state", "workloads", "fetch", "workload.json");
    await writeFile(file, "{ not json");
    const err = await rejection(store.list(), "STATE_CORRUPT");
    expect(err.message).toContain(file);
    expect(err.hint).toContain("mcpmgr rm fetch");
    // and rm still works, so the user can get out of it
    await store.remove("fetch");
    expect(await store.list()).toEqual([]);
  });

  test("a wrong field is reported by its path", async () => {
    await store.create(input("fetch"));
    const file = join(home, "state", "workloads", "fetch", "workload.json");
    const record = JSON.parse(await readFile(file, "utf8"));
    await writeFile(file, JSON.stringify({ ...record, source: { kind: "ftp", ref: "x" } }));
    const err = await rejection(store.get("fetch"), "STATE_CORRUPT");
    expect(err.message).toContain("source.kind:");
  });

  test("a newer schema_version is refused, not misread", async () => {
    await store.create(input("fetch"));
    const file = join(home, "state", "workloads", "fetch", "workload.json");
    const record = JSON.parse(await readFile(file, "utf8"));
    await writeFile(file, JSON.stringify({ ...record, schema_version: 2 }));
    const err = await rejection(store.get("fetch"), "STATE_CORRUPT");
    expect(err.message).toContain("was written by a newer mcpmgr (schema_version 2; this one reads 1)");
  });

  test("a record whose name does not match its folder is STATE_CORRUPT", async () => {
    await store.create(input("fetch"));
    const file = join(home, "state", "workloads", "fetch", "workload.json");
    const record = JSON.parse(await readFile(file, "utf8"));
    await writeFile(file, JSON.stringify({ ...record, name: "other" }));
    await rejection(store.get("fetch"), "STATE_CORRUPT");
  });

  test("a broken status file is STATE_CORRUPT", async () => {
    await store.create(input("fetch"));
    await writeFile(
      join(home, "state", "workloads", "fetch", "status.json"),
      JSON.stringify({ state: "dancing", updatedAt: CLOCK.toISOString() }),
    );
    const err = await rejection(store.readStatus("fetch"), "STATE_CORRUPT");
    expect(err.message).toContain("state:");
  });
});

describe("status", () => {
  test("is separate from the record, defaulted and stamped with the clock", async () => {
    await store.create(input("fetch"));
    expect(await store.readStatus("fetch")).toBeUndefined();
    const written = await store.writeStatus("fetch", { state: "starting", pid: 1234 });
    expect(written).toEqual({
      schema_version: 1,
      state: "starting",
      pid: 1234,
      restarts: 0,
      updatedAt: CLOCK.toISOString(),
    });
    expect(await store.readStatus("fetch")).toEqual(written);
    await store.writeStatus("fetch", { state: "failed", restarts: 3, lastError: "exited with code 1" });
    expect(await store.readStatus("fetch")).toMatchObject({
      state: "failed",
      restarts: 3,
      lastError: "exited with code 1",
    });
    expect((await store.get("fetch"))?.proxyPort).toBe(input("fetch").proxyPort);
  });

  test("a run's note of its new supervisor's pid never replaces what that supervisor (or a stop) wrote first", async () => {
    await store.create(input("fetch"));
    // Under load the run's write waits for the store's lock while its supervisor starts and
    // reports: written after that report, "starting" stayed for good and the run gave up after 200 s (walk 3).
    await store.writeStatus("fetch", { state: "starting" });
    await store.writeStatus("fetch", { state: "running", pid: 4242 });
    await recordSupervisorPid(store, "fetch", 4242);
    expect(await store.readStatus("fetch")).toMatchObject({ state: "running", pid: 4242 });
    await store.writeStatus("fetch", { state: "starting" });
    await store.writeStatus("fetch", { state: "stopped" });
    await recordSupervisorPid(store, "fetch", 4343);
    expect((await store.readStatus("fetch"))?.state).toBe("stopped");
    // The usual order: the pid goes into the run's own "starting".
    await store.writeStatus("fetch", { state: "starting" });
    await recordSupervisorPid(store, "fetch", 4444);
    expect(await store.readStatus("fetch")).toMatchObject({ state: "starting", pid: 4444 });
  });

  test("a restart's stop names the restart in its 'stopped', an rm's the removal, a plain stop itself; a restart for as long as it lives", async () => {
    await store.create(input("fetch"));
    const quiet = { debug() {}, info() {}, warn() {}, error() {} };
    // Another command's start before its supervisor (a real, live command): stopped in its place.
    const other = Bun.spawn(["sleep", "30"]);
    const startedBy = { pid: other.pid, startTime: processStartTime(other.pid) ?? "" };
    await store.writeStatus("fetch", { state: "starting", startedBy });
    expect(await stopSupervisor(store, "fetch", quiet, { restarting: true })).toBe(true);
    const marked = await store.readStatus("fetch");
    expect(marked).toMatchObject({ state: "stopped", restartedBy: { pid: process.pid } });
    expect(restartUnderWay(marked)).toBe(true);
    await store.writeStatus("fetch", { state: "starting", startedBy });
    await stopSupervisor(store, "fetch", quiet);
    const plain = await store.readStatus("fetch");
    expect(plain?.state).toBe("stopped");
    expect(plain?.restartedBy).toBeUndefined();
    expect(restartUnderWay(plain)).toBe(false);
    // A plain stop names itself too: nothing follows it, so a start it overtook reports it at once.
    expect(plain?.stoppedBy).toEqual({ pid: process.pid, startTime: processStartTime(process.pid) ?? "" });
    expect(plainStop(plain)).toBe(true);
    expect(plainStop(marked)).toBe(false);
    // An rm's stop: its removal follows, waited for while it lives.
    await store.writeStatus("fetch", { state: "starting", startedBy });
    await stopSupervisor(store, "fetch", quiet, { removing: true });
    const removing = await store.readStatus("fetch");
    expect(removing?.stoppedBy).toMatchObject({ pid: process.pid, removing: true });
    expect({ plain: plainStop(removing), removal: removalUnderWay(removing) }).toEqual({ plain: false, removal: true });
    // A restart that ended before its start: nothing follows its "stopped".
    await store.writeStatus("fetch", { state: "stopped", restartedBy: startedBy });
    expect(restartUnderWay(await store.readStatus("fetch"))).toBe(true);
    other.kill("SIGKILL");
    await other.exited;
    expect(restartUnderWay(await store.readStatus("fetch"))).toBe(false);
  });

  test("a status file with fields this version does not know is read without them (another version's)", async () => {
    await store.create(input("fetch"));
    await store.writeStatus("fetch", { state: "stopped" });
    const file = join(paths.stateDir, "workloads", "fetch", "status.json");
    const written = JSON.parse(await readFile(file, "utf8"));
    await writeFile(file, JSON.stringify({ ...written, fromANewerVersion: { pid: 1 } }));
    const status = await store.readStatus("fetch");
    expect(status?.state).toBe("stopped");
    expect(status).not.toHaveProperty("fromANewerVersion");
  });

  test("a running status with holdsSecrets false (hand-edited, or another version's) is read, not refused", async () => {
    await store.create(input("fetch"));
    await store.writeStatus("fetch", { state: "stopped" });
    const file = join(paths.stateDir, "workloads", "fetch", "status.json");
    const written = JSON.parse(await readFile(file, "utf8"));
    await writeFile(file, JSON.stringify({ ...written, state: "running", holdsSecrets: false }));
    const status = await store.readStatus("fetch");
    expect(status?.state).toBe("running");
    expect(status?.holdsSecrets).toBe(false);
  });

  test("writing the status of a removed workload is WORKLOAD_NOT_FOUND (no ghost folder)", async () => {
    await rejection(store.writeStatus("ghost", { state: "stopped" }), "WORKLOAD_NOT_FOUND");
    expect(await store.list()).toEqual([]);
  });

  test("an invalid status is INVALID_ARGUMENT", async () => {
    await store.create(input("fetch"));
    await rejection(store.writeStatus("fetch", { state: "running", restarts: -1 }), "INVALID_ARGUMENT");
  });

  test("reconcileStatus turns a live state with a dead supervisor into failed", () => {
    const running: WorkloadStatus = {
      schema_version: 1,
      state: "running",
      pid: 4242,
      restarts: 1,
      lastError: "old",
      updatedAt: CLOCK.toISOString(),
    };
    expect(reconcileStatus(running, () => true)).toBe(running);
    const reconciled = reconcileStatus(running, () => false);
    expect(reconciled.state).toBe("failed");
    expect(reconciled.lastError).toContain("4242");
    const stopped: WorkloadStatus = { ...running, state: "stopped" };
    expect(reconcileStatus(stopped, () => false)).toBe(stopped);
  });

  test("reconcileStatus says a supervisor's pid now held by another live process is that, not 'no longer running'", async () => {
    // A real process of another program holding the pid the status names.
    const other = Bun.spawn(["sleep", "30"]);
    try {
      const running: WorkloadStatus = {
        schema_version: 1,
        state: "running",
        pid: other.pid,
        restarts: 0,
        updatedAt: CLOCK.toISOString(),
      };
      const reconciled = reconcileStatus(running, () => false);
      expect(reconciled.state).toBe("failed");
      expect(reconciled.lastError).toBe(
        `its supervisor (pid ${other.pid}) is gone; pid ${other.pid} now belongs to another process`,
      );
    } finally {
      other.kill("SIGKILL");
      await other.exited;
    }
  });

  test("reconcileStatus turns a 'starting' whose starting command ended before the supervisor's pid into failed", async () => {
    // A real command that wrote "starting" and is gone: its pid and start time as it recorded them.
    const command = Bun.spawn(["sleep", "30"]);
    const startedBy = { pid: command.pid, startTime: processStartTime(command.pid) ?? "" };
    const starting: WorkloadStatus = {
      schema_version: 1,
      state: "starting",
      restarts: 0,
      startedBy,
      updatedAt: CLOCK.toISOString(),
    };
    expect(reconcileStatus(starting, () => false)).toBe(starting);
    command.kill("SIGKILL");
    await command.exited;
    const reconciled = reconcileStatus(starting, () => false);
    expect(reconciled.state).toBe("failed");
    expect(reconciled.lastError).toContain(`pid ${command.pid}`);
    // Once the supervisor's pid is written, that pid alone says whether the workload lives.
    expect(reconcileStatus({ ...starting, pid: 4242 }, () => true).state).toBe("starting");
    // A status written by an older mcpmgr names no command: it is left as it was.
    const older: WorkloadStatus = { schema_version: 1, state: "starting", restarts: 0, updatedAt: CLOCK.toISOString() };
    expect(reconcileStatus(older, () => false)).toBe(older);
  });
});

test("two stores on the same home (two mcpmgr processes) see each other's writes", async () => {
  const other = new WorkloadStore(resolvePaths({ MCPMGR_HOME: home }));
  await store.create(input("fetch"));
  expect((await other.list()).map((r) => r.name)).toEqual(["fetch"]);
  await other.remove("fetch");
  expect(await store.get("fetch")).toBeUndefined();
});
