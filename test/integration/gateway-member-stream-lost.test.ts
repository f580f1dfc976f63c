/**
 * A member session whose event stream the gateway cannot reopen, while the session itself still
 * answers (a hop between them lost the stream and refuses it again; a server that still holds the old
 * stream answers 409): the gateway opens a new member session for the client's subscriptions, and the
 * calls in flight on the old one are not cut by it. The old session is ended once they are done
 * (review 29: it was ended at once, and every call the client had in flight at that workload failed).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { type MemberServer, startMemberServer } from "../fixtures/member-server.ts";
import { createTestGroup, receivesUpdate, type TestGroup, until } from "../support/gateway-group.ts";

setDefaultTimeout(60_000);

const A = "flaky://a";
let member: MemberServer;
let group: TestGroup;
let gatewayUrl: string;

/** Whether `A`'s updates reach the client: the member announces one until it arrives. */
const receives = (updates: string[]) => receivesUpdate(updates, A, () => member.updated(A));

beforeAll(async () => {
  member = startMemberServer({ name: "flaky", tools: ["nap"], resources: [A], subscribable: {} });
  group = await createTestGroup();
  group.run(member.url, "flaky", "lost");
  gatewayUrl = (await group.gateway("lost")).url;
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  await member?.stop();
});

test("an event stream that cannot be reopened: a new member session for the subscription, the call in flight answered", async () => {
  const client = new Client({ name: "lost", version: "1.0.0" });
  const updates: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
  const transport = new StreamableHTTPClientTransport(new URL(gatewayUrl));
  await client.connect(transport);
  try {
    await client.subscribeResource({ uri: A });
    expect(await until(() => member.subscribers(A) === 1, 10_000)).toBe(true);
    expect(await receives(updates)).toBe(true);
    const opened = member.sessionsOpened;
    const call = client.callTool({ name: "flaky_nap", arguments: {} }).catch((err: unknown) => err);
    expect(await until(() => member.sessionCount >= 1, 5_000)).toBe(true);
    // The client session's member session opened its stream after the gateway's own catalog session.
    member.breakEventStream();
    // The gateway gives up reopening the stream and opens a new member session, subscribed again...
    expect(await until(() => member.sessionsOpened > opened && member.subscribers(A) >= 1, 20_000)).toBe(true);
    // ...while the call it had in flight on the old one goes on to its answer.
    const result = await call;
    expect(result).not.toBeInstanceOf(Error);
    expect(JSON.stringify(result)).toContain("flaky ran nap");
    expect(await receives(updates)).toBe(true);
    // The old session is ended once its call is answered (the new one and the gateway's own go on).
    expect(await until(() => member.deletes.length === 1 && member.sessionCount === 2, 10_000)).toBe(true);
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
});
