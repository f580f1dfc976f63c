/**
 * Which workload updates a gateway session is not to hear (session-subscriptions.ts `stray`, with
 * stopped-uris.ts): a URI it stopped following, or one below it, is kept away and its unsubscribe sent
 * again once; a URI followed, below one followed, or with a subscribe in flight passes, and so does any
 * other while the session follows something there (MCP lets an update name a sub-resource).
 */
import { expect, test } from "bun:test";
import { SessionSubscriptions } from "../../src/gateway/session-subscriptions.ts";
import { StoppedUris, within } from "../../src/gateway/stopped-uris.ts";

const subscriptions = () =>
  new SessionSubscriptions({
    level: () => undefined,
    notify: () => {},
    log: () => {},
    describe: (_workload, err) => String(err),
  });

test("a URI below another is within it; a longer name is not", () => {
  expect(within("file:///dir/a.txt", "file:///dir")).toBe(true);
  expect(within("file:///dir/a.txt", "file:///dir/")).toBe(true);
  expect(within("db://t?row=1", "db://t")).toBe(true);
  expect(within("doc://a#part", "doc://a")).toBe(true);
  expect(within("doc://a", "doc://a")).toBe(true);
  expect(within("doc://ab", "doc://a")).toBe(false);
  expect(within("doc://a", "doc://a/b")).toBe(false);
});

test("an update of a URI unsubscribed from is kept away, its unsubscribe sent again the first time only", () => {
  const held = subscriptions();
  held.added("docs", "docs://a");
  held.added("docs", "docs://b");
  held.settled(held.removed("docs", "docs://b"));
  expect(held.stray("docs", "docs://a")).toBeUndefined();
  expect(held.stray("docs", "docs://a/part")).toBeUndefined();
  expect(held.stray("docs", "docs://b")).toEqual({ correct: "docs://b" });
  expect(held.stray("docs", "docs://b")).toEqual({});
  // Below the URI stopped: the stopped one is what the member session holds.
  expect(held.stray("docs", "docs://b/part")).toEqual({});
  // Any other URI: a sub-resource the gateway cannot place (the session follows something there).
  expect(held.stray("docs", "other://x")).toBeUndefined();
  // Stopped again: sent again once more.
  held.added("docs", "docs://b");
  expect(held.stray("docs", "docs://b")).toBeUndefined();
  held.removed("docs", "docs://b");
  expect(held.stray("docs", "docs://b/part")).toEqual({ correct: "docs://b" });
});

test("a subscribe in flight lets its URI's updates through; one that failed leaves it stopped", () => {
  const held = subscriptions();
  const first = held.admit("docs", "docs://a");
  expect(held.stray("docs", "docs://a")).toBeUndefined();
  expect(held.stray("docs", "docs://a/part")).toBeUndefined();
  held.settled(first);
  expect(held.stray("docs", "docs://a")).toEqual({ correct: "docs://a" });
  // A subscribe withdrawn by an unsubscribe: not followed, and stopped.
  const second = held.admit("docs", "docs://c");
  held.removed("docs", "docs://c");
  expect(held.added("docs", "docs://c", second)).toBe(false);
  expect(held.stray("docs", "docs://c")).toEqual({ correct: "docs://c" });
});

test("a session that follows nothing at a workload hears none of its updates, without anything sent again", () => {
  const held = subscriptions();
  expect(held.stray("docs", "docs://x")).toEqual({});
  held.added("docs", "docs://a");
  expect(held.stray("docs", "docs://x")).toBeUndefined();
  expect(held.stray("other", "docs://x")).toEqual({});
});

test("the gateway's own changes to a URI go one after another, and a subscribe of it waits for them", async () => {
  const held = subscriptions();
  const order: string[] = [];
  let answer = () => {};
  // A subscribe sent again (realign), its answer awaited, then an unsubscribe sent again behind it.
  const first = held.inTurn("docs", "docs://a", async () => {
    order.push("subscribe sent");
    await new Promise<void>((resolve) => (answer = resolve));
    order.push("subscribe answered");
    throw new Error("its failure reaches its own sender only");
  });
  const second = held.inTurn("docs", "docs://a", async () => void order.push("unsubscribe sent"));
  let waited = false;
  const waiting = held.corrected("docs", "docs://a").then(() => (waited = true));
  // Another URI waits for nothing.
  await held.corrected("docs", "docs://b");
  await Promise.resolve();
  expect(order).toEqual(["subscribe sent"]);
  expect(waited).toBe(false);
  answer();
  await expect(first).rejects.toThrow("its failure reaches its own sender only");
  await second;
  await waiting;
  expect(order).toEqual(["subscribe sent", "subscribe answered", "unsubscribe sent"]);
  expect(waited).toBe(true);
});

test("at most 256 stopped URIs per workload, the oldest forgotten first", () => {
  const stopped = new StoppedUris();
  for (let i = 0; i <= 256; i++) stopped.stop("w", `u://${i}`);
  expect(stopped.match("w", "u://0")).toBeUndefined();
  expect(stopped.match("w", "u://1")).toBe("u://1");
  expect(stopped.match("w", "u://256")).toBe("u://256");
  stopped.resume("w", "u://1");
  expect(stopped.match("w", "u://1")).toBeUndefined();
});
