/**
 * Streamable-HTTP wire rules of the stdio bridge front end (ARCHITECTURE.md §4), checked
 * with raw fetch against a real probe server process behind the bridge.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import {
  messagesOf,
  openGetStream,
  post,
  rawSession,
  rawToolJson,
  startProbeBridge,
  toolCall,
  type Bridged,
  waitFor,
  type JsonRpc,
  waitInFlight,
} from "../fixtures/bridge-probe-client.ts";

// Real server processes; generous for slow machines (each test here takes well under 3 s).
setDefaultTimeout(20_000);

let bridged: Bridged;

beforeAll(async () => {
  bridged = await startProbeBridge();
});

afterAll(async () => {
  await bridged?.stop();
});

const ping = (id: string | number): JsonRpc => ({ jsonrpc: "2.0", id, method: "ping" });

async function errorOf(res: Response): Promise<{ code: number; message: string }> {
  expect(res.headers.get("content-type")).toContain("application/json");
  const body = (await res.json()) as JsonRpc;
  expect(body.jsonrpc).toBe("2.0");
  return body.error as { code: number; message: string };
}

function openGet(headers: Record<string, string>, accept = "text/event-stream"): Promise<Response> {
  return fetch(bridged.url, { method: "GET", headers: { ...headers, accept } });
}

describe("batches", () => {
  test("a batch is rejected (400) in a 2025-06-18 session", async () => {
    const s = await rawSession(bridged.url, "2025-06-18");
    const res = await post(bridged.url, [ping(1), ping(2)], s.headers);
    expect(res.status).toBe(400);
    expect((await errorOf(res)).code).toBe(-32600);
  });

  test("a batch is answered as a JSON array in a 2025-03-26 session", async () => {
    const s = await rawSession(bridged.url, "2025-03-26");
    expect(s.result.protocolVersion).toBe("2025-03-26");
    const res = await post(
      bridged.url,
      [
        toolCall(1, "echo", { text: "first", delayMs: 20 }),
        { jsonrpc: "2.0", method: "notifications/roots/list_changed" },
        toolCall(2, "echo", { text: "second" }),
      ],
      s.headers,
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/json");
    const body = (await res.json()) as JsonRpc[];
    expect(Array.isArray(body)).toBe(true);
    const byId = Object.fromEntries(body.map((m) => [String(m.id), rawToolJson(m).text]));
    expect(byId).toEqual({ "1": "first", "2": "second" });
    expect(body).toHaveLength(2);
  });

  test("initialize cannot be batched", async () => {
    const res = await post(bridged.url, [
      {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "x", version: "1" } },
      },
    ]);
    expect(res.status).toBe(400);
  });
});

describe("sessions and headers", () => {
  test("an unsupported MCP-Protocol-Version is refused with 400", async () => {
    const s = await rawSession(bridged.url);
    const res = await post(bridged.url, ping(1), { ...s.headers, "mcp-protocol-version": "1999-01-01" });
    expect(res.status).toBe(400);
    await errorOf(res);
    // The same request with a supported version is fine.
    const ok = await post(bridged.url, ping(1), { ...s.headers, "mcp-protocol-version": "2025-03-26" });
    expect(ok.status).toBe(200);
  });

  test("a body that is not JSON is refused with -32700, one nested past the bound with -32600", async () => {
    const s = await rawSession(bridged.url);
    const send = (body: string) =>
      fetch(bridged.url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json", ...s.headers },
        body,
      });
    const notJson = await send('{"jsonrpc":"2.0","id":1,');
    expect(notJson.status).toBe(400);
    expect(await errorOf(notJson)).toEqual({ code: -32700, message: "Parse error: the body is not JSON" });
    const deep = await send(`${"[".repeat(300)}${"]".repeat(300)}`);
    expect(deep.status).toBe(400);
    expect(await errorOf(deep)).toEqual({
      code: -32600,
      message: "Invalid Request: JSON nested deeper than 256 levels",
    });
  });

  test("a request without Mcp-Session-Id is refused with 400", async () => {
    const res = await post(bridged.url, ping(1));
    expect(res.status).toBe(400);
    await errorOf(res);
  });

  test("an unknown session gets 404 with JSON-RPC error -32001 (POST, GET, DELETE)", async () => {
    const headers = { "mcp-session-id": crypto.randomUUID(), "mcp-protocol-version": "2025-06-18" };
    const onPost = await post(bridged.url, ping(1), headers);
    expect(onPost.status).toBe(404);
    expect((await errorOf(onPost)).code).toBe(-32001);
    const onGet = await openGet(headers);
    expect(onGet.status).toBe(404);
    expect((await errorOf(onGet)).code).toBe(-32001);
    const onDelete = await fetch(bridged.url, { method: "DELETE", headers });
    expect(onDelete.status).toBe(404);
    expect((await errorOf(onDelete)).code).toBe(-32001);
  });

  test("DELETE ends a session: afterwards 404, and its GET stream ends", async () => {
    const s = await rawSession(bridged.url);
    const get = await openGetStream(bridged.url, s.headers, bridged.bridge);
    const res = await fetch(bridged.url, { method: "DELETE", headers: s.headers });
    expect(res.status).toBe(200);
    const events = await get.events();
    expect(await events.ends(2_000)).toBe(true);
    const after = await post(bridged.url, ping(2), s.headers);
    expect(after.status).toBe(404);
    expect((await errorOf(after)).code).toBe(-32001);
    expect(bridged.bridge.getSession(s.sessionId)).toBeUndefined();
  });

  test("DELETE with a request in flight: the server is told to cancel it and the pending POST ends", async () => {
    const s = await rawSession(bridged.url);
    const pending = post(bridged.url, toolCall(1, "sleep", { ms: 3_000 }), {
      ...s.headers,
      accept: "application/json",
    });
    await waitInFlight(bridged, 1);
    const res = await fetch(bridged.url, { method: "DELETE", headers: s.headers });
    expect(res.status).toBe(200);
    const settled = await Promise.race([pending, Bun.sleep(1_500).then(() => undefined)]);
    expect(settled).toBeDefined();
    expect(await settled?.text()).not.toContain('"result"');
    const other = await rawSession(bridged.url);
    const stats = rawToolJson((await messagesOf(await post(bridged.url, toolCall(1, "stats"), other.headers)))[0]);
    expect(stats.cancelled.length).toBeGreaterThanOrEqual(1);
    expect(stats.aborted).toContain(stats.cancelled.at(-1));
  });

  test("a POST of notifications or responses only is answered 202 with no body", async () => {
    const s = await rawSession(bridged.url);
    const notification = await post(
      bridged.url,
      { jsonrpc: "2.0", method: "notifications/roots/list_changed" },
      s.headers,
    );
    expect(notification.status).toBe(202);
    expect(await notification.text()).toBe("");
    const response = await post(bridged.url, { jsonrpc: "2.0", id: 12345, result: {} }, s.headers);
    expect(response.status).toBe(202);
    // The session still works.
    expect((await messagesOf(await post(bridged.url, ping(3), s.headers)))[0]).toEqual({
      jsonrpc: "2.0",
      id: 3,
      result: {},
    });
  });

  test("a request from a foreign Origin is refused with 403", async () => {
    const res = await post(bridged.url, ping(1), { origin: "http://evil.example" });
    expect(res.status).toBe(403);
  });
});

describe("GET stream", () => {
  test("GET without Accept: text/event-stream is refused with 406", async () => {
    const s = await rawSession(bridged.url);
    const res = await openGet(s.headers, "application/json");
    expect(res.status).toBe(406);
  });

  // Bun sends the response head with the first body bytes, so the stream opens with a
  // comment: a client sees 200 at once instead of waiting for the first event.
  test("an idle GET stream answers 200 with text/event-stream at once", async () => {
    const s = await rawSession(bridged.url);
    const controller = new AbortController();
    const response = fetch(bridged.url, {
      headers: { ...s.headers, accept: "text/event-stream" },
      signal: controller.signal,
    });
    response.catch(() => {});
    const res = await Promise.race([response, Bun.sleep(1_000).then(() => undefined)]);
    controller.abort();
    expect(res?.status).toBe(200);
    expect(res?.headers.get("content-type")).toContain("text/event-stream");
    expect(res?.headers.get("x-accel-buffering")).toBe("no");
    expect(res?.headers.get("mcp-session-id")).toBe(s.sessionId);
  });

  test("a second GET stream for one session is refused with 409; once the first closes a new one is accepted", async () => {
    const s = await rawSession(bridged.url);
    const first = await openGetStream(bridged.url, s.headers, bridged.bridge);
    const second = await openGet(s.headers);
    expect(second.status).toBe(409);
    await errorOf(second);
    // Another session may have its own stream meanwhile.
    const other = await rawSession(bridged.url);
    const otherGet = await openGetStream(bridged.url, other.headers, bridged.bridge);
    otherGet.abort();

    first.abort();
    await waitFor(
      () => bridged.bridge.getSession(s.sessionId)?.standalone?.canStream === false,
      "the bridge to see the GET stream close",
    );
    const third = await openGetStream(bridged.url, s.headers, bridged.bridge);
    third.abort();
  });

  test("a notification goes to one stream only: the POST stream of the request being served, not also the GET stream", async () => {
    const s = await rawSession(bridged.url);
    const get = await openGetStream(bridged.url, s.headers, bridged.bridge);
    const messages = await messagesOf(await post(bridged.url, toolCall(1, "notify_list_changed"), s.headers));
    expect(messages.map((m) => m.method ?? `response ${m.id}`)).toEqual([
      "notifications/tools/list_changed",
      "response 1",
    ]);
    // Another session triggers a barrier that this session receives on its GET stream;
    // a duplicate of the list_changed would have arrived before it.
    const other = await rawSession(bridged.url);
    await messagesOf(
      await post(bridged.url, toolCall(1, "update_resource", { uri: "probe://none", barrier: true }), other.headers),
    );
    const onGet = await get.events();
    const next = await onGet.nextMessage(3_000);
    expect(next.method).toBe("notifications/prompts/list_changed");
    get.abort();
  });
});

describe("POST answers per Accept", () => {
  test("JSON when JSON is acceptable, SSE when only SSE is or SSE is named first, 406 when neither", async () => {
    const s = await rawSession(bridged.url);
    const call = (id: number, accept: string) =>
      post(bridged.url, toolCall(id, "echo", { text: accept }), { ...s.headers, accept });

    const json = await call(1, "application/json");
    expect(json.headers.get("content-type")).toContain("application/json");
    expect(rawToolJson((await messagesOf(json))[0]).text).toBe("application/json");

    const both = await call(2, "application/json, text/event-stream");
    expect(both.headers.get("content-type")).toContain("application/json");
    await both.body?.cancel();

    for (const accept of ["text/event-stream", "text/event-stream, application/json"]) {
      const sse = await call(3, accept);
      expect(sse.headers.get("content-type")).toContain("text/event-stream");
      const [message, ...rest] = await messagesOf(sse);
      expect(rest).toEqual([]);
      expect(message?.id).toBe(3);
      expect(rawToolJson(message).text).toBe(accept);
    }

    const neither = await call(4, "text/plain");
    expect(neither.status).toBe(406);
  });
});
