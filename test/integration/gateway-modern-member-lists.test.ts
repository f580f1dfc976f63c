/**
 * A workload that speaks only 2026-07-28 (here a remote URL in the group) has no session to announce
 * its list changes on: that revision delivers `notifications/tools/list_changed` only on a
 * `subscriptions/listen` stream the client opened. The gateway must keep one open to hear of changes
 * (and re-list), and open it again when it drops (a restart of the workload, an idle timeout on the
 * way), or its merged lists go stale for good. Before, it never opened one.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { startModernServer, type ModernServer } from "../fixtures/modern-server.ts";
import { createTestGroup, type TestGroup, until } from "../support/gateway-group.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let modern: ModernServer;
let group: TestGroup;

beforeAll(async () => {
  modern = startModernServer();
  group = await createTestGroup();
  group.run(modern.url, "mod", "modern-lists");
  await group.gateway("modern-lists");
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  modern?.stop();
});

const count = (method: string) => modern.seen.filter((request) => request.mcpMethod === method).length;

test("the gateway listens for a 2026-07-28 workload's list changes, and lists again when told", async () => {
  expect(await until(() => count("subscriptions/listen") >= 1)).toBe(true);
  const listed = count("tools/list");
  modern.toolsChanged();
  expect(await until(() => count("tools/list") > listed)).toBe(true);
});

test("a listen that drops is opened again, and changes announced on the new one are heard", async () => {
  expect(await until(() => count("subscriptions/listen") >= 1)).toBe(true);
  const listens = count("subscriptions/listen");
  const before = count("tools/list");
  modern.dropListens();
  expect(await until(() => count("subscriptions/listen") > listens)).toBe(true);
  // Changes may have been missed while it was down: it lists again once the stream is back.
  expect(await until(() => count("tools/list") > before)).toBe(true);
  const listed = count("tools/list");
  modern.toolsChanged();
  expect(await until(() => count("tools/list") > listed)).toBe(true);
});
