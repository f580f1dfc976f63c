/**
 * Bounds on what the gateway does for a session's resource subscriptions (review 29). It keeps every
 * URI a session follows at a workload and subscribes them all again on each new member session, so:
 *  - a session follows at most 256 resources of any one workload, a 2025-era one included (the
 *    gateway's own memory, and the wait before a new member session carries anything);
 *  - a workload that forgets each new member session soon after it is subscribed gets new ones less
 *    and less often (1 s doubling to 30 s), not one after another for as long as the session lasts.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type MemberServer, startMemberServer } from "../fixtures/member-server.ts";
import { createTestGroup, type TestGroup, until } from "../support/gateway-group.ts";

// Real processes, and a replacement rhythm observed over seconds.
setDefaultTimeout(60_000);

let many: MemberServer;
let forgetful: MemberServer;
let group: TestGroup;
let gatewayUrl: string;

beforeAll(async () => {
  many = startMemberServer({ name: "many", templates: ["many://{id}"], subscribable: {} });
  // Each member session is ended 300 ms after it opens: the gateway finds it forgotten (404) each time.
  forgetful = startMemberServer({
    name: "forgetful",
    resources: ["forgetful://a"],
    subscribable: {},
    forgetSessionsAfterMs: 300,
  });
  group = await createTestGroup();
  group.run(many.url, "many", "bounds");
  group.run(forgetful.url, "forgetful", "bounds");
  gatewayUrl = (await group.gateway("bounds")).url;
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  await many?.stop();
  await forgetful?.stop();
});

async function connect() {
  const client = new Client({ name: "bounds", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(gatewayUrl));
  await client.connect(transport);
  return {
    client,
    async end() {
      await transport.terminateSession().catch(() => {});
      await client.close();
    },
  };
}

test("a session follows at most 256 resources of a 2025-era workload", async () => {
  const session = await connect();
  try {
    for (let at = 0; at < 256; at += 32)
      await Promise.all(
        Array.from({ length: 32 }, (_, i) => session.client.subscribeResource({ uri: `many://${at + i}` })),
      );
    const past = await session.client.subscribeResource({ uri: "many://256" }).catch((err: unknown) => err);
    expect(past).toBeInstanceOf(Error);
    expect(String(past)).toContain("this session already follows 256 resources of the workload");
    // One already followed is no new one; after an unsubscribe there is room again.
    await session.client.subscribeResource({ uri: "many://0" });
    await session.client.unsubscribeResource({ uri: "many://0" });
    await session.client.subscribeResource({ uri: "many://256" });
    expect(many.subscribers("many://256")).toBe(1);
  } finally {
    await session.end();
  }
});

test("subscribes sent all at once count toward the 256 while they are in flight", async () => {
  const session = await connect();
  try {
    // 300 distinct URIs, none answered before the others are sent: the bound holds all the same.
    const outcomes = await Promise.allSettled(
      Array.from({ length: 300 }, (_, i) => session.client.subscribeResource({ uri: `many://burst-${i}` })),
    );
    const refused = outcomes.filter((outcome) => outcome.status === "rejected");
    expect(outcomes.length - refused.length).toBe(256);
    for (const outcome of refused)
      expect(String((outcome as PromiseRejectedResult).reason)).toContain(
        "this session already follows 256 resources of the workload",
      );
  } finally {
    await session.end();
  }
});

test("a workload that forgets every new member session soon after it opens: replaced less and less often", async () => {
  const session = await connect();
  try {
    await session.client.subscribeResource({ uri: "forgetful://a" });
    const since = performance.now();
    const first = forgetful.sessionsOpened;
    // Replaced at once, then after 1 s, 2 s, 4 s: four more sessions take 7 s and more (without the
    // pauses, each took the 300 ms, the event stream's reopening, and a handshake: under 5 s in all).
    expect(await until(() => forgetful.sessionsOpened >= first + 4, 30_000)).toBe(true);
    expect(performance.now() - since).toBeGreaterThan(6_500);
  } finally {
    await session.end();
  }
});
