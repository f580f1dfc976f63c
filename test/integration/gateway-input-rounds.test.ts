/**
 * 2026-07-28 callers of a gateway whose members ask for input (multi-round-trip requests), log for
 * the request, or identify themselves. A caller has no session: it declares its capabilities and
 * log level in each request's `_meta` and answers an `input_required` result by calling again; the
 * gateway must carry all of it to the member and bring the member's rounds back as they are. Real
 * members: the 2026-07-28 conformance fixture and the URL elicitation fixture (2026-07-28) on stdio
 * behind their bridges, the 2026-07-28 conformance fixture over HTTP (a remote workload), the
 * 2025-11-25 conformance fixture on stdio, and the URL elicitation
 * fixture's 2025-11-25 server over HTTP (a remote workload behind the transparent proxy), whose
 * -32042 2026-07-28 forbids on its wire.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import {
  CONFORMANCE_FIXTURE,
  CONFORMANCE_FIXTURE_2026,
  type RunningFixture,
  startConformanceServer,
} from "../support/conformance.ts";
import { createTestGroup, type TestGroup } from "../support/gateway-group.ts";
import {
  startLegacyUrlElicitationServer,
  URL_ELICITATION_FIXTURE,
  type UrlElicitationServer,
} from "../support/url-elicitation.ts";
import { answerMessages } from "../support/raw-session.ts";
import { statelessHeaders, statelessMeta } from "../support/stateless-request.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

const CONNECT_URL = "https://accounts.example.com/connect?session=42";

let group: TestGroup;
let remote: UrlElicitationServer;
let modernRemote: RunningFixture;
let gatewayUrl: string;

beforeAll(async () => {
  modernRemote = await startConformanceServer({ fixture: CONFORMANCE_FIXTURE_2026 });
  remote = await startLegacyUrlElicitationServer();
  group = await createTestGroup();
  group.run(await group.packageOf(CONFORMANCE_FIXTURE_2026), "gmodern", "rounds", "stdio");
  group.run(await group.packageOf(CONFORMANCE_FIXTURE), "glegacy", "rounds", "stdio");
  group.run(await group.packageOf(URL_ELICITATION_FIXTURE), "urlm", "rounds", "modern");
  group.run(remote.url, "urlh", "rounds");
  group.run(modernRemote.url, "ghttp", "rounds");
  gatewayUrl = (await group.gateway("rounds")).url;
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  await remote?.stop();
  await modernRemote?.stop();
});

type Message = { id?: unknown; method?: string; params?: any; result?: any; error?: any };

function envelope(capabilities: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return { ...statelessMeta(capabilities, { name: "rounds", version: "1" }), ...extra };
}

/** A 2026-07-28 tools/call; every message of its answer (the stream's events, or the one JSON body). */
async function call(
  name: string,
  meta: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Promise<{ status: number; messages: Message[]; answer: Message }> {
  const response = await fetch(gatewayUrl, {
    method: "POST",
    headers: statelessHeaders("tools/call", name),
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 7,
      method: "tools/call",
      params: { name, arguments: {}, _meta: meta, ...extra },
    }),
  });
  const messages = (await answerMessages(response)) as Message[];
  const answer = messages.find((message) => message.id === 7) as Message;
  return { status: response.status, messages, answer };
}

const textOf = (answer: Message): string => answer.result?.content?.[0]?.text;

test("a form elicitation round of a 2026-07-28 member reaches the caller, and its answer the member", async () => {
  const name = "gmodern_test_input_required_result_elicitation";
  const first = await call(name, envelope({ elicitation: { form: {} } }));
  expect(first.status).toBe(200);
  expect(first.answer.result.resultType).toBe("input_required");
  expect(first.answer.result.inputRequests.user_name.method).toBe("elicitation/create");
  const retry = await call(name, envelope({ elicitation: { form: {} } }), {
    inputResponses: { user_name: { action: "accept", content: { name: "Ada" } } },
  });
  expect(textOf(retry.answer)).toBe("Hello, Ada!");
});

test("a caller that declares no elicitation is refused by the member (-32021), not asked", async () => {
  const refused = await call("gmodern_test_input_required_result_elicitation", envelope({}));
  expect(refused.answer.error.code).toBe(-32021);
});

test("the member's requestState comes back to the caller and reaches the member unchanged on the retry", async () => {
  const name = "gmodern_test_input_required_result_request_state";
  const meta = envelope({ elicitation: { form: {} } });
  const first = await call(name, meta);
  const { requestState } = first.answer.result;
  expect(typeof requestState).toBe("string");
  const confirm = { confirm: { action: "accept", content: { ok: true } } };
  const retry = await call(name, meta, { inputResponses: confirm, requestState });
  expect(textOf(retry.answer)).toBe("state-ok: requestState verified");
  // The member seals its state: one the gateway changed (or a tampered one) would be refused.
  const tampered = await call(name, meta, { inputResponses: confirm, requestState: `${requestState}x` });
  expect(tampered.answer.error).toBeDefined();
});

test("a URL elicitation round of a 2026-07-28 member reaches the caller, and its answer the member", async () => {
  const meta = envelope({ elicitation: { url: {} } });
  const first = await call("urlm_connect_account", meta);
  expect(first.answer.result.resultType).toBe("input_required");
  expect(first.answer.result.inputRequests.link.params).toMatchObject({ mode: "url", url: CONNECT_URL });
  const retry = await call("urlm_connect_account", meta, { inputResponses: { link: { action: "accept" } } });
  expect(textOf(retry.answer)).toBe("connected (accept)");
});

test("a 2025-era HTTP member's -32042 reaches a 2026-07-28 caller as an input round, or -32021", async () => {
  const first = await call("urlh_connect_account", envelope({ elicitation: { url: {} } }));
  expect(first.status).toBe(200);
  expect(first.answer.error).toBeUndefined();
  expect(first.answer.result.resultType).toBe("input_required");
  const [request] = Object.values(first.answer.result.inputRequests) as Message[];
  expect(request?.method).toBe("elicitation/create");
  expect(request?.params).toMatchObject({ mode: "url", url: CONNECT_URL });
  expect(request?.params.elicitationId).toBeUndefined();
  const retry = await call("urlh_connect_account", envelope({ elicitation: { url: {} } }), {
    inputResponses: { "url-elicitation": { action: "accept" } },
  });
  expect(textOf(retry.answer)).toBe("connected (call 2)");
  // A caller that cannot open URLs is told which capability the call needs; -32042 never reaches it.
  const refused = await call("urlh_connect_account", envelope({ elicitation: { form: {} } }));
  expect(refused.answer.error.code).toBe(-32021);
  expect(refused.answer.error.data.requiredCapabilities).toEqual({ elicitation: { url: {} } });
});

/** A 2025-11-25 session at `endpoint` that can open URLs; calls `tool` and returns the call's answer. */
async function legacySessionCall(endpoint: string, tool: string): Promise<Message> {
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
  const post = async (extra: Record<string, string>, body: unknown) => {
    const response = await fetch(endpoint, {
      method: "POST",
      headers: { ...headers, ...extra },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    const data = text.split("\n").find((line) => line.startsWith("data:") && line.length > 5);
    return { response, answer: (data ? JSON.parse(data.slice(5)) : text ? JSON.parse(text) : undefined) as Message };
  };
  const init = await post(
    {},
    {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-11-25",
        capabilities: { elicitation: { url: {} } },
        clientInfo: { name: "s", version: "1" },
      },
    },
  );
  const session = {
    "mcp-session-id": init.response.headers.get("mcp-session-id") as string,
    "mcp-protocol-version": "2025-11-25",
  };
  await post(session, { jsonrpc: "2.0", method: "notifications/initialized" });
  return (await post(session, { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: tool, arguments: {} } }))
    .answer;
}

test("a 2025-era session gets the HTTP member's -32042 as the member wrote it (no prefix of the gateway's)", async () => {
  // The member fails every odd call: one of two direct calls is its -32042, and then the gateway's second call is.
  let direct = await legacySessionCall(remote.url, "connect_account");
  if (direct.error === undefined) direct = await legacySessionCall(remote.url, "connect_account");
  expect(direct.error.code).toBe(-32042);
  expect(textOf(await legacySessionCall(gatewayUrl, "urlh_connect_account"))).toStartWith("connected");
  const relayed = await legacySessionCall(gatewayUrl, "urlh_connect_account");
  expect(relayed.error.code).toBe(-32042);
  expect(relayed.error.message).toBe(direct.error.message);
  expect(relayed.error.data.elicitations[0].url).toBe(CONNECT_URL);
});

for (const member of ["gmodern", "glegacy"])
  test(`a 2026-07-28 caller's log level reaches ${member}, and its log lines come back on the request's stream`, async () => {
    const name = `${member}_test_tool_with_logging`;
    const logged = await call(name, envelope({}, { "io.modelcontextprotocol/logLevel": "debug" }));
    const logs = logged.messages.filter((message) => message.method === "notifications/message");
    // The fixtures word the middle line differently.
    expect(logs.map((log) => log.params.data)).toEqual([
      "Tool execution started",
      expect.stringContaining("processing"),
      "Tool execution completed",
    ]);
    expect(logged.messages.at(-1)?.id).toBe(7);
    expect(textOf(logged.answer)).toBe("Tool with logging executed successfully");
    // Without a level, the caller asked for none.
    const quiet = await call(name, envelope({}));
    expect(quiet.messages.filter((message) => message.method === "notifications/message")).toEqual([]);
  });

test("concurrent requests of one caller to one member each get their own log lines, no other's", async () => {
  // The 2026-07-28 fixture over HTTP (a stdio server's bridge cannot tell whose log line it is while
  // several requests are in flight, and drops it): each request's lines are on that request's stream.
  const meta = envelope({}, { "io.modelcontextprotocol/logLevel": "debug" });
  const answers = await Promise.all(Array.from({ length: 6 }, () => call("ghttp_test_tool_with_logging", meta)));
  for (const answered of answers) {
    expect(answered.messages.filter((message) => message.method === "notifications/message")).toHaveLength(3);
    expect(textOf(answered.answer)).toBe("Tool with logging executed successfully");
  }
});

test("a 2026-07-28 member's tools/call answer names the gateway as its server, not the member", async () => {
  const answered = await call("gmodern_test_simple_text", envelope({}));
  expect(answered.answer.result._meta["io.modelcontextprotocol/serverInfo"].name).toBe("mcpmgr-gateway-rounds");
});
