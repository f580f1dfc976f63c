/**
 * Audit as a handler in front of an MCP server (and of the policies it wraps), driven with
 * `new Request`: one JSON line per event, with the target, the subject, the outcome, and
 * request/response data only when configured (credentials redacted, size capped).
 */
import { describe, expect, test } from "bun:test";
import type { AuditConfig, AuditEventType } from "../../src/config/audit-config.ts";
import { toolsPolicy } from "../../src/config/tools-policy.ts";
import { TokenRejected, type Principal, type TokenVerifier } from "../../src/auth/incoming/verifier.ts";
import { incomingAuthSpec } from "../../src/config/incoming-auth-spec.ts";
import { auditTrail } from "../../src/middleware/audit.ts";
import { redactor } from "../../src/secrets/redact.ts";
import { bearerAuthentication } from "../../src/middleware/authn.ts";
import { cedarAuthorization } from "../../src/middleware/authz.ts";
import { messageGate } from "../../src/middleware/message-gate.ts";
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
    // Keys in another case or folding are the same key to a server that folds them.
    await (await handle(call("echo", { PAſſWORD: "hunter2", "Api-\u212Aey": "k-456" }), ctx)).text();
    expect(lines[1]?.request).not.toMatch(/hunter2|k-456/);
    expect(line.request).not.toContain("s3cret-env-value");
    expect(line.response?.length).toBeLessThanOrEqual(60 + "…(truncated)".length);
    const { lines: plain, handle: plainHandle } = setup();
    await (await plainHandle(call("echo", { api_key: "k-123" }), ctx)).text();
    expect(plain[0]?.request).toBeUndefined();
    expect(plain[0]?.response).toBeUndefined();
  });

  test("a secret that JSON escapes is redacted in the data too: the request once escaped, a tool's JSON text twice", async () => {
    // A password with a quote and a backslash, which JSON writes escaped: once in the request's data, and
    // twice in the response's, whose text (the echo of the arguments) is JSON already.
    const quoted = 'pa"ss\\word-42';
    const { lines, handle } = setup({
      config: config({ includeRequestData: true, includeResponseData: true, maxDataSize: 4096 }),
      redact: redactor([quoted]),
    });
    await (await handle(call("echo", { note: quoted }), ctx)).text();
    const line = lines[0] as Record<string, string>;
    expect(line.response).toContain("echo:");
    for (const data of [line.request, line.response]) {
      expect(data).toContain("***");
      expect(data).not.toContain("word-42");
    }
  });

  test("a resource's URI, a request id and a path are redacted too, audit data on or off, before they are capped", async () => {
    const key = "sk-live-8f2b91d0c4e7a6";
    const { lines, handle } = setup({ redact: redactor([key]) });
    // A server that put its key in a resource's URI, which a client read back.
    const uri = `https://api.example.com/report?api_key=${key}`;
    await (
      await handle(rpc({ jsonrpc: "2.0", id: `req-${key}`, method: "resources/read", params: { uri } }), ctx)
    ).text();
    // A URI longer than the cap, the key lying across the cut.
    const long = `file:///${"d".repeat(1024 - 8 - 5)}${key}`;
    await (await handle(rpc({ jsonrpc: "2.0", id: 2, method: "resources/read", params: { uri: long } }), ctx)).text();
    expect(lines.map((line) => [line.requestId, line.target.resource])).toEqual([
      ["req-***", "https://api.example.com/report?api_key=***"],
      [2, `file:///${"d".repeat(1024 - 8 - 5)}***`],
    ]);
    expect(JSON.stringify(lines)).not.toContain(key.slice(0, 5));
  });
});

describe("integrity", () => {
  const raw = (text: string) =>
    new Request("http://127.0.0.1/mcp", {
      method: "POST",
      body: text,
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    });

  test("a body refused before the policies is recorded, every message in it, as the server would read it, with the reason", async () => {
    const { server, lines, handle } = setup({ inner: [messageGate({ arguments: false })] });
    const bodies = [
      '{"jsonrpc":"2.0","id":5,"Method":"tools/call","params":{"name":"secret_tool"}}',
      '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","nAme":"secret_tool"}}',
      '[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":8,"params":{}}]',
      '{"jsonrpc":"2.0",',
    ];
    for (const body of bodies) expect((await handle(raw(body), ctx)).status).toBe(400);
    expect(server.received).toHaveLength(0);
    expect(lines.map((l) => [l.type, l.requestId, l.target, l.outcome])).toEqual([
      // As a server matching keys case-insensitively, the last one winning, would have read them.
      ["mcp_tool_call", 5, { method: "tools/call", tool: "secret_tool" }, "denied"],
      ["mcp_tool_call", 6, { method: "tools/call", tool: "secret_tool" }, "denied"],
      ["mcp_notification", undefined, { method: "notifications/initialized" }, "denied"],
      ["mcp_request", 8, { method: "" }, "denied"],
      ["mcp_request", undefined, { method: "" }, "denied"],
    ]);
    expect(lines.map((l) => l.reason)).toEqual([
      'Invalid Request: the key "Method" of the message differs from "method" only by case',
      'Invalid Request: the key "nAme" in params differs from "name" only by case',
      "Invalid Request: a message without a method must be a response: an id and a result or an error",
      "Invalid Request: a message without a method must be a response: an id and a result or an error",
      "Parse error: the request body is not JSON",
    ]);
    // A body on another method than POST: refused and recorded too.
    lines.length = 0;
    const put = new Request("http://127.0.0.1/mcp", { method: "PUT", body: bodies[0] });
    expect((await handle(put, ctx)).status).toBe(400);
    expect(lines.map((l) => [l.type, l.target, l.outcome, l.reason])).toEqual([
      [
        "mcp_request",
        { path: "/mcp" },
        "denied",
        "Invalid Request: MCP messages are sent with POST, not with a PUT body",
      ],
    ]);
  });

  test("a policy's refusal carries its reason, through the policies that rewrite answers", async () => {
    const authz = cedarAuthorization({
      policies: 'permit(principal, action, resource == Tool::"echo");',
      entities: [],
    });
    const tools = toolFilter(toolsPolicy(["echo", "admin"], undefined)!);
    const { lines, handle } = setup({ inner: [tools, authz] });
    await (await handle(call("admin"), ctx)).text();
    await (await handle(call("secret_tool"), ctx)).text();
    expect(lines.map((l) => [l.target.tool, l.outcome, l.reason])).toEqual([
      ["admin", "denied", "Cedar: no policy permits it"],
      ["secret_tool", "denied", '--tools: "secret_tool" not available'],
    ]);
  });

  test("one event is one line, whatever the names: line separators and C1 controls are escaped; long names capped", async () => {
    const written: string[] = [];
    const audit = auditTrail({ config: config(), write: (line) => written.push(line) });
    const handle = compose(toyServer().handler, audit);
    const name = "a\u2028b\u2029c\u0085d\u009be\nf\u007f";
    await (await handle(call(name), ctx)).text();
    await (await handle(call("x".repeat(100_000)), ctx)).text();
    for (const line of written) {
      expect(line.endsWith("\n")).toBe(true);
      expect(line.slice(0, -1)).not.toMatch(/[\n\r\u0085\u2028\u2029\u007f-\u009f]/);
    }
    const [first, second] = written.map((line) => JSON.parse(line) as Record<string, any>);
    expect(first?.target.tool).toBe(name);
    expect(second?.target.tool).toBe(`${"x".repeat(1024)}…(truncated)`);
  });
});

test("a request authentication refuses is audited as unauthenticated, not as the local user", async () => {
  const spec = incomingAuthSpec(
    { "oidc-issuer": "https://idp.example", "oidc-insecure-allow-http": false, "jwks-allow-private-ip": false },
    new Set(["oidc-issuer"]),
  )!;
  // The verifier is not under test: a table of tokens stands in for signature checks.
  const verifier: TokenVerifier = {
    async verify(token) {
      if (token === "good") return { subject: "alice", scopes: [], claims: { sub: "alice" } } satisfies Principal;
      throw new TokenRejected("invalid_token", "the token has expired");
    },
  };
  const { lines, handle } = setup({
    inner: [bearerAuthentication({ spec, verifier, endpointPath: "/mcp", trustProxyHeaders: false })],
  });
  const withToken = (token: string) => {
    const req = call("echo");
    const headers = new Headers(req.headers);
    headers.set("authorization", `Bearer ${token}`);
    return new Request(req, { headers });
  };
  for (const req of [call("echo"), withToken("stale")]) {
    const refused = await handle(req, ctx);
    expect(refused.status).toBe(401);
    await refused.text();
  }
  await (await handle(withToken("good"), ctx)).text();
  expect(lines.map((line) => [line.outcome, line.subject])).toEqual([
    ["denied", { unauthenticated: true }],
    ["denied", { unauthenticated: true }],
    ["success", { sub: "alice" }],
  ]);
  expect(lines[1]?.reason).toBe("Unauthorized: the token has expired");
});
