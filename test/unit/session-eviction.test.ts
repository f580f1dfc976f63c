/** Which session gives way when a session table is full (src/proxy/session-eviction.ts). */
import { expect, test } from "bun:test";
import { evictionGraceMs, sessionToEvict } from "../../src/proxy/session-eviction.ts";

interface Entry {
  readonly used: number;
  readonly busy?: boolean;
}

const pick = (entries: Record<string, Entry>, now: number, graceMs = 1_000) =>
  sessionToEvict(
    Object.entries(entries),
    (entry) => entry.used,
    (entry) => entry.busy === true,
    now,
    graceMs,
  );

test("the least recently used session idle past the grace gives way", () => {
  expect(pick({ a: { used: 500 }, b: { used: 100 }, c: { used: 900 } }, 2_000)).toBe("b");
});

test("none gives way while every session was used within the grace", () => {
  expect(pick({ a: { used: 1_500 }, b: { used: 1_900 } }, 2_000)).toBeUndefined();
});

test("a busy session never gives way, however long unused", () => {
  expect(pick({ a: { used: 0, busy: true }, b: { used: 800 } }, 2_000)).toBe("b");
  expect(pick({ a: { used: 0, busy: true } }, 2_000)).toBeUndefined();
});

test("the grace is a minute, or a tenth of the idle timeout when shorter", () => {
  expect(evictionGraceMs(30 * 60_000)).toBe(60_000);
  expect(evictionGraceMs(20_000)).toBe(2_000);
});
