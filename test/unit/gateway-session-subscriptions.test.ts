/**
 * What a gateway session follows at each workload (session-subscriptions.ts): a URI dropped is
 * forgotten and the session told with a warning, unless its logging level is above warning.
 */
import { expect, test } from "bun:test";
import type { LoggingLevel } from "@modelcontextprotocol/client";
import { SessionSubscriptions } from "../../src/gateway/session-subscriptions.ts";

function subscriptions(level?: LoggingLevel) {
  const sent: { level: string; logger: string; data: string }[] = [];
  const logged: string[] = [];
  const held = new SessionSubscriptions({
    level: () => level,
    notify: (params) => void sent.push(params),
    log: (text) => void logged.push(text),
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
