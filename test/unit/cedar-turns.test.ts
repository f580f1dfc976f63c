/**
 * The Cedar evaluator's fairness parts: connections take turns round-robin, a long job goes on at its
 * next turn (middleware/cedar-turns.ts); a question's context is counted until it is past a bound
 * (middleware/cedar-cost.ts).
 */
import { expect, test } from "bun:test";
import { contextSize, MAX_CONTEXT_ITEMS, MAX_CONTEXT_TEXT_CHARS } from "../../src/middleware/cedar-cost.ts";
import { Turns } from "../../src/middleware/cedar-turns.ts";

test("connections take turns: a long job of one is sliced, another's short job is done at the next turn", async () => {
  const turns = new Turns(0);
  const done: string[] = [];
  const flooder = {};
  const other = {};
  let steps = 0;
  // A job of five pieces, one per turn (its slice is 0 ms), the first at once (nobody else waits):
  // the other connection's comes in between.
  turns.add(flooder, () => {
    steps++;
    done.push(`flood-${steps}`);
    return steps === 5;
  });
  turns.add(flooder, () => {
    done.push("flood-second");
    return true;
  });
  turns.add(other, () => {
    done.push("other");
    return true;
  });
  expect(turns.waiting(flooder)).toBe(2);
  while (done.length < 7) await new Promise((resolve) => setImmediate(resolve));
  expect(done).toEqual(["flood-1", "flood-2", "other", "flood-3", "flood-4", "flood-5", "flood-second"]);
  expect(turns.waiting(flooder)).toBe(0);
});

test("a dropped connection's frames are forgotten, even from within its own job", async () => {
  const turns = new Turns(0);
  const gone = {};
  const other = {};
  const ran: string[] = [];
  let finished = false;
  // Two pieces: the first taken at once, so that the dropped connection's jobs wait for their turn.
  let pieces = 0;
  turns.add(other, () => {
    ran.push("other");
    return ++pieces === 2;
  });
  turns.add(gone, () => {
    ran.push("first");
    turns.drop(gone);
    return false;
  });
  turns.add(gone, () => {
    ran.push("never");
    return true;
  });
  turns.add(other, () => {
    finished = true;
    return true;
  });
  while (!finished) await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  expect(ran).toEqual(["other", "other", "first"]);
  expect(turns.waiting(gone)).toBe(0);
});

test("a context's size: values and text counted, and the count stops past a bound", () => {
  expect(contextSize({ a: "xy", b: [1, 2, { c: true }] })).toEqual({ items: 7, text: 5, over: false });
  const many = contextSize({ arg: Array.from({ length: MAX_CONTEXT_ITEMS * 10 }, () => 1) });
  expect(many.over).toBe(true);
  expect(many.items).toBeLessThan(MAX_CONTEXT_ITEMS + 3);
  // Attribute names count as text: "arg" is three characters.
  expect(contextSize({ arg: "x".repeat(MAX_CONTEXT_TEXT_CHARS - 3) }).over).toBe(false);
  expect(contextSize({ arg: "x".repeat(MAX_CONTEXT_TEXT_CHARS - 2) }).over).toBe(true);
});

test("a job that throws ends only its own connection's frames: the others' turns go on", async () => {
  const faults: unknown[] = [];
  const turns = new Turns(0, (owner, error) => faults.push([owner, error]));
  const faulty = {};
  const other = {};
  const ran: string[] = [];
  let finished = false;
  // The other connection's first piece is taken at once; the faulty one's frames wait for a turn.
  let pieces = 0;
  turns.add(other, () => {
    ran.push("other");
    return ++pieces === 2;
  });
  turns.add(faulty, () => {
    throw new TypeError("a bug in a frame");
  });
  turns.add(faulty, () => {
    ran.push("never");
    return true;
  });
  turns.add(other, () => {
    finished = true;
    return true;
  });
  while (!finished) await new Promise((resolve) => setImmediate(resolve));
  expect(ran).toEqual(["other", "other"]);
  expect(faults).toHaveLength(1);
  expect((faults[0] as [object, Error])[0]).toBe(faulty);
  expect((faults[0] as [object, Error])[1]).toBeInstanceOf(TypeError);
  expect(turns.waiting(faulty)).toBe(0);
});
