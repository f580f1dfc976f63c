import { expect, test } from "bun:test";
import { QUIET_COLLECTION_MS, startGarbageCollector } from "../../src/workload/start-garbage.ts";

test("each running report collects at once; the first one also schedules one quiet collection, unref'd", async () => {
  let collections = 0;
  const timers: { ms: number; timer: ReturnType<typeof setTimeout> }[] = [];
  const collectStartGarbage = startGarbageCollector({
    collect: () => {
      collections++;
    },
    // The real timer, so that what is checked is that it does not hold the process open.
    schedule: (run, ms) => {
      const timer = setTimeout(run, ms);
      timers.push({ ms, timer });
      return timer;
    },
  });

  collectStartGarbage();
  expect(collections).toBe(1);
  expect(timers.map((t) => t.ms)).toEqual([QUIET_COLLECTION_MS]);
  expect(timers[0]?.timer.hasRef()).toBe(false);

  // A restart's "running" report: collected at once, no second timer.
  collectStartGarbage();
  collectStartGarbage();
  expect(collections).toBe(3);
  expect(timers).toHaveLength(1);

  // The quiet collection itself, once its timer runs.
  while (collections < 4) await Bun.sleep(50);
  expect(collections).toBe(4);
  expect(timers).toHaveLength(1);
});
