/**
 * Sessions belong to the caller that opened them, on every transport, with OIDC on (a real
 * oidc-provider; two clients of it are the two callers): another caller who learns a
 * session's id gets 404 for POST, GET and DELETE alike, and nothing reaches the session —
 * through the stdio bridge (`run`, streamable HTTP and `--proxy-mode sse`), through `proxy`
 * in front of a streamable-HTTP server and of a legacy SSE server, and through `gateway`.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { JWT_RESOURCE, startAuthServer, type AuthServer } from "../support/auth-server.ts";
import {
  CONFORMANCE_FIXTURE,
  runStdioFixture,
  startConformanceServer,
  type RunningFixture,
} from "../support/conformance.ts";
import { createTestGroup, type TestGroup } from "../support/gateway-group.ts";
import { startEverything, startProxy, type Running } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const OIDC = (issuer: string) => [
  "--oidc-issuer",
  issuer,
  "--oidc-audience",
  JWT_RESOURCE,
  "--oidc-insecure-allow-http",
  "--jwks-allow-private-ip",
];

let auth: AuthServer;
let alice: string;
let bob: string;

beforeAll(async () => {
  auth = await startAuthServer();
  alice = await auth.token();
  bob = await auth.token({ client: "otherService" });
}, 30_000);

afterAll(async () => {
  await auth?.stop();
});

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "sessions-test", version: "1" } },
};

function send(url: string, token: string, init: { method?: string; body?: unknown; session?: string } = {}) {
  return fetch(url, {
    method: init.method ?? "POST",
    headers: {
      authorization: `Bearer ${token}`,
      accept: init.method === "GET" ? "text/event-stream" : "application/json, text/event-stream",
      ...(init.body !== undefined ? { "content-type": "application/json" } : {}),
      ...(init.session !== undefined ? { "mcp-session-id": init.session, "mcp-protocol-version": "2025-06-18" } : {}),
    },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
}

/** The JSON-RPC message of a JSON or an SSE answer. */
async function messageOf(response: Response): Promise<{ id?: unknown; result?: unknown; error?: { code: number } }> {
  const text = await response.text();
  if (!(response.headers.get("content-type") ?? "").includes("text/event-stream")) return JSON.parse(text);
  const events: EventSourceMessage[] = [];
  createParser({ onEvent: (event) => events.push(event) }).feed(text);
  return JSON.parse(events.at(-1)?.data ?? "null");
}

async function openSession(url: string, token: string): Promise<string> {
  const response = await send(url, token, { body: initialize });
  expect(response.status).toBe(200);
  const session = response.headers.get("mcp-session-id") as string;
  expect(session).toBeTruthy();
  await response.text();
  const initialized = await send(url, token, {
    body: { jsonrpc: "2.0", method: "notifications/initialized" },
    session,
  });
  expect(initialized.status).toBe(202);
  return session;
}

/** Bob presents Alice's session id with his own valid token: every method is 404, and her session lives on. */
async function expectSessionBound(url: string): Promise<void> {
  const session = await openSession(url, alice);
  const list = { jsonrpc: "2.0", id: 2, method: "tools/list" };
  const intruder = await send(url, bob, { body: list, session });
  expect(intruder.status).toBe(404);
  expect((await messageOf(intruder)).error?.code).toBe(-32001);
  const stream = await send(url, bob, { method: "GET", session });
  expect(stream.status).toBe(404);
  await stream.body?.cancel();
  const deleted = await send(url, bob, { method: "DELETE", session });
  expect(deleted.status).toBe(404);
  await deleted.body?.cancel();
  // Alice's session is untouched: it still answers her, and she can end it.
  const own = await send(url, alice, { body: list, session });
  expect(own.status).toBe(200);
  expect(((await messageOf(own)).result as { tools: unknown[] }).tools.length).toBeGreaterThan(0);
  const ended = await send(url, alice, { method: "DELETE", session });
  expect(ended.status).toBeLessThan(300);
  await ended.body?.cancel();
}

/** A legacy SSE stream: its events as they arrive. */
async function openLegacyStream(url: string, token: string) {
  const controller = new AbortController();
  const response = await fetch(url, {
    headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" },
    signal: controller.signal,
  });
  expect(response.status).toBe(200);
  const events: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => events.push(event) });
  const decoder = new TextDecoder();
  void (async () => {
    try {
      for await (const chunk of response.body as ReadableStream<Uint8Array>) parser.feed(decoder.decode(chunk));
    } catch {
      // closed by the test
    }
  })();
  const next = async (predicate: (event: EventSourceMessage) => boolean, what: string) => {
    for (let i = 0; i < 400; i++) {
      const found = events.find(predicate);
      if (found) return found;
      await Bun.sleep(25);
    }
    throw new Error(`no ${what} on the legacy stream`);
  };
  const endpoint = new URL((await next((e) => e.event === "endpoint", "endpoint event")).data, url);
  return { endpoint, events, next, close: () => controller.abort() };
}

const messageIds = (events: EventSourceMessage[]) =>
  events.filter((e) => e.event === "message" || e.event === undefined).map((e) => JSON.parse(e.data).id);

/**
 * Bob POSTs into Alice's legacy session (with his valid token): 404, and nothing of his reaches
 * her session; her own messages still work. `variants` are other spellings of her message URL.
 */
async function expectLegacySessionBound(sseUrl: string, variants: (endpoint: URL) => string[] = () => []) {
  const stream = await openLegacyStream(sseUrl, alice);
  try {
    const post = (url: string, token: string, id: number) =>
      fetch(url, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id, method: "ping" }),
      });
    const init = await post(stream.endpoint.href, alice, 0);
    expect(init.status).toBeLessThan(300);
    await init.body?.cancel();
    for (const [i, url] of [stream.endpoint.href, ...variants(stream.endpoint)].entries()) {
      const intruder = await post(url, bob, 900 + i);
      expect({ url, status: intruder.status }).toEqual({ url, status: 404 });
      await intruder.body?.cancel();
    }
    const own = await post(stream.endpoint.href, alice, 7);
    expect(own.status).toBe(202);
    await own.body?.cancel();
    await stream.next((e) => e.data.includes('"id":7'), "answer to Alice's ping");
    expect(messageIds(stream.events).filter((id) => id >= 900)).toEqual([]);
  } finally {
    stream.close();
  }
}

describe("the stdio bridge (mcpmgr run)", () => {
  let streamable: Awaited<ReturnType<typeof runStdioFixture>>;
  let legacy: Awaited<ReturnType<typeof runStdioFixture>>;

  beforeAll(async () => {
    const run = (...extra: string[]) =>
      runStdioFixture(CONFORMANCE_FIXTURE, { args: [...OIDC(auth.issuer), ...extra] });
    [streamable, legacy] = await Promise.all([run(), run("--proxy-mode", "sse")]);
  }, 60_000);
  afterAll(async () => {
    await Promise.allSettled([streamable?.stop(), legacy?.stop()]);
  });

  test("streamable HTTP: another caller's POST, GET and DELETE on a session are 404", async () => {
    await expectSessionBound(streamable.url);
  });

  test("legacy SSE: another caller's message to a session is 404 and never reaches it", async () => {
    await expectLegacySessionBound(legacy.url);
  });
});

describe("mcpmgr proxy", () => {
  let fixture: RunningFixture;
  let everything: Awaited<ReturnType<typeof startEverything>>;
  let streamable: Awaited<ReturnType<typeof startProxy>>;
  let legacy: Awaited<ReturnType<typeof startProxy>>;

  beforeAll(async () => {
    [fixture, everything] = await Promise.all([startConformanceServer(), startEverything("sse")]);
    [streamable, legacy] = await Promise.all([
      startProxy(fixture.url, OIDC(auth.issuer)),
      startProxy(everything.url, OIDC(auth.issuer)),
    ]);
  }, 60_000);
  afterAll(async () => {
    await Promise.allSettled([streamable?.stop(), legacy?.stop(), fixture?.stop(), everything?.stop()]);
  });

  test("streamable HTTP: another caller's POST, GET and DELETE on a session are 404", async () => {
    await expectSessionBound(streamable.url);
  });

  test("a session the proxy did not see opened is not served (it cannot tell whose it is)", async () => {
    const direct = await fetch(fixture.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify(initialize),
    });
    const session = direct.headers.get("mcp-session-id") as string;
    await direct.text();
    expect(session).toBeTruthy();
    const response = await send(streamable.url, alice, {
      body: { jsonrpc: "2.0", id: 2, method: "tools/list" },
      session,
    });
    expect(response.status).toBe(404);
    expect((await messageOf(response)).error?.code).toBe(-32001);
  });

  test("legacy SSE: another caller's message is 404 under any spelling of the session's URL", async () => {
    await expectLegacySessionBound(legacy.url, (endpoint) => {
      const id = endpoint.searchParams.get("sessionId") as string;
      const origin = endpoint.origin;
      return [
        `${origin}${endpoint.pathname}?sessionId=${id}&other=1`,
        `${origin}${endpoint.pathname}?other=1&sessionId=${encodeURIComponent(id).replace(/-/g, "%2D")}`,
        `${origin}${endpoint.pathname}?sessionId=${id}&sessionId=${id}`,
        `${origin}${endpoint.pathname}/?sessionId=${id}`,
        `${origin}/x/..${endpoint.pathname}?sessionId=${id}`,
      ];
    });
  });
});

describe("mcpmgr gateway", () => {
  let group: TestGroup;
  let gateway: Running & { url: string };

  beforeAll(async () => {
    group = await createTestGroup();
    group.run(await group.packageOf(CONFORMANCE_FIXTURE), "bound-one", "default", "stdio");
    gateway = await group.gateway("default", ...OIDC(auth.issuer));
  }, 120_000);
  afterAll(async () => {
    await group?.cleanup();
  });

  test("another caller's POST, GET and DELETE on a session are 404", async () => {
    await expectSessionBound(gateway.url);
  });
});
