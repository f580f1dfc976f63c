/**
 * Audit as a handler in front of an MCP server (and of the policies it wraps), driven with
 * `new Request`: one JSON line per event, with the target, the subject, the outcome, and
 * request/response data only when configured (credentials redacted, size capped).
 */
import { describe, expect, test } from "bun:test";
import type { AuditConfig, AuditEventType } from "../../src/config/audit-config.ts";
import { toolsPolicy } from "../../src/config/tools-policy.ts";
import { auditTrail } from "../../src/middleware/audit.ts";
import { toolFilter } from "../../src/middleware/tool-filter.ts";
import { compose, detachedContext, type Middleware } from "../../src/proxy/handler.ts";
import { messagesOf, rpc, toyServer } from "../support/mcp-handler.ts";

const ctx = detachedContext("192.0.2.7");

function config(overrides: Partial<AuditConfig> = {}): AuditConfig {
  return {
    component: "demo",
    eventTypes: undefined,
    excludeEventTypes: new Set(),
    includeRequestData: false,
    includeResponseData: false,
    maxDataSize: 1024,
    logFile: undefined,
    ...overrides,
  };
}

function setup(
  options: { config?: AuditConfig; sse?: boolean; inner?: Middleware[]; redact?: (t: string) => string } = {},
) {
  const server = toyServer({ sse: options.sse ?? false });
  const lines: Record<string, any>[] = [];
  const audit = auditTrail({
    config: options.config ?? config(),
    write: (line) => lines.push(JSON.parse(line)),
    ...(options.redact ? { redact: options.redact } : {}),
  });
  return { server, lines, handle: compose(server.handler, audit, ...(options.inner ?? [])) };
}

const call = (name: string, args: Record<string, unknown> = {}, id: number | string = 1) =>
  rpc({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } }, { "user-agent": "audit-test" });

describe("events", () => {
  test("a tool call: its type, target, subject, source, outcome and duration", async () => {
    const { lines, handle } = setup();
    await (await handle(call("echo", {}, 42), ctx)).text();
    expect(lines).toHaveLength(1);
    const line = lines[0] as Record<string, any>;
    expect(line).toMatchObject({
      type: "mcp_tool_call",
      component: "demo",
      requestId: 42,
      target: { method: "tools/call", tool: "echo" },
      outcome: "success",
      subject: { sub: "local" },
      source: { address: "192.0.2.7", userAgent: "audit-test" },
    });
    expect(line.id).toBeString();
    expect(line.durationMs).toBeNumber();
  });

  test("prompts and resources are targets too (subscriptions included); notifications are their own type", async () => {
    const { lines, handle } = setup();
    for (const [method, params] of [
      ["prompts/get", { name: "greeting" }],
      ["resources/read", { uri: "file:///public.txt" }],
      ["resources/subscribe", { uri: "file:///public.txt" }],
    ] as const)
      await (await handle(rpc({ jsonrpc: "2.0", id: 1, method, params }), ctx)).text();
    await (await handle(rpc({ jsonrpc: "2.0", method: "notifications/initialized" }), ctx)).text();
    expect(lines.map((l) => [l.type, l.target])).toEqual([
      ["mcp_prompt_get", { method: "prompts/get", prompt: "greeting" }],
      ["mcp_resource_read", { method: "resources/read", resource: "file:///public.txt" }],
      ["mcp_request", { method: "resources/subscribe", resource: "file:///public.txt" }],
      ["mcp_notification", { method: "notifications/initialized" }],
    ]);
  });

  test("what a policy inside it refuses is recorded as denied; the server never sees it", async () => {
    const { server, lines, handle } = setup({ inner: [toolFilter(toolsPolicy(["echo"], undefined)!)] });
    await (await handle(call("admin"), ctx)).text();
    expect(lines[0]?.outcome).toBe("denied");
    expect(server.received).toHaveLength(0);
  });

  test("answers in an SSE stream are recorded when they pass, and the stream reaches the client unchanged", async () => {
    const { lines, handle } = setup({ sse: true });
    const response = await handle(call("echo"), ctx);
    expect(lines).toHaveLength(0);
    const [answer] = await messagesOf(response);
    expect(answer?.result.content[0].text).toBe("echo:{}");
    expect(lines[0]?.outcome).toBe("success");
  });

  test("GET streams and DELETEd sessions are events of their own; the session is named by a keyed hash", async () => {
    const { lines, handle } = setup();
    const id = "3f1c9f0e-7d4b-4c55-9a1e-0b8f5a2c6d71";
    await handle(new Request("http://127.0.0.1:8080/mcp", { headers: { "mcp-session-id": id } }), ctx);
    await handle(
      new Request("http://127.0.0.1:8080/mcp", { method: "DELETE", headers: { "mcp-session-id": id } }),
      ctx,
    );
    await handle(new Request("http://127.0.0.1:8080/mcp", { headers: { "mcp-session-id": "another-session" } }), ctx);
    const ref = lines[0]?.sessionId as string;
    expect(lines.map((l) => [l.type, l.sessionId, l.status])).toEqual([
      ["mcp_stream_open", ref, 405],
      ["mcp_session_end", ref, 200],
      ["mcp_stream_open", lines[2]?.sessionId, 405],
    ]);
    // The same session has the same reference, another session another one; the id never appears.
    expect(ref).toMatch(/^s_[\w-]{22}$/);
    expect(lines[2]?.sessionId).not.toBe(ref);
    expect(JSON.stringify(lines)).not.toContain(id);
    expect(JSON.stringify(lines)).not.toContain(id.replaceAll("-", ""));
  });
});

describe("configuration", () => {
  test("eventTypes and excludeEventTypes choose what is written", async () => {
    const only: AuditEventType[] = ["mcp_tool_call", "mcp_tools_list"];
    const { lines, handle } = setup({
      config: config({ eventTypes: new Set(only), excludeEventTypes: new Set(["mcp_tools_list"]) }),
    });
    await (await handle(rpc({ jsonrpc: "2.0", id: 1, method: "tools/list" }), ctx)).text();
    await (await handle(rpc({ jsonrpc: "2.0", id: 2, method: "ping" }), ctx)).text();
    await (await handle(call("echo"), ctx)).text();
    expect(lines.map((l) => l.type)).toEqual(["mcp_tool_call"]);
  });

  test("request and response data: only when asked, credentials and known secrets redacted, size capped", async () => {
    const { lines, handle } = setup({
      config: config({ includeRequestData: true, includeResponseData: true, maxDataSize: 60 }),
      redact: (text) => text.replaceAll("s3cret-env-value", "***"),
    });
    await (await handle(call("echo", { api_key: "k-123", note: "s3cret-env-value" }), ctx)).text();
    const line = lines[0] as Record<string, string>;
    expect(line.request).toContain("[redacted]");
    expect(line.request).not.toContain("k-123");
    expect(line.request).not.toContain("s3cret-env-value");
    expect(line.response?.length).toBeLessThanOrEqual(60 + "…(truncated)".length);
    const { lines: plain, handle: plainHandle } = setup();
    await (await plainHandle(call("echo", { api_key: "k-123" }), ctx)).text();
    expect(plain[0]?.request).toBeUndefined();
    expect(plain[0]?.response).toBeUndefined();
  });
});
