/**
 * A session's resource subscriptions through the gateway outlive the member session that held them.
 * A subscription lives in the member session; when the workload restarts (its server forgets the
 * session, or the workload leaves the group and comes back) or expires the session (a client that only
 * waits for updates sends no requests), the gateway opens a new member session,
 * and used to follow nothing there: the client waited for updates that never came. Now the new
 * session subscribes again (a 2025-era workload with `resources/subscribe`, a 2026-07-28 one with a
 * `subscriptions/listen` stream), and a URI the workload no longer takes reaches the client as a
 * `notifications/message` warning, as does one a 2026-07-28 workload leaves out of a later
 * acknowledgement of the shared stream.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { createMcpHandler, McpServer, ResourceTemplate } from "@modelcontextprotocol/server";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { type MemberServer, startMemberServer } from "../fixtures/member-server.ts";
import { createTestGroup, PROBE_FIXTURE, receivesUpdate, type TestGroup, until } from "../support/gateway-group.ts";

// Real processes, restarted for real: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

/**
 * A 2026-07-28-only server (SDK v2) whose resources `test://n/{id}` can be followed. It leaves the URIs in
 * `withdrawn` out of every listen it is asked for (as a server that no longer offers them), so they are
 * missing from its acknowledgement; `requested` holds the URIs of the last listen naming any.
 */
function startModernServer() {
  const withdrawn = new Set<string>();
  let requested: string[] = [];
  const handler = createMcpHandler(
    () => {
      const server = new McpServer(
        { name: "modern-docs", version: "1.0.0" },
        { capabilities: { resources: { subscribe: true, listChanged: true } } },
      );
      server.registerResource("n", new ResourceTemplate("test://n/{id}", { list: undefined }), {}, async (uri) => ({
        contents: [{ uri: uri.href, text: "n" }],
      }));
      return server;
    },
    { legacy: "reject" },
  );
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      if (req.headers.get("mcp-method") !== "subscriptions/listen") return handler.fetch(req);
      const body = (await req.json()) as { params: { notifications?: { resourceSubscriptions?: string[] } } };
      const filter = body.params.notifications;
      if (filter?.resourceSubscriptions) {
        requested = filter.resourceSubscriptions;
        filter.resourceSubscriptions = requested.filter((uri) => !withdrawn.has(uri));
      }
      const headers = new Headers(req.headers);
      headers.delete("content-length");
      return handler.fetch(
        new Request(req.url, { method: "POST", headers, body: JSON.stringify(body), signal: req.signal }),
      );
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}/mcp`,
    withdrawn,
    requested: () => requested,
    updated: (uri: string) => handler.notify.resourceUpdated(uri),
    stop: () => server.stop(true),
  };
}

const A = "docs://a";
const B = "docs://b";
let legacy: MemberServer;
let modern: ReturnType<typeof startModernServer>;
let group: TestGroup;
let gatewayUrl: string;
let probeUrl: string;

const legacyMember = (port?: number, refuse?: string[]) =>
  startMemberServer({
    name: "docs",
    resources: [A, B],
    subscribable: refuse ? { refuse } : {},
    ...(port !== undefined ? { port } : {}),
  });

beforeAll(async () => {
  legacy = legacyMember();
  modern = startModernServer();
  group = await createTestGroup();
  group.run(legacy.url, "docs", "resub");
  group.run(modern.url, "nd", "resub");
  probeUrl = group.run(await group.packageOf(PROBE_FIXTURE), "probe", "resub");
  gatewayUrl = (await group.gateway("resub")).url;
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  await legacy?.stop();
  modern?.stop();
});

/** A 2025-era client of the gateway, with the resource updates and log messages it has been sent. */
async function subscriber(url = gatewayUrl) {
  const client = new Client({ name: "resubscriber", version: "1.0.0" });
  const updates: string[] = [];
  const warnings: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    if (n.params.level === "warning") warnings.push(String(n.params.data));
  });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  return {
    client,
    updates,
    warnings,
    async end() {
      await transport.terminateSession().catch(() => {});
      await client.close();
    },
  };
}

/** Polls `send` (which makes the workload announce an update) until the session has received `uri`'s. */
const receives = (updates: string[], uri: string, send: () => unknown) => receivesUpdate(updates, uri, send, 30_000);

test("a 2025-era workload whose server restarts and forgets the session: the new session is subscribed again, a refusal reported", async () => {
  const session = await subscriber();
  try {
    await session.client.subscribeResource({ uri: A });
    await session.client.subscribeResource({ uri: B });
    expect(await receives(session.updates, A, () => legacy.updated(A))).toBe(true);
    // The server restarts on its port and now refuses B; the workload (its forwarder) stays in the group.
    const port = Number(new URL(legacy.url).port);
    await legacy.stop();
    legacy = legacyMember(port, [B]);
    // No request of the session's: the gateway notices the forgotten session by itself.
    expect(await until(() => legacy.subscribers(A) === 1, 30_000)).toBe(true);
    expect(await receives(session.updates, A, () => legacy.updated(A))).toBe(true);
    expect(await until(() => session.warnings.some((text) => text.includes(JSON.stringify(B))), 10_000)).toBe(true);
    expect(session.warnings.join("\n")).toContain("workload 'docs' no longer sends updates of");
    expect(session.warnings.join("\n")).not.toContain(JSON.stringify(A));
  } finally {
    await session.end();
  }
});

test("a 2025-era workload whose server stays away past the gateway's reopenings of its event stream: once back, the session is subscribed again", async () => {
  const session = await subscriber();
  try {
    await session.client.subscribeResource({ uri: A });
    expect(await until(() => legacy.subscribers(A) === 1, 10_000)).toBe(true);
    const port = Number(new URL(legacy.url).port);
    await legacy.stop();
    // Restarting for a while: every request is answered 503, so no 404 tells the gateway anything.
    let initializes = 0;
    const restarting = Bun.serve({
      hostname: "127.0.0.1",
      port,
      async fetch(req) {
        if (req.method === "POST" && ((await req.json()) as { method?: string }).method === "initialize") initializes++;
        return new Response("restarting", { status: 503 });
      },
    });
    // The gateway gives up on the stream it cannot reopen and tries a new member session.
    expect(await until(() => initializes > 0, 30_000)).toBe(true);
    restarting.stop(true);
    legacy = legacyMember(port);
    expect(await until(() => legacy.subscribers(A) === 1, 30_000)).toBe(true);
    expect(await receives(session.updates, A, () => legacy.updated(A))).toBe(true);
  } finally {
    await session.end();
  }
});

test("a stdio workload whose server is killed and restarted: the session follows its resource again", async () => {
  const session = await subscriber();
  // Another client of the workload itself makes the server announce the update (the bridge passes it
  // only to the sessions subscribed to it).
  const connectDirect = async () => {
    const client = new Client({ name: "direct", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(probeUrl)));
    return client;
  };
  let direct = await connectDirect();
  const announce = () =>
    direct.callTool({ name: "update_resource", arguments: { uri: "probe://r1" } }).catch(() => undefined);
  try {
    await session.client.subscribeResource({ uri: "probe://r1" });
    expect(await receives(session.updates, "probe://r1", announce)).toBe(true);
    // The server exits (the call is answered with an error then); the supervisor starts it again.
    await direct.callTool({ name: "exit", arguments: { code: 1 } }).catch(() => undefined);
    await direct.close();
    // The direct client's session went with the old server: a new one, once the workload answers again.
    expect(
      await until(async () => {
        const next = await connectDirect().catch(() => undefined);
        if (next !== undefined) direct = next;
        return next !== undefined;
      }, 30_000),
    ).toBe(true);
    expect(await receives(session.updates, "probe://r1", announce)).toBe(true);
  } finally {
    await direct.close();
    await session.end();
  }
});

test("a member session that expires while the client only waits for updates: another is opened and subscribed", async () => {
  // The workload's sessions end after 2 s without requests; a client that only follows a resource sends none.
  process.env.MCPMGR_SESSION_IDLE_TIMEOUT = "2s";
  let idle: TestGroup;
  let url: string;
  try {
    idle = await createTestGroup();
    url = idle.run(await idle.packageOf(PROBE_FIXTURE), "idler", "idle-subs");
  } finally {
    delete process.env.MCPMGR_SESSION_IDLE_TIMEOUT;
  }
  const direct = new Client({ name: "direct", version: "1.0.0" });
  let session: Awaited<ReturnType<typeof subscriber>> | undefined;
  try {
    session = await subscriber((await idle.gateway("idle-subs")).url);
    await direct.connect(new StreamableHTTPClientTransport(new URL(url)));
    const subscribes = async () => {
      const result = (await direct.callTool({ name: "stats", arguments: {} })) as { content: { text: string }[] };
      return (JSON.parse(result.content[0]?.text ?? "{}") as { subscribe: Record<string, number> }).subscribe;
    };
    await session.client.subscribeResource({ uri: "probe://r1" });
    // The direct client's polling keeps its own session alive; the gateway's expires, and is replaced.
    expect(await until(async () => ((await subscribes())["probe://r1"] ?? 0) >= 2, 20_000)).toBe(true);
    const updates = session.updates;
    const announce = () => direct.callTool({ name: "update_resource", arguments: { uri: "probe://r1" } });
    expect(await receives(updates, "probe://r1", announce)).toBe(true);
  } finally {
    await direct.close();
    await session?.end();
    await idle.cleanup();
  }
});

test("a 2026-07-28 workload stopped and started again: the new connection's stream names the session's resources", async () => {
  const session = await subscriber();
  try {
    await session.client.subscribeResource({ uri: "test://n/1" });
    expect(await receives(session.updates, "test://n/1", () => modern.updated("test://n/1"))).toBe(true);
    expect(group.mcpmgr("stop", "nd").code).toBe(0);
    // The gateway saw it leave (its resources are no longer routed), then it comes back on its port.
    expect(
      await until(async () => {
        const read = await session.client.readResource({ uri: "test://n/1" }).catch((err: unknown) => err);
        return read instanceof Error;
      }, 10_000),
    ).toBe(true);
    expect(group.mcpmgr("start", "nd").code).toBe(0);
    expect(await receives(session.updates, "test://n/1", () => modern.updated("test://n/1"))).toBe(true);
    // A later acknowledgement on the new connection that leaves the URI out is no doing of the restart:
    // the warning says so, and no more (review 29).
    modern.withdrawn.add("test://n/1");
    await session.client.subscribeResource({ uri: "test://n/2" });
    expect(await until(() => session.warnings.some((text) => text.includes('"test://n/1"')), 10_000)).toBe(true);
    const warning = session.warnings.find((text) => text.includes('"test://n/1"'));
    expect(warning).toContain("the workload no longer acknowledges them on the subscription stream");
    expect(warning).not.toContain("its session was replaced");
  } finally {
    modern.withdrawn.clear();
    await session.end();
  }
});

test("a 2026-07-28 workload that acknowledges a new URI but leaves out an older one: the session is told, and the older one is dropped", async () => {
  const session = await subscriber();
  try {
    await session.client.subscribeResource({ uri: "test://n/old" });
    expect(await receives(session.updates, "test://n/old", () => modern.updated("test://n/old"))).toBe(true);
    modern.withdrawn.add("test://n/old");
    await session.client.subscribeResource({ uri: "test://n/new" });
    expect(
      await until(() => session.warnings.some((text) => text.includes(JSON.stringify("test://n/old"))), 10_000),
    ).toBe(true);
    expect(await receives(session.updates, "test://n/new", () => modern.updated("test://n/new"))).toBe(true);
    // Dropped as a refused subscribe is refused: the next stream no longer asks for it.
    modern.withdrawn.clear();
    await session.client.subscribeResource({ uri: "test://n/third" });
    expect(modern.requested()).toEqual(["test://n/new", "test://n/third"]);
  } finally {
    modern.withdrawn.clear();
    await session.end();
  }
});
