/**
 * 2026-07-28 clients in front of a 2025-era stdio server (the bridge probe): the server's
 * own sampling/elicitation requests become input rounds; the sealed requestState resumes
 * exactly the waiting server request and nothing else (tampered, foreign, reused, expired
 * or for another call: refused). A client leaving before its answer cancels the work at the
 * server. Policies see the rounds: filtered lists are private to their caller, and audit
 * writes one line per call, with its outcome. And the other way round: a 2025-era session in
 * front of a 2026-07-28 server is asked the server's input rounds the 2025 way.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { auditConfig } from "../../src/config/audit-config.ts";
import { toolsPolicy } from "../../src/config/tools-policy.ts";
import { auditTrail } from "../../src/middleware/audit.ts";
import { toolFilter } from "../../src/middleware/tool-filter.ts";
import {
  connectClient,
  PROBE_SERVER,
  rawToolJson,
  waitFor,
  waitInFlight,
  type JsonRpc,
} from "../fixtures/bridge-probe-client.ts";
import { CONFORMANCE_FIXTURE_2026 } from "../support/conformance.ts";
import { startBridge } from "../support/bridge-server.ts";
import { statelessHeaders, statelessMeta } from "../support/stateless-request.ts";

setDefaultTimeout(20_000);

type Bridged = Awaited<ReturnType<typeof startBridge>>;

let nextId = 1;
const everything = { sampling: {}, elicitation: {}, roots: {} };

/** A 2026-07-28 request: `_meta` envelope, Mcp-* headers, no session. */
async function modern(
  url: string,
  method: string,
  params: Record<string, unknown> = {},
  options: { capabilities?: Record<string, unknown>; principal?: string; signal?: AbortSignal } = {},
): Promise<{ status: number; message: JsonRpc & { result?: any } }> {
  const target = method === "tools/call" ? (params.name as string) : undefined;
  const res = await fetch(url, {
    method: "POST",
    headers: {
      ...statelessHeaders(method, target),
      ...(options.principal ? { "x-test-principal": options.principal } : {}),
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: nextId++,
      method,
      params: {
        ...params,
        _meta: statelessMeta(options.capabilities ?? everything),
      },
    }),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return { status: res.status, message: (await res.json()) as JsonRpc };
}

const call = (name: string, args: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  name,
  arguments: args,
  ...extra,
});

describe("input rounds", () => {
  let bridged: Bridged;
  beforeAll(async () => {
    bridged = await startBridge({
      cmd: [process.execPath, PROBE_SERVER],
      bridge: { inputTimeoutMs: 1_000 },
      principalOf: (req) => req.headers.get("x-test-principal") ?? undefined,
    });
  });
  afterAll(() => bridged?.stop());

  test("a server's sampling request becomes an input round; the retry's answer resumes it", async () => {
    const first = await modern(bridged.url, "tools/call", call("sample", { prompt: "capital of France?" }));
    expect(first.status).toBe(200);
    const result = first.message.result;
    expect(result.resultType).toBe("input_required");
    expect(Object.keys(result.inputRequests)).toEqual(["sampling"]);
    expect(result.inputRequests.sampling.method).toBe("sampling/createMessage");
    expect(result.inputRequests.sampling.params.messages[0].content.text).toBe("capital of France?");
    expect(typeof result.requestState).toBe("string");
    const answer = { role: "assistant", content: { type: "text", text: "Paris" }, model: "m1" };
    const second = await modern(
      bridged.url,
      "tools/call",
      call(
        "sample",
        { prompt: "capital of France?" },
        { inputResponses: { sampling: answer }, requestState: result.requestState },
      ),
    );
    expect(second.message.result.resultType).toBe("complete");
    expect(rawToolJson(second.message)).toEqual({ answer: "Paris", model: "m1" });
  });

  test("a tampered, foreign, reused or mismatched requestState is refused", async () => {
    const first = await modern(bridged.url, "tools/call", call("elicit", { message: "who?" }), { principal: "alice" });
    const state = first.message.result.requestState as string;
    const answers = { elicitation: { action: "accept", content: { name: "A" } } };
    const retry = (params: Record<string, unknown>, principal = "alice") =>
      modern(bridged.url, "tools/call", params, { principal });
    const tampered = await retry(
      call("elicit", { message: "who?" }, { inputResponses: answers, requestState: `${state}x` }),
    );
    expect(tampered.message.error?.code).toBe(-32602);
    const foreign = await retry(
      call("elicit", { message: "who?" }, { inputResponses: answers, requestState: state }),
      "mallory",
    );
    expect(foreign.message.error?.code).toBe(-32602);
    const otherCall = await retry(
      call("elicit", { message: "someone else?" }, { inputResponses: answers, requestState: state }),
    );
    expect(otherCall.message.error?.code).toBe(-32602);
    // The rightful retry still works after all that, once.
    const good = await retry(call("elicit", { message: "who?" }, { inputResponses: answers, requestState: state }));
    expect(rawToolJson(good.message).result).toEqual({ action: "accept", content: { name: "A" } });
    const again = await retry(call("elicit", { message: "who?" }, { inputResponses: answers, requestState: state }));
    expect(again.message.error?.code).toBe(-32602);
  });

  test("an oversized requestState is refused unread", async () => {
    const res = await modern(
      bridged.url,
      "tools/call",
      call("sample", { prompt: "x" }, { inputResponses: {}, requestState: "a".repeat(100_000) }),
    );
    expect(res.message.error?.code).toBe(-32602);
  });

  test("a parked call expires: the server is told to cancel it and its state is refused afterwards", async () => {
    const cancelledBefore = rawToolJson((await modern(bridged.url, "tools/call", call("stats"))).message).cancelled
      .length;
    const first = await modern(bridged.url, "tools/call", call("elicit", { message: "late?" }));
    const state = first.message.result.requestState as string;
    await waitFor(() => bridged.bridge.inFlightCount === 0, "the parked call to expire", 5_000);
    const stats = rawToolJson((await modern(bridged.url, "tools/call", call("stats"))).message);
    expect(stats.cancelled.length).toBe(cancelledBefore + 1);
    const late = await modern(
      bridged.url,
      "tools/call",
      call(
        "elicit",
        { message: "late?" },
        { inputResponses: { elicitation: { action: "accept" } }, requestState: state },
      ),
    );
    expect(late.message.error?.code).toBe(-32602);
  });

  test("a capability the client did not declare fails the call with -32021 and HTTP 400", async () => {
    const res = await modern(bridged.url, "tools/call", call("sample", { prompt: "x" }), { capabilities: {} });
    expect(res.status).toBe(400);
    expect(res.message.error?.code).toBe(-32021);
    const error = res.message.error as { data?: { requiredCapabilities?: unknown } } | undefined;
    expect(error?.data?.requiredCapabilities).toEqual({ sampling: {} });
  });

  test("a client that leaves before its answer cancels the work at the server", async () => {
    const controller = new AbortController();
    const pending = modern(bridged.url, "tools/call", call("sleep", { ms: 5_000 }), { signal: controller.signal });
    pending.catch(() => {});
    await waitInFlight({ bridge: bridged.bridge } as never, 1);
    controller.abort();
    await waitFor(() => bridged.bridge.inFlightCount === 0, "the abandoned call to be forgotten");
    const stats = rawToolJson((await modern(bridged.url, "tools/call", call("stats"))).message);
    expect(stats.cancelled.length).toBeGreaterThanOrEqual(1);
    expect(stats.aborted).toContain(stats.cancelled.at(-1));
  });
});

describe("policies on 2026-07-28 traffic", () => {
  let bridged: Bridged;
  const lines: Record<string, any>[] = [];
  beforeAll(async () => {
    const audit = auditConfig(true, undefined, "test") as NonNullable<ReturnType<typeof auditConfig>>;
    bridged = await startBridge({
      cmd: [process.execPath, PROBE_SERVER],
      middleware: [
        auditTrail({ config: audit, write: (line) => void lines.push(JSON.parse(line)) }),
        toolFilter(toolsPolicy(["echo", "sample", "stats"], undefined) as NonNullable<ReturnType<typeof toolsPolicy>>),
      ],
    });
  });
  afterAll(() => bridged?.stop());

  test("a list filtered by policy is private to its caller; the server's own list stays public", async () => {
    const listed = await modern(bridged.url, "tools/list");
    expect(listed.message.result.tools.map((t: { name: string }) => t.name).sort()).toEqual([
      "echo",
      "sample",
      "stats",
    ]);
    expect(listed.message.result.cacheScope).toBe("private");
    const resources = await modern(bridged.url, "resources/list");
    expect(resources.message.result.cacheScope).toBe("public");
    expect(resources.message.result.ttlMs).toBe(0);
  });

  test("a call with an input round is one audit line, written when the call ends, with its outcome", async () => {
    const before = lines.filter((l) => l.type === "mcp_tool_call").length;
    const first = await modern(bridged.url, "tools/call", call("sample", { prompt: "audited" }));
    expect(lines.filter((l) => l.type === "mcp_tool_call").length).toBe(before);
    const answer = { role: "assistant", content: { type: "text", text: "ok" }, model: "m" };
    await modern(
      bridged.url,
      "tools/call",
      call(
        "sample",
        { prompt: "audited" },
        { inputResponses: { sampling: answer }, requestState: first.message.result.requestState },
      ),
    );
    const calls = lines.filter((l) => l.type === "mcp_tool_call").slice(before);
    expect(calls.map((l) => [l.target.tool, l.outcome])).toEqual([["sample", "success"]]);
  });

  test("a body nested 100,000 levels deep is refused by the policies too, with -32600", async () => {
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    const res = await fetch(bridged.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json", "mcp-protocol-version": "2026-07-28" },
      body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"deep":${deep}}}}`,
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: number } }).error.code).toBe(-32600);
    expect(bridged.bridge.inFlightCount).toBe(0);
  });

  test("a retry cannot reach a hidden tool: the policy refuses it like any call", async () => {
    const hidden = await modern(
      bridged.url,
      "tools/call",
      call("elicit", { message: "x" }, { requestState: "whatever" }),
    );
    expect(hidden.message.error?.message).toContain("Unknown tool");
  });
});

describe("2025-era sessions in front of a 2026-07-28 stdio server", () => {
  let bridged: Bridged;
  beforeAll(async () => {
    bridged = await startBridge({ cmd: [process.execPath, CONFORMANCE_FIXTURE_2026, "stdio"] });
  });
  afterAll(() => bridged?.stop());

  test("the server's input rounds are asked of the client the 2025 way, and the call completes", async () => {
    expect(bridged.bridge.server?.era).toBe("modern");
    const client = await connectClient(bridged.url, "A", { serverRequests: true, bridge: bridged.bridge });
    try {
      const once = await client.client.callTool({ name: "test_input_required_result_elicitation", arguments: {} });
      expect(once.content).toEqual([{ type: "text", text: "Hello, A!" }]);
      expect(client.seen.elicitation).toEqual(["What is your name?"]);
      // Two rounds, each with the server's own (sealed) requestState carried back.
      const twice = await client.client.callTool({ name: "test_input_required_result_multi_round", arguments: {} });
      expect(twice.content).toEqual([{ type: "text", text: "Multi-round complete" }]);
      expect(client.seen.elicitation.length).toBe(3);
    } finally {
      await client.close();
    }
  });

  test("list changes reach the sessions, and resources/subscribe is answered, though the server has no sessions", async () => {
    const client = await connectClient(bridged.url, "B", { bridge: bridged.bridge });
    try {
      await client.client.callTool({ name: "test_trigger_tool_change", arguments: {} });
      await waitFor(() => client.seen.toolsChanged === 1, "tools/list_changed at the session");
      await client.client.callTool({ name: "test_trigger_prompt_change", arguments: {} });
      await waitFor(() => client.seen.promptsChanged === 1, "prompts/list_changed at the session");
      expect(await client.client.subscribeResource({ uri: "test://static-text" })).toEqual({});
      expect(await client.client.unsubscribeResource({ uri: "test://static-text" })).toEqual({});
    } finally {
      await client.close();
    }
  });
});
