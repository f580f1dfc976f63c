/**
 * What a gateway session follows at each workload (session-subscriptions.ts): a URI dropped is
 * forgotten and the session told with a warning, unless its logging level is above warning.
 */
import { expect, test } from "bun:test";
import type { LoggingLevel } from "@modelcontextprotocol/client";
import { SessionSubscriptions } from "../../src/gateway/session-subscriptions.ts";
import { bareUri } from "../../src/middleware/withheld-uri.ts";

function subscriptions(level?: LoggingLevel) {
  const sent: { level: string; logger: string; data: string }[] = [];
  const logged: string[] = [];
  const held = new SessionSubscriptions({
    level: () => level,
    notify: (params) => void sent.push(params),
    log: (text) => void logged.push(text),
    describe: (_workload, err) => String(err),
  });
  return { held, sent, logged };
}

test("a dropped URI is no longer held, and the session and the gateway's log are told", () => {
  const { held, sent, logged } = subscriptions();
  held.added("docs", "docs://a");
  held.added("docs", "docs://b");
  held.dropped("docs", ["docs://a"], "the workload no longer acknowledges them");
  expect(held.holds("docs")).toBe(true);
  const text = `workload 'docs' no longer sends updates of "docs://a" to this session: the workload no longer acknowledges them; subscribe again to retry`;
  expect(sent).toEqual([{ level: "warning", logger: "mcpmgr-gateway", data: text }]);
  expect(logged).toEqual([text]);
  held.removed("docs", "docs://b");
  expect(held.holds("docs")).toBe(false);
});

test("many URIs are named three at a time; a level above warning keeps the notice from the session only", () => {
  const { held, sent, logged } = subscriptions("error");
  const uris = ["u://1", "u://2", "u://3", "u://4", "u://5"];
  for (const uri of uris) held.added("w", uri);
  held.dropped("w", uris, "why");
  expect(sent).toEqual([]);
  expect(logged[0]).toContain(`"u://1", "u://2", "u://3" and 2 more`);
  expect(held.holds("w")).toBe(false);
  const warning = subscriptions("warning");
  warning.held.dropped("w", ["u://1"], "why");
  expect(warning.sent).toHaveLength(1);
});

test("a URI unsubscribed while its subscribe was in flight is not followed when that subscribe is answered", () => {
  const { held } = subscriptions();
  const first = held.admit("docs", "docs://a");
  held.removed("docs", "docs://a");
  expect(held.added("docs", "docs://a", first)).toBe(false);
  expect(held.follows("docs", "docs://a")).toBe(false);
  // A subscribe sent after the unsubscribe is the last word.
  const again = held.admit("docs", "docs://a");
  expect(held.added("docs", "docs://a", again)).toBe(true);
  expect(held.followed("docs")).toEqual(["docs://a"]);
});

test("a URI the workload dropped while the session's own subscribe of it was in flight is followed once that is answered", () => {
  const { held } = subscriptions();
  held.added("docs", "docs://a");
  const retry = held.admit("docs", "docs://a");
  held.dropped("docs", ["docs://a"], "the workload restarted");
  expect(held.added("docs", "docs://a", retry)).toBe(true);
  expect(held.follows("docs", "docs://a")).toBe(true);
});

test("a subscribe that failed leaves nothing behind for a later unsubscribe", () => {
  const { held } = subscriptions();
  const failed = held.admit("docs", "docs://a");
  held.settled(failed);
  held.removed("docs", "docs://a");
  expect(failed.withdrawn).toBe(false);
  expect(held.holds("docs")).toBe(false);
});

test("the gateway's log quotes the URIs as `shown` gives them (bare while a member holds secrets); the session's notice, as it subscribed", () => {
  const sent: { data: string }[] = [];
  const logged: string[] = [];
  const held = new SessionSubscriptions({
    level: () => undefined,
    notify: (params) => void sent.push(params),
    log: (text) => void logged.push(text),
    shown: bareUri,
    describe: (_workload, err) => String(err),
  });
  const uris = ["https://api.example.com/data?key=K3Y", "db://reader:K3Y@db.internal/orders"];
  for (const uri of uris) held.added("keyed", uri);
  held.dropped("keyed", uris, "why");
  expect(logged).toEqual([
    `workload 'keyed' no longer sends updates of "https://api.example.com/data?[withheld]", "db://[withheld]@db.internal/orders" to this session: why; subscribe again to retry`,
  ]);
  expect(sent[0]?.data).toContain(JSON.stringify(uris[0]));
});
