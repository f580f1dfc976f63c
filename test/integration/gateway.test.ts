/**
 * `mcpmgr gateway GROUP` end to end: two stdio fixture servers run as detached workloads in
 * one group, a gateway in front of them, real SDK clients (2025-era sessions with the v1
 * client, 2026-07-28 stateless requests with the v2 client) against it.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  ToolListChangedNotificationSchema,
  type CallToolResult,
} from "@modelcontextprotocol/sdk/types.js";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { createTestGroup, PROBE_FIXTURE, type TestGroup, until } from "../support/gateway-group.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let group: TestGroup;
let gateway: Awaited<ReturnType<TestGroup["gateway"]>>;
let probe: string;
const clients: Client[] = [];

async function connect(name: string, capabilities: Record<string, object> = {}): Promise<Client> {
  const client = new Client({ name, version: "1.0.0" }, { capabilities });
  await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
  clients.push(client);
  return client;
}

function payload(result: unknown): Record<string, unknown> {
  const text = ((result as CallToolResult).content[0] as { text: string }).text;
  return JSON.parse(text) as Record<string, unknown>;
}

const toolNames = async (client: Client) => (await client.listTools()).tools.map((t) => t.name);

beforeAll(async () => {
  group = await createTestGroup();
  probe = await group.packageOf(PROBE_FIXTURE);
  group.run(probe, "alpha", "team");
  group.run(probe, "beta", "team");
  group.run(probe, "outsider", "other");
  gateway = await group.gateway("team");
}, 120_000);

afterAll(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
  await group?.cleanup();
});

describe("the gateway's endpoint", () => {
  test("answers /health and refuses a foreign Origin", async () => {
    const health = await fetch(new URL("/health", gateway.url));
    expect(health.status).toBe(200);
    const foreign = await fetch(gateway.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        origin: "https://evil.example",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    });
    expect(foreign.status).toBe(403);
  });

  test("an unknown session gets 404, as MCP clients expect to start over", async () => {
    const response = await fetch(gateway.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-session-id": "no-such-session",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(response.status).toBe(404);
  });
});

describe("two workloads behind one endpoint", () => {
  test("the client sees both servers' tools, prefixed, and none of another group's", async () => {
    const client = await connect("lister");
    const names = await toolNames(client);
    expect(names).toContain("alpha_echo");
    expect(names).toContain("beta_echo");
    expect(names.some((n) => n.startsWith("outsider_"))).toBe(false);
    expect(names.filter((n) => !n.startsWith("alpha_") && !n.startsWith("beta_"))).toEqual([]);
  });

  test("each call reaches its own workload", async () => {
    const client = await connect("caller");
    expect(payload(await client.callTool({ name: "alpha_echo", arguments: { text: "to alpha" } })).text).toBe(
      "to alpha",
    );
    expect(payload(await client.callTool({ name: "beta_echo", arguments: { text: "to beta" } })).text).toBe("to beta");
    await client.callTool({ name: "alpha_echo", arguments: { text: "again" } });
    const alpha = payload(await client.callTool({ name: "alpha_stats", arguments: {} })) as {
      methods: Record<string, number>;
    };
    const beta = payload(await client.callTool({ name: "beta_stats", arguments: {} })) as {
      methods: Record<string, number>;
    };
    // alpha saw two echo calls and the stats call from this test; beta one and its stats call.
    expect((alpha.methods["tools/call"] ?? 0) - (beta.methods["tools/call"] ?? 0)).toBe(1);
  });

  test("an unknown tool is a JSON-RPC error naming it", async () => {
    const client = await connect("unknown");
    await expect(client.callTool({ name: "alpha_nope", arguments: {} })).rejects.toThrow(/-32602.*alpha_nope/);
  });

  test("progress reaches the caller with its own token, and cancelling cancels upstream", async () => {
    const client = await connect("progress");
    const messages: string[] = [];
    await client.callTool({ name: "alpha_progress", arguments: { steps: 3, delayMs: 5, tag: "p" } }, undefined, {
      onprogress: (progress) => messages.push(String(progress.message)),
    });
    expect(messages).toEqual(["p:1", "p:2", "p:3"]);

    const abort = new AbortController();
    const call = client.callTool({ name: "beta_sleep", arguments: { ms: 60_000 } }, undefined, {
      signal: abort.signal,
    });
    const betaStats = async () =>
      payload(await client.callTool({ name: "beta_stats", arguments: {} })) as { aborted: unknown[]; sleeping: number };
    // Cancelled once it has reached beta (before that, there is nothing upstream to cancel).
    expect(await until(async () => (await betaStats()).sleeping === 1)).toBe(true);
    abort.abort();
    await expect(call).rejects.toThrow();
    expect(await until(async () => (await betaStats()).aborted.length === 1)).toBe(true);
  });

  test("a request id still in flight in the session is refused when reused; the first call still gets its answer", async () => {
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
    const post = (body: object, sessionId?: string) =>
      fetch(gateway.url, {
        method: "POST",
        headers: {
          ...headers,
          ...(sessionId ? { "mcp-session-id": sessionId, "mcp-protocol-version": "2025-06-18" } : {}),
        },
        body: JSON.stringify({ jsonrpc: "2.0", ...body }),
      });
    const opened = await post({
      id: 0,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "reuse", version: "1" } },
    });
    const sessionId = opened.headers.get("mcp-session-id") as string;
    await opened.text();
    await (await post({ method: "notifications/initialized" }, sessionId)).text();
    const call = (name: string, args: object) =>
      post({ id: 7, method: "tools/call", params: { name, arguments: args } }, sessionId);
    const first = call("alpha_sleep", { ms: 1_500 });
    const observer = await connect("reuse-observer");
    const sleeping = async () =>
      (payload(await observer.callTool({ name: "alpha_stats", arguments: {} })) as { sleeping: number }).sleeping;
    expect(await until(async () => (await sleeping()) === 1)).toBe(true);
    const second = await call("beta_echo", { text: "second" });
    expect(second.status).toBe(400);
    expect(await second.json()).toMatchObject({ id: 7, error: { code: -32600 } });
    const answer = await Promise.race([(await first).text(), Bun.sleep(20_000).then(() => "no answer")]);
    expect(answer).toContain('"id":7');
    expect(answer).toContain('"result"');
    // Answered, the id may be used again.
    const again = await call("beta_echo", { text: "again" });
    expect(await again.text()).toContain("again");
  });

  test("sampling and elicitation from a tool reach the session that called it", async () => {
    const sessions = await Promise.all(
      ["first", "second"].map(async (who) => {
        const client = await connect(who, { sampling: {}, elicitation: {} });
        client.setRequestHandler(CreateMessageRequestSchema, async () => ({
          role: "assistant",
          content: { type: "text", text: `answer from ${who}` },
          model: `model-${who}`,
        }));
        client.setRequestHandler(ElicitRequestSchema, async () => ({
          action: "accept",
          content: { name: who },
        }));
        return { who, client };
      }),
    );
    // Both gateway sessions wait on a workload at once. Each calls its own workload: a stdio
    // server's request cannot be told apart by the workload's bridge when two of its own
    // sessions are busy (the bridge refuses it then), which is not what this test is about.
    const results = await Promise.all(
      sessions.map(({ client }, i) =>
        client.callTool({ name: i === 0 ? "alpha_sample" : "beta_sample", arguments: { prompt: "hi", delayMs: 200 } }),
      ),
    );
    expect(results.map((r) => payload(r).answer)).toEqual(["answer from first", "answer from second"]);
    const elicited = await Promise.all(
      sessions.map(({ client }, i) =>
        client.callTool({ name: i === 0 ? "beta_elicit" : "alpha_elicit", arguments: { message: "name?" } }),
      ),
    );
    expect(elicited.map((r) => (payload(r).result as { content: { name: string } }).content.name)).toEqual([
      "first",
      "second",
    ]);
  });

  test("each session gets the log messages of its own level", async () => {
    const quiet = await connect("quiet");
    const chatty = await connect("chatty");
    const seen: Record<string, string[]> = { quiet: [], chatty: [] };
    for (const [who, client] of [
      ["quiet", quiet],
      ["chatty", chatty],
    ] as const) {
      client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
        seen[who]?.push(String(n.params.data));
      });
    }
    await quiet.setLoggingLevel("error");
    await chatty.setLoggingLevel("debug");
    await quiet.callTool({ name: "alpha_log_all", arguments: { tag: "quiet" } });
    await chatty.callTool({ name: "alpha_log_all", arguments: { tag: "chatty" } });
    expect(await until(() => seen.chatty?.length === 8 && seen.quiet?.length === 4)).toBe(true);
    expect(seen.quiet?.every((line) => line.startsWith("quiet:"))).toBe(true);
    expect(seen.quiet).toEqual(["quiet:error", "quiet:critical", "quiet:alert", "quiet:emergency"]);
    expect(seen.chatty?.every((line) => line.startsWith("chatty:"))).toBe(true);
  });

  test("a 2026-07-28 client (stateless requests) lists and calls through the gateway", async () => {
    const client = new ModernClient(
      { name: "modern", version: "1.0.0" },
      { versionNegotiation: { mode: { pin: "2026-07-28" } } },
    );
    await client.connect(new ModernTransport(new URL(gateway.url)));
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain("beta_echo");
      const result = await client.callTool({ name: "beta_echo", arguments: { text: "modern" } });
      expect(payload(result).text).toBe("modern");
    } finally {
      await client.close();
    }
  });
});

describe("membership", () => {
  test("a third workload joining sends list_changed and adds its tools", async () => {
    const client = await connect("watcher");
    let changes = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changes++;
    });
    expect(await toolNames(client)).not.toContain("gamma_echo");
    group.run(probe, "gamma", "team");
    expect(await until(() => changes > 0)).toBe(true);
    expect(await toolNames(client)).toContain("gamma_echo");
    expect(payload(await client.callTool({ name: "gamma_echo", arguments: { text: "hi gamma" } })).text).toBe(
      "hi gamma",
    );
  }, 60_000);

  test("a workload that stops: list_changed, its tools go, a call to one is a tool error the model sees, the others work", async () => {
    const client = await connect("stopper");
    await client.callTool({ name: "gamma_echo", arguments: { text: "before" } });
    let changes = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changes++;
    });
    expect(group.mcpmgr("stop", "gamma").code).toBe(0);
    expect(await until(() => changes > 0)).toBe(true);
    expect(await toolNames(client)).not.toContain("gamma_echo");
    // A tool execution error (isError), which clients give to the model, not a JSON-RPC internal error.
    const said = "workload 'gamma' is not running; its tools, prompts and resources are unavailable";
    expect(await client.callTool({ name: "gamma_echo", arguments: { text: "after" } })).toEqual({
      content: [{ type: "text", text: said }],
      isError: true,
    });
    // A 2026-07-28 caller too.
    const modern = new ModernClient(
      { name: "modern-stopped", version: "1.0.0" },
      { versionNegotiation: { mode: { pin: "2026-07-28" } } },
    );
    await modern.connect(new ModernTransport(new URL(gateway.url)));
    try {
      const result = await modern.callTool({ name: "gamma_echo", arguments: { text: "after" } });
      expect(result.isError).toBe(true);
      expect(result.content).toEqual([{ type: "text", text: said }]);
      // A prompt has no error result: a server error naming the workload, not "internal error".
      const refused = await modern.getPrompt({ name: "gamma_greeting" }).then(
        () => undefined,
        (err: { code?: number; message?: string }) => err,
      );
      expect(refused?.code).toBe(-32000);
      expect(refused?.message).toContain(said);
    } finally {
      await modern.close();
    }
    // A raw 2025-06-18 session's answer is a JSON-RPC result, not an error.
    const init = await fetch(gateway.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
      }),
    });
    const session = init.headers.get("mcp-session-id") ?? "";
    await init.text();
    const headers = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-session-id": session,
      "mcp-protocol-version": "2025-06-18",
    };
    await fetch(gateway.url, {
      method: "POST",
      headers,
      body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
    }).then((r) => r.text());
    const raw = await fetch(gateway.url, {
      method: "POST",
      headers,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: { name: "gamma_echo", arguments: { text: "raw" } },
      }),
    }).then((r) => r.text());
    expect(raw).toContain('"isError":true');
    expect(raw).not.toContain('"error"');
    // Prompts and completions of a stopped workload: JSON-RPC has no result for them, so a server error
    // (-32000, implementation-defined) with the same text and data.workload, never -32603 "internal error".
    for (const refused of [
      client.getPrompt({ name: "gamma_greeting" }),
      client.complete({ ref: { type: "ref/prompt", name: "gamma_greeting" }, argument: { name: "a", value: "" } }),
    ]) {
      const err = await refused.then(
        () => undefined,
        (e: { code?: number; message?: string; data?: unknown }) => e,
      );
      expect(err?.code).toBe(-32000);
      expect(err?.message).toContain(said);
      expect(err?.data).toEqual({ workload: "gamma" });
    }
    expect(payload(await client.callTool({ name: "alpha_echo", arguments: { text: "still" } })).text).toBe("still");
  }, 60_000);

  test("a workload changing its own list is re-listed and announced", async () => {
    const client = await connect("relister");
    let changes = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changes++;
    });
    await client.callTool({ name: "beta_notify_list_changed", arguments: { add: "fresh" } });
    expect(await until(async () => changes > 0 && (await toolNames(client)).includes("beta_fresh"))).toBe(true);
  });
});

describe("stopping", () => {
  test("SIGTERM stops the gateway gracefully while a client session is open", async () => {
    const second = await group.gateway("team");
    const client = new Client({ name: "open-session", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(second.url)));
    await client.listTools();
    const started = Date.now();
    const code = await second.stop("SIGTERM");
    expect(code).toBe(0);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(second.output()).toContain("SIGTERM: stopping the gateway");
    await client.close().catch(() => {});
  });
});
