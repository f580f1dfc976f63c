/**
 * The gateway's own announcements of URIs whose updates may have been lost (changed-maybe.ts): a new
 * member session's at once; a reopened stream's at once, then at most once more per pause however often
 * it is reopened meanwhile; nothing after the session ended.
 */
import { expect, test } from "bun:test";
import { ChangedMaybe } from "../../src/gateway/changed-maybe.ts";
import { until } from "../support/gateway-group.ts";

test("URIs followed again on a new member session are announced at once, every time", () => {
  const sent: string[] = [];
  const announce = new ChangedMaybe((uri) => void sent.push(uri), 60_000);
  announce.followedAgain(["a://1", "a://2"]);
  announce.followedAgain(["a://1"]);
  expect(sent).toEqual(["a://1", "a://2", "a://1"]);
});

test("reopenings within the pause make one announcement at its end, of what is followed then", async () => {
  const sent: string[] = [];
  const announce = new ChangedMaybe((uri) => void sent.push(uri), 300);
  let followed = ["a://1"];
  announce.reopened("w", () => followed);
  expect(sent).toEqual(["a://1"]);
  announce.reopened("w", () => followed);
  announce.reopened("w", () => followed);
  // Another workload's reopening has its own pause.
  announce.reopened("v", () => ["v://1"]);
  expect(sent).toEqual(["a://1", "v://1"]);
  followed = ["a://2"];
  expect(await until(() => sent.length === 3, 5_000)).toBe(true);
  expect(sent).toEqual(["a://1", "v://1", "a://2"]);
});

test("nothing is announced after the session ended, not even a reopening waiting for its pause", async () => {
  const sent: string[] = [];
  const announce = new ChangedMaybe((uri) => void sent.push(uri), 100);
  announce.reopened("w", () => ["a://1"]);
  announce.reopened("w", () => ["a://1"]);
  announce.close();
  announce.followedAgain(["a://2"]);
  announce.reopened("w", () => ["a://3"]);
  await Bun.sleep(300);
  expect(sent).toEqual(["a://1"]);
});
