/**
 * The stdio bridge routes every message to the session it belongs to: responses by
 * the bridge's own ids (clients reuse the same JSON-RPC ids freely), progress by
 * token, resources/updated to subscribers only, list_changed to everyone; and the
 * server sees a single client (one initialize handshake). A real probe server
 * process (test/fixtures/bridge-probe-server.ts) sits behind the bridge.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { LATEST_PROTOCOL_VERSION, type Progress } from "@modelcontextprotocol/sdk/types.js";
import {
  connectClient,
  messagesOf,
  post,
  rawSession,
  rawToolJson,
  startProbeBridge,
  toolCall,
  waitFor,
  type Bridged,
  type ProbeClient,
  waitInFlight,
} from "../fixtures/bridge-probe-client.ts";
import { PROBE_INSTRUCTIONS, PROBE_SERVER_INFO } from "../fixtures/bridge-probe-server.ts";

// Real server processes; generous for slow machines (each test here takes well under 3 s).
setDefaultTimeout(20_000);

let bridged: Bridged;
const opened: ProbeClient[] = [];

async function client(name: string, options: { serverRequests?: boolean } = {}): Promise<ProbeClient> {
  const c = await connectClient(bridged.url, name, { ...options, bridge: bridged.bridge });
  opened.push(c);
  return c;
}

beforeAll(async () => {
  bridged = await startProbeBridge();
});

afterAll(async () => {
  await Promise.allSettled(opened.map((c) => c.close()));
  await bridged?.stop();
});

describe("identical JSON-RPC ids from many sessions", () => {
  test("16 SDK clients x 50 lock-step rounds of echo: each gets exactly its own payloads", async () => {
    const clients = await Promise.all(Array.from({ length: 16 }, (_, i) => client(`echo-${i}`)));
    const received: string[][] = clients.map(() => []);
    const serverIds = new Set<string | number>();
    for (let round = 0; round < 50; round++) {
      // Every client's n-th request has the same id (the SDK counts from 0 per client);
      // random delays make the server answer out of order.
      const results = await Promise.all(
        clients.map((c, i) =>
          c.call("echo", { text: `client ${i} round ${round}`, delayMs: Math.floor(Math.random() * 4) }),
        ),
      );
      results.forEach((r, i) => {
        received[i]?.push(r.text);
        serverIds.add(r.requestId);
      });
    }
    received.forEach((texts, i) => {
      expect(texts).toEqual(Array.from({ length: 50 }, (_, round) => `client ${i} round ${round}`));
    });
    // The server saw 800 distinct ids: the bridge remapped them.
    expect(serverIds.size).toBe(16 * 50);
    for (const c of clients) expect(c.seen.errors).toEqual([]);
  });

  test('16 raw sessions sending id 7 (and id "7") concurrently: nothing lost, nothing crossed', async () => {
    const sessions = await Promise.all(Array.from({ length: 16 }, () => rawSession(bridged.url)));
    const run = async (s: (typeof sessions)[number], i: number) => {
      const mismatches: string[] = [];
      for (let round = 0; round < 50; round++) {
        const id = round % 2 === 0 ? 7 : "7";
        const text = `raw ${i}/${round}/${crypto.randomUUID()}`;
        const res = await post(bridged.url, toolCall(id, "echo", { text, delayMs: round % 3 }), {
          ...s.headers,
          accept: "application/json",
        });
        const [message, ...extra] = await messagesOf(res);
        if (res.status !== 200 || extra.length > 0 || message?.id !== id || rawToolJson(message).text !== text) {
          mismatches.push(`${res.status} ${JSON.stringify(message)} (wanted ${text})`);
        }
      }
      return mismatches;
    };
    const results = await Promise.all(sessions.map(run));
    expect(results.flat()).toEqual([]);
  });
});

describe("progress", () => {
  test("two raw sessions using the same progressToken each see only their own progress", async () => {
    const [a, b] = await Promise.all([rawSession(bridged.url), rawSession(bridged.url)]);
    const call = (s: typeof a, tag: string) =>
      post(
        bridged.url,
        toolCall(1, "progress", { steps: 5, delayMs: 15, tag }, { progressToken: "shared-token" }),
        s.headers,
      ).then(messagesOf);
    const [fromA, fromB] = await Promise.all([call(a, "A"), call(b, "B")]);
    for (const [messages, tag] of [
      [fromA, "A"],
      [fromB, "B"],
    ] as const) {
      const progress = messages.filter((m) => m.method === "notifications/progress");
      expect(progress.map((m) => m.params?.message)).toEqual([1, 2, 3, 4, 5].map((i) => `${tag}:${i}`));
      // The client's own token comes back, not the bridge's.
      expect(progress.every((m) => m.params?.progressToken === "shared-token")).toBe(true);
      const last = messages.at(-1);
      expect(last?.id).toBe(1);
      expect(rawToolJson(last)).toMatchObject({ tag, hadToken: true });
    }
  });

  test("two SDK clients (same request ids, hence same tokens) each see only their own progress", async () => {
    const [a, b] = await Promise.all([client("progress-a"), client("progress-b")]);
    const seenA: Progress[] = [];
    const seenB: Progress[] = [];
    await Promise.all([
      a.call("progress", { steps: 4, delayMs: 15, tag: "A" }, { onprogress: (p) => void seenA.push(p) }),
      b.call("progress", { steps: 4, delayMs: 15, tag: "B" }, { onprogress: (p) => void seenB.push(p) }),
    ]);
    await waitFor(() => seenA.length >= 4 && seenB.length >= 4, "progress of both clients");
    expect(seenA.map((p) => p.message)).toEqual(["A:1", "A:2", "A:3", "A:4"]);
    expect(seenB.map((p) => p.message)).toEqual(["B:1", "B:2", "B:3", "B:4"]);
    expect([...a.seen.errors, ...b.seen.errors]).toEqual([]);
  });
});

describe("fan-out", () => {
  test("tools/list_changed reaches every session exactly once", async () => {
    const clients = await Promise.all(["lc-a", "lc-b", "lc-c"].map((n) => client(n)));
    const before = clients.map((c) => c.seen.toolsChanged);
    await clients[0]?.call("notify_list_changed");
    await waitFor(
      () => clients.every((c, i) => c.seen.toolsChanged > (before[i] ?? 0)),
      "list_changed on every session",
    );
    // A barrier on the same streams: anything duplicated would have arrived before it.
    const barrier = clients.map((c) => c.seen.promptsChanged);
    await clients[1]?.call("update_resource", { uri: "probe://nobody", barrier: true });
    await waitFor(() => clients.every((c, i) => c.seen.promptsChanged > (barrier[i] ?? 0)), "the barrier");
    expect(clients.map((c, i) => c.seen.toolsChanged - (before[i] ?? 0))).toEqual([1, 1, 1]);
  });

  test("resources/updated goes to subscribers only; the server sees one subscribe and one unsubscribe", async () => {
    const uri = "probe://r1";
    const [a, b, c] = await Promise.all([client("sub-a"), client("sub-b"), client("sub-c")]);
    if (a === undefined || b === undefined || c === undefined) throw new Error("clients");
    const everyone = [a, b, c];
    /** c triggers an update followed by a barrier, and waits for the barrier everywhere. */
    const update = async () => {
      const barrier = everyone.map((x) => x.seen.promptsChanged);
      await c.call("update_resource", { uri, barrier: true });
      await waitFor(() => everyone.every((x, i) => x.seen.promptsChanged > (barrier[i] ?? 0)), "the barrier");
      return everyone.map((x) => x.seen.updated.filter((u) => u === uri).length);
    };

    await a.client.subscribeResource({ uri });
    await b.client.subscribeResource({ uri });
    let stats = await c.call("stats");
    expect(stats.subscribe[uri]).toBe(1);

    expect(await update()).toEqual([1, 1, 0]);

    await a.client.unsubscribeResource({ uri });
    stats = await c.call("stats");
    expect(stats.unsubscribe[uri]).toBeUndefined(); // b still wants it
    expect(await update()).toEqual([1, 2, 0]);

    await b.client.unsubscribeResource({ uri });
    stats = await c.call("stats");
    expect(stats.unsubscribe[uri]).toBe(1);
    expect(await update()).toEqual([1, 2, 0]);

    // Subscribing again starts over; a session that ends drops its subscription.
    await a.client.subscribeResource({ uri });
    await b.client.subscribeResource({ uri });
    expect((await c.call("stats")).subscribe[uri]).toBe(2);
    await b.close();
    expect((await c.call("stats")).unsubscribe[uri]).toBe(1);
    await a.close();
    expect((await c.call("stats")).unsubscribe[uri]).toBe(2);
  });
});

describe("initialize", () => {
  test("5 clients: the server sees one initialize and one notifications/initialized; every client a valid result", async () => {
    const clients = await Promise.all(Array.from({ length: 5 }, (_, i) => client(`init-${i}`)));
    for (const c of clients) {
      expect(c.client.getServerVersion()).toEqual(PROBE_SERVER_INFO);
      expect(c.client.getServerCapabilities()?.tools).toBeDefined();
      expect(c.client.getInstructions()).toBe(PROBE_INSTRUCTIONS);
      expect(c.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    }
    expect(new Set(clients.map((c) => c.sessionId)).size).toBe(5);
    const stats = await clients[0]?.call("stats");
    expect(stats?.initialize).toBe(1);
    expect(stats?.initialized).toBe(1);
    expect(stats?.methods.initialize).toBe(1);
  });

  test("the bridge answers initialize with the client's protocol version when supported, else its latest", async () => {
    for (const version of ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]) {
      const { result } = await rawSession(bridged.url, version);
      expect(result.protocolVersion).toBe(version);
      expect(result.serverInfo).toEqual(PROBE_SERVER_INFO);
      expect(result.capabilities.tools).toBeDefined();
    }
    const { result } = await rawSession(bridged.url, "1999-01-01");
    expect(result.protocolVersion).toBe(LATEST_PROTOCOL_VERSION);
    const stats = rawToolJson(
      (await messagesOf(await post(bridged.url, toolCall(1, "stats"), (await rawSession(bridged.url)).headers)))[0],
    );
    expect(stats.initialize).toBe(1);
  });
});

describe("cancellation", () => {
  const statsOf = async (headers: Record<string, string>) =>
    rawToolJson((await messagesOf(await post(bridged.url, toolCall("stats", "stats"), headers)))[0]);

  test("notifications/cancelled for id 5 cancels that session's request 5 only", async () => {
    const [a, b] = await Promise.all([rawSession(bridged.url), rawSession(bridged.url)]);
    const before = await statsOf(b.headers);
    const fromA = post(bridged.url, toolCall(5, "sleep", { ms: 3_000 }), { ...a.headers, accept: "application/json" });
    fromA.then(
      (res) => res.body?.cancel(),
      () => {},
    );
    const fromB = post(bridged.url, toolCall(5, "sleep", { ms: 400 }), {
      ...b.headers,
      accept: "application/json",
    }).then(messagesOf);
    await waitInFlight(bridged, 2);
    const cancel = await post(
      bridged.url,
      { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 5, reason: "test" } },
      a.headers,
    );
    expect(cancel.status).toBe(202);
    const [answerB] = await fromB;
    expect(answerB?.id).toBe(5);
    expect(rawToolJson(answerB)).toEqual({ slept: 400, aborted: false });
    const after = await statsOf(b.headers);
    expect(after.cancelled.length - before.cancelled.length).toBe(1);
    expect(after.aborted.slice(before.aborted.length)).toEqual(after.cancelled.slice(before.cancelled.length));
  });

  // A cancelled request gets no response; the POST that carried it must still end.
  test("the POST that carried a cancelled request ends promptly", async () => {
    const a = await rawSession(bridged.url);
    const pending = post(bridged.url, toolCall(6, "sleep", { ms: 3_000 }), {
      ...a.headers,
      accept: "application/json",
    });
    await waitInFlight(bridged, 1);
    await post(
      bridged.url,
      { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 6, reason: "test" } },
      a.headers,
    );
    const settled = await Promise.race([
      pending.then((res) => res.text()),
      Bun.sleep(1_500).then(() => "still pending"),
    ]);
    expect(settled).not.toBe("still pending");
    expect(settled).not.toContain('"result"');
  });
});
