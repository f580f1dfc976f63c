/** Which session gives way when a session table is full (src/proxy/session-eviction.ts). */
import { expect, test } from "bun:test";
import { evictionGraceMs, sessionToEvict } from "../../src/proxy/session-eviction.ts";
import { SessionTracker } from "../../src/proxy/session-tracker.ts";

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

// Review 11 F3: the transparent proxy's table spared only legacy SSE sessions, so a session whose tool call
// ran past the grace (or whose client held only its GET stream) gave way and its call was cut upstream.
test("the proxy's session tracker: a session with a request in progress neither gives way nor expires", () => {
  let now = 0;
  const evicted: string[] = [];
  const tracker = new SessionTracker({
    maxSessions: 2,
    idleMs: 10_000,
    now: () => now,
    onEvicted: (id) => evicted.push(id),
  });
  expect(tracker.bind("a", "")).toBe(true);
  now = 100;
  expect(tracker.bind("b", "")).toBe(true);
  const release = tracker.hold("a"); // a's call runs on, with no request since
  now = 5_000; // past the grace (1 s) for both
  expect(tracker.bind("c", "")).toBe(true);
  expect(evicted).toEqual(["b"]);
  now = 30_000; // past the idle timeout too: still a's
  expect(tracker.ownerOf("a")).toBe("");
  release();
  now = 30_500;
  expect(tracker.bind("d", "")).toBe(true); // c expired meanwhile: room without ending anything
  expect(evicted).toEqual(["b"]);
  now = 30_900;
  // The end of a's call counts as use: it gives way only once idle for the grace after it.
  expect(tracker.full).toBe(true);
  now = 31_100;
  expect(tracker.bind("e", "")).toBe(true);
  expect(evicted).toEqual(["b", "a"]);
});

test("the proxy's session tracker: an id that ended is served again once the upstream opens a session under it anew", () => {
  // A server that hands every session the same id: the gateway DELETEs one (its catalog connection failed
  // to list and retries), and the next initialize's answer names that id again.
  const sessions = new SessionTracker({});
  expect(sessions.bind("constant", "")).toBe(true);
  sessions.markEnded("constant");
  expect(sessions.hasEnded("constant")).toBe(true);
  expect(sessions.bind("constant", "")).toBe(true);
  expect(sessions.hasEnded("constant")).toBe(false);
  expect(sessions.ownerOf("constant")).toBe("");
});
