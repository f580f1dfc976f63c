import { expect, test } from "bun:test";
import { ActiveSessions } from "../../src/middleware/active-sessions.ts";

test("sessions open once, end once, and count as gone after the idle expiry", () => {
  let now = 0;
  let count = 0;
  const tracker = new ActiveSessions({ idleMs: 120_000, now: () => now, onChange: (d) => (count += d) });
  tracker.opened("a");
  tracker.opened("a");
  tracker.opened("b");
  expect(count).toBe(2);
  tracker.ended("a");
  tracker.ended("a");
  expect(count).toBe(1);
  // b stays in use, c goes quiet.
  tracker.opened("c");
  now = 100_000;
  tracker.seen("b");
  now = 200_000;
  tracker.seen("b");
  expect(count).toBe(1);
  tracker.ended("b");
  expect(count).toBe(0);
});
