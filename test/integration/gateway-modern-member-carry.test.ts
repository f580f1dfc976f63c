/**
 * A 2025-era session's subscribe at a workload that speaks only 2026-07-28 (a listen stream naming the
 * session's URIs, member-subscriptions.ts), in flight when the gateway replaces the connection it went on
 * (the member answered another request 404). The old connection is ended at once, its listen in flight
 * with it, and the new one's re-subscription named the URIs followed before: the subscribe is sent again
 * on the new connection (gateway-server.ts), whose listen then names it too. The member holds its listens
 * (`holdListens`) to keep the subscribe in flight.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { type ListenMember, startListenMember } from "../fixtures/listen-member.ts";
import { createTestGroup, receivesUpdate, type TestGroup, until } from "../support/gateway-group.ts";

setDefaultTimeout(60_000);

let member: ListenMember;
let group: TestGroup;
let gatewayUrl: string;

beforeAll(async () => {
  member = startListenMember();
  group = await createTestGroup();
  group.run(member.url, "docs", "carry");
  gatewayUrl = (await group.gateway("carry")).url;
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  member?.stop();
});

const doc = (n: string) => `test://doc/${n}`;

test("a subscribe in flight at a 2026-07-28 member while its connection is replaced is carried to the new one", async () => {
  const updates: string[] = [];
  const client = new Client({ name: "carry", version: "1.0.0" });
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
  const transport = new StreamableHTTPClientTransport(new URL(gatewayUrl));
  await client.connect(transport);
  try {
    expect(await client.subscribeResource({ uri: doc("a") })).toEqual({});
    expect(await until(() => member.openListens === 1, 10_000)).toBe(true);
    const opened = member.listensOpened;
    const releaseListens = member.holdListens();
    let outcome: unknown;
    try {
      // b's listen (naming a and b) waits on the first connection, unacknowledged.
      const subscribed = client.subscribeResource({ uri: doc("b") }).then(
        (answer) => (outcome = answer),
        (err: unknown) => (outcome = err),
      );
      expect(await until(() => member.heldListens === 1, 10_000)).toBe(true);
      // The member answers the session's next request 404: the gateway replaces the connection, whose
      // re-subscription names a alone (held too).
      member.refuseNext("resources/read");
      await expect(client.readResource({ uri: doc("x") })).rejects.toThrow(/failed to answer/);
      expect(await until(() => member.heldListens === 2, 10_000)).toBe(true);
      releaseListens();
      await subscribed;
    } finally {
      releaseListens();
    }
    // The first connection was ended at once (it has no notification on its way to wait for), its listen
    // in flight with it: b's subscribe is carried to the new connection, where its listen names a and b.
    expect(outcome).toEqual({});
    expect(await until(() => member.openListens === 1 && member.listensOpened > opened, 10_000)).toBe(true);
    expect(await receivesUpdate(updates, doc("b"), () => member.updated(doc("b")), 15_000)).toBe(true);
    expect(await receivesUpdate(updates, doc("a"), () => member.updated(doc("a")), 15_000)).toBe(true);
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
});
