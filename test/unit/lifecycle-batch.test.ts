/**
 * Several workloads at once (workload/batch.ts, cli/lifecycle-batch.ts): what the arguments select,
 * the bound on how many run side by side, phases one after the other, failures that do not stop the
 * rest, and the summary error. The real commands over real workloads: test/integration/workloads-batch.test.ts.
 */
import { expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseTargets } from "../../src/cli/lifecycle-batch.ts";
import { rmOptions, startOptions, stopOptions } from "../../src/config/command-options.ts";
import { McpmgrError } from "../../src/errors.ts";
import { resolvePaths } from "../../src/state/paths.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";
import { assertBatchDone, batchBound, failureOf, planBatch, runBatch } from "../../src/workload/batch.ts";
import { usageError } from "../support/errors.ts";
import { recordPackageWorkloads } from "../support/workload-records.ts";

test("one name is the command as it always was; several names, --all or --group are a selection", () => {
  expect(parseTargets(["fetch"], stopOptions, "stop")).toEqual({ one: "fetch" });
  expect(parseTargets(["a", "b"], stopOptions, "stop")).toEqual({ selection: { kind: "names", names: ["a", "b"] } });
  expect(parseTargets(["--all"], startOptions, "start")).toEqual({ selection: { kind: "all" } });
  expect(parseTargets(["--group", "work"], rmOptions, "rm")).toEqual({ selection: { kind: "group", group: "work" } });
});

test("a name given twice is one workload: named alone, the one-NAME command; among others, once", () => {
  expect(parseTargets(["fetch", "fetch"], startOptions, "start")).toEqual({ one: "fetch" });
  expect(parseTargets(["a", "b", "a"], stopOptions, "stop")).toEqual({
    selection: { kind: "names", names: ["a", "b"] },
  });
});

test("a name that cannot be a workload's among several is refused before any is acted on, as it is alone", () => {
  usageError(() => parseTargets(["fetch", "Not A Name"], rmOptions, "rm"), "INVALID_ARGUMENT");
});

test("nothing named, or names beside a selector, or both selectors: usage errors with a hint", () => {
  usageError(() => parseTargets([], rmOptions, "rm"), "MISSING_OPTION");
  usageError(() => parseTargets(["a", "--all"], stopOptions, "stop"), "CONFLICTING_OPTIONS");
  usageError(() => parseTargets(["a", "--group", "work"], stopOptions, "stop"), "CONFLICTING_OPTIONS");
  usageError(() => parseTargets(["--all", "--group", "work"], startOptions, "start"), "CONFLICTING_OPTIONS");
  usageError(() => parseTargets(["--group", "Not A Group"], startOptions, "start"), "INVALID_ARGUMENT");
});

test("starts run at most one per core and four in all; stops eight", () => {
  expect([batchBound("start", 1), batchBound("start", 2), batchBound("restart", 16)]).toEqual([1, 2, 4]);
  expect([batchBound("stop", 2), batchBound("rm", 2)]).toEqual([8, 8]);
});

test("a batch keeps to its bound, runs its phases one after the other, and goes on past failures", async () => {
  let running = 0;
  let most = 0;
  const order: string[] = [];
  const failed: string[] = [];
  const failures = await runBatch(
    { phases: [["gw"], ["a", "b", "c", "d", "e"]], already: 0, unreadable: [] },
    2,
    async (name) => {
      running++;
      most = Math.max(most, running);
      order.push(`${name}+`);
      await Bun.sleep(name === "a" ? 30 : 5);
      running--;
      order.push(`${name}-`);
      if (name === "b" || name === "d") throw new Error(`${name} broke`);
    },
    (name) => failed.push(name),
  );
  expect(most).toBe(2);
  // The gateway's phase ended before any member began.
  expect(order.slice(0, 2)).toEqual(["gw+", "gw-"]);
  expect(order.filter((step) => step.endsWith("+"))).toHaveLength(6);
  expect(failures).toEqual({ failed: ["b", "d"], notBegun: [] });
  expect(failed.sort()).toEqual(["b", "d"]);
});

test("interrupted: those under way finish, no more begin (the next phase neither), the rest are not begun", async () => {
  let stop = false;
  const finished: string[] = [];
  const outcome = await runBatch(
    { phases: [["a", "b", "c", "d"], ["gw"]], already: 0, unreadable: [] },
    2,
    async (name) => {
      if (name === "b") stop = true;
      await Bun.sleep(5);
      finished.push(name);
    },
    () => {},
    () => stop,
  );
  expect(finished.sort()).toEqual(["a", "b"]);
  expect(outcome).toEqual({ failed: [], notBegun: ["c", "d", "gw"] });
});

test("some failed: WORKLOADS_FAILED naming them (exit 1); none failed: nothing", () => {
  expect(() => assertBatchDone("start", [], 0, 3)).not.toThrow();
  let thrown: unknown;
  try {
    assertBatchDone("rm", ["b"], 1, 4);
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(McpmgrError);
  expect([(thrown as McpmgrError).code, (thrown as McpmgrError).exitCode]).toEqual(["WORKLOADS_FAILED", 1]);
  expect((thrown as McpmgrError).message).toContain("b, 1 unreadable record");
  expect((thrown as McpmgrError).hint).toBeString();
});

test("a gateway starts before the workloads named with it, and stops, restarts and goes after them", async () => {
  const dir = await mkdtemp(join(tmpdir(), "mcpmgr-batch-plan-"));
  try {
    const paths = resolvePaths({ MCPMGR_HOME: dir });
    const store = new WorkloadStore(paths);
    // Named so that it sorts first: its place comes from being a gateway, not from its name.
    await store.create({
      name: "a-gateway",
      source: { kind: "gateway", ref: "default" },
      transport: "streamable-http",
      proxyMode: "streamable-http",
      proxyPort: 41_201,
      runtime: "gateway",
    });
    await recordPackageWorkloads(store, [
      ["b-member", 41_202],
      ["c-member", 41_203],
    ]);
    const names = { kind: "names", names: ["c-member", "a-gateway", "b-member", "c-member"] } as const;
    expect((await planBatch("start", names, paths)).phases).toEqual([["a-gateway"], ["c-member", "b-member"]]);
    for (const verb of ["stop", "restart", "rm"] as const)
      expect([verb, (await planBatch(verb, names, paths)).phases]).toEqual([
        verb,
        [["c-member", "b-member"], ["a-gateway"]],
      ]);
    // rm --all takes every record, whatever its state; start --all those that do not run (none runs here).
    expect((await planBatch("rm", { kind: "all" }, paths)).phases).toEqual([["b-member", "c-member"], ["a-gateway"]]);
    expect((await planBatch("start", { kind: "all" }, paths)).phases).toEqual([
      ["a-gateway"],
      ["b-member", "c-member"],
    ]);
    const stopAll = await planBatch("stop", { kind: "all" }, paths);
    expect([stopAll.phases, stopAll.already]).toEqual([[], 3]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("a failure's line is led by its workload's name, unless the message names that workload already", () => {
  const gone = new McpmgrError("INVALID_OPTION", "its working directory /home/u/dd is gone (ENOENT)", {
    hint: "run it from a folder that exists",
  });
  // The name inside a path or a file name is the folder or file, not the workload.
  const led = failureOf("dd", gone);
  expect([led.code, led.message, led.hint, led.exitCode]).toEqual([
    "INVALID_OPTION",
    "dd: its working directory /home/u/dd is gone (ENOENT)",
    "run it from a folder that exists",
    gone.exitCode,
  ]);
  expect(failureOf("fetch", new McpmgrError("INVALID_OPTION", "cannot read fetch.json")).message).toBe(
    "fetch: cannot read fetch.json",
  );
  expect(failureOf("dd", new McpmgrError("INVALID_OPTION", "package ./dd/ not found")).message).toBe(
    "dd: package ./dd/ not found",
  );
  // Named as the workload: left as it is.
  const unknown = new McpmgrError("WORKLOAD_NOT_FOUND", "no workload named bbx (did you mean bb?)");
  expect(failureOf("bbx", unknown)).toBe(unknown);
  const running = new McpmgrError("INVALID_OPTION", "workload 'dd' is running.");
  expect(failureOf("dd", running)).toBe(running);
  // Anything else is an unexpected error of that workload's.
  const odd = failureOf("aa", new Error("boom"));
  expect([odd.code, odd.message]).toEqual(["INTERNAL", "aa: unexpected error: boom"]);
});
