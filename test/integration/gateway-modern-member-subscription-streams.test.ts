/**
 * A 2025-era session following many resources of a workload that speaks only 2026-07-28, through the
 * gateway. Each subscription used to be a listen stream of its own, and each stream an HTTP request
 * kept in flight: Bun's fetch runs at most 256 at once for the whole process, so one session with
 * 255 subscriptions stalled every request the gateway made to any workload (another client could
 * not even read a resource). Now one stream per session connection names all its URIs.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { createMcpHandler, McpServer, ResourceTemplate } from "@modelcontextprotocol/server";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { createTestGroup, type TestGroup, until } from "../support/gateway-group.ts";

setDefaultTimeout(60_000);

function startResourceServer() {
  const handler = createMcpHandler(
    () => {
      const server = new McpServer(
        { name: "resource-server", version: "1.0.0" },
        { capabilities: { resources: { subscribe: true, listChanged: true } } },
      );
      server.registerResource(
        "doc",
        new ResourceTemplate("test://doc/{n}", { list: undefined }),
        { description: "documents" },
        async (uri) => ({
          contents: [{ uri: uri.href, text: "hello" }],
        }),
      );
      return server;
    },
    { legacy: "reject" },
  );
  let listens = 0;
  let listensOpened = 0;
  /** How to end each listen stream open, as a hop that dropped it would. */
  const cuts = new Set<() => void>();
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const listen = req.headers.get("mcp-method") === "subscriptions/listen";
      const body = listen ? await req.clone().text() : "";
      if (!listen || !body.includes("test://doc/")) return handler.fetch(req);
      listens++;
      listensOpened++;
      let counted = true;
      const ended = () => {
        if (counted) listens--;
        counted = false;
      };
      req.signal.addEventListener("abort", ended);
      const response = await handler.fetch(req);
      if (response.body === null) return response;
      const inner = response.body.getReader();
      let open = true;
      const relayed = new ReadableStream<Uint8Array>({
        start(controller) {
          const cut = () => {
            if (!open) return;
            open = false;
            cuts.delete(cut);
            ended();
            void inner.cancel().catch(() => {});
            controller.close();
          };
          cuts.add(cut);
          void (async () => {
            while (open) {
              const chunk = await inner.read().catch(() => ({ done: true as const, value: undefined }));
              if (chunk.done) return cut();
              if (open) controller.enqueue(chunk.value);
            }
          })();
        },
        cancel: () => {
          open = false;
          ended();
          void inner.cancel().catch(() => {});
        },
      });
      return new Response(relayed, { status: response.status, headers: response.headers });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}/mcp`,
    updated: (uri: string) => handler.notify.resourceUpdated(uri),
    openListens: () => listens,
    listensOpened: () => listensOpened,
    /** Ends every listen stream open (no answer first); what is sent until the next opens reaches no one. */
    cutListens: () => {
      for (const cut of [...cuts]) cut();
    },
    stop: () => server.stop(true),
  };
}

let upstream: ReturnType<typeof startResourceServer>;
let group: TestGroup;
let gatewayUrl: string;

beforeAll(async () => {
  upstream = startResourceServer();
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
    expect(await until(() => upstream.openListens() === 1, 10_000)).toBe(true);
    upstream.updated(uri(0));
    upstream.updated(uri(39));
    expect(await until(() => session.updates.includes(uri(0)) && session.updates.includes(uri(39)), 10_000)).toBe(true);
    expect(await session.client.unsubscribeResource({ uri: uri(39) })).toEqual({});
    expect(await until(() => upstream.openListens() === 1, 10_000)).toBe(true);
    session.updates.length = 0;
    upstream.updated(uri(39));
    upstream.updated(uri(1));
    expect(await until(() => session.updates.includes(uri(1)), 10_000)).toBe(true);
    expect(session.updates).not.toContain(uri(39));
  } finally {
    await session.end();
  }
  expect(await until(() => upstream.openListens() === 0, 10_000)).toBe(true);
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
    expect(await until(() => upstream.openListens() === 1, 10_000)).toBe(true);
    const opened = upstream.listensOpened();
    upstream.cutListens();
    session.updates.length = 0;
    // Sent while no listen stream is open: it reaches no one.
    upstream.updated(uri("b"));
    // The gateway opens the stream again...
    expect(await until(() => upstream.listensOpened() > opened && upstream.openListens() === 1, 10_000)).toBe(true);
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
