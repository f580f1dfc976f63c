/**
 * A 2025-era session following many resources of a workload that speaks only 2026-07-28, through the
 * gateway. Each subscription used to be a listen stream of its own, and each stream an HTTP request
 * kept in flight: Bun's fetch runs at most 256 at once for the whole process, so one session with
 * 255 subscriptions stalled every request the gateway made to any workload (another client could
 * not even read a resource). Now one stream per session connection names all its URIs.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { type ListenMember, startListenMember } from "../fixtures/listen-member.ts";
import { createTestGroup, type TestGroup, until } from "../support/gateway-group.ts";

setDefaultTimeout(60_000);

let upstream: ListenMember;
let group: TestGroup;
let gatewayUrl: string;

beforeAll(async () => {
  upstream = startListenMember();
  group = await createTestGroup();
  group.run(upstream.url, "docs", "subs");
  gatewayUrl = (await group.gateway("subs")).url;
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  await upstream?.stop();
});

const uri = (n: number | string) => `test://doc/${n}`;

async function subscriber() {
  const client = new Client({ name: "subscriber", version: "1.0.0" });
  const updates: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
  const transport = new StreamableHTTPClientTransport(new URL(gatewayUrl));
  await client.connect(transport);
  return {
    client,
    updates,
    async end() {
      await transport.terminateSession();
      await client.close();
    },
  };
}

test("a session's subscriptions at a 2026-07-28-only workload share one listen stream, and updates reach it", async () => {
  const session = await subscriber();
  try {
    for (let i = 0; i < 40; i++) expect(await session.client.subscribeResource({ uri: uri(i) })).toEqual({});
    expect(await until(() => upstream.openListens === 1, 10_000)).toBe(true);
    upstream.updated(uri(0));
    upstream.updated(uri(39));
    expect(await until(() => session.updates.includes(uri(0)) && session.updates.includes(uri(39)), 10_000)).toBe(true);
    expect(await session.client.unsubscribeResource({ uri: uri(39) })).toEqual({});
    expect(await until(() => upstream.openListens === 1, 10_000)).toBe(true);
    session.updates.length = 0;
    upstream.updated(uri(39));
    upstream.updated(uri(1));
    expect(await until(() => session.updates.includes(uri(1)), 10_000)).toBe(true);
    expect(session.updates).not.toContain(uri(39));
  } finally {
    await session.end();
  }
  expect(await until(() => upstream.openListens === 0, 10_000)).toBe(true);
});

test("a session following 256 resources leaves the gateway's other requests unhindered", async () => {
  const session = await subscriber();
  const other = new Client({ name: "other", version: "1.0.0" });
  try {
    for (let i = 0; i < 256; i++) {
      const subscribed = await Promise.race([
        session.client.subscribeResource({ uri: uri(i) }),
        Bun.sleep(10_000).then(() => `subscription ${i} hung`),
      ]);
      expect(subscribed).toEqual({});
    }
    await other.connect(new StreamableHTTPClientTransport(new URL(gatewayUrl)));
    const read = await Promise.race([other.readResource({ uri: uri("x") }), Bun.sleep(10_000).then(() => "read hung")]);
    expect(read).toMatchObject({ contents: [{ uri: uri("x"), text: "hello" }] });
    await expect(session.client.subscribeResource({ uri: uri(256) })).rejects.toThrow(/already follows 256 resources/);
  } finally {
    await other.close();
    await session.end();
  }
});

test("an update sent while the session's listen stream is down, before its reopening, still reaches the client", async () => {
  const session = await subscriber();
  try {
    for (const n of ["a", "b"]) expect(await session.client.subscribeResource({ uri: uri(n) })).toEqual({});
    expect(await until(() => upstream.openListens === 1, 10_000)).toBe(true);
    const opened = upstream.listensOpened;
    upstream.cutListens();
    session.updates.length = 0;
    // Sent while no listen stream is open: it reaches no one.
    upstream.updated(uri("b"));
    // The gateway opens the stream again...
    expect(await until(() => upstream.listensOpened > opened && upstream.openListens === 1, 10_000)).toBe(true);
    // ...and the client hears of b all the same, with nothing more sent by the workload.
    expect(await until(() => session.updates.includes(uri("b")), 5_000)).toBe(true);
    // The workload's own updates still come through.
    session.updates.length = 0;
    expect(
      await until(() => {
        upstream.updated(uri("a"));
        return session.updates.includes(uri("a"));
      }, 10_000),
    ).toBe(true);
  } finally {
    await session.end();
  }
});
