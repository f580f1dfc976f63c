/**
 * The gateway's fast lane for a 2026-07-28 caller's tools/call (src/gateway/modern-pass-through.ts),
 * against the SDK path it stands in for. Real members behind `mcpmgr gateway`, each reached through a
 * recording relay (test/support/recording-proxy.ts) registered as a remote workload, so a test sees
 * what the member was sent and by which path (the lane's ids are strings of its own, the SDK
 * client's numbers): the 2026-07-28 and the 2025-11-25 conformance fixtures on stdio behind their
 * bridges (reached as 2026-07-28 servers), the 2025-11-25 conformance fixture and the URL
 * elicitation fixture over HTTP (2025-era sessions), and the bridge probe on stdio (sleep, progress,
 * exit). Most calls are made twice: as a 2026-07-28 client writes them (the lane takes them), and
 * with an `icons` list in the envelope's clientInfo, which the SDK reads (and never passes on: a member
 * gets the gateway's identity) and the lane leaves to the SDK; the caller must get the same answer both
 * ways, and the member the same request.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import {
  CONFORMANCE_FIXTURE,
  CONFORMANCE_FIXTURE_2026,
  type RunningFixture,
  startConformanceServer,
} from "../support/conformance.ts";
import { createTestGroup, PROBE_FIXTURE, type TestGroup, until } from "../support/gateway-group.ts";
import { type MemberServer, startMemberServer } from "../fixtures/member-server.ts";
import { startLegacyUrlElicitationServer, type UrlElicitationServer } from "../support/url-elicitation.ts";
import { answerMessages } from "../support/raw-session.ts";
import { type RecordedRequest, type RecordingProxy, startRecordingProxy } from "../support/recording-proxy.ts";
import { statelessHeaders, statelessMeta } from "../support/stateless-request.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

let group: TestGroup;
let gatewayUrl: string;
let legacyHttp: RunningFixture;
let urlServer: UrlElicitationServer;
let remote: MemberServer;
let unchecked: ReturnType<typeof Bun.serve>;
/** How the unchecking member's answer is rewritten (text, replacement), if at all. */
let uncheckedAnswer: [string, string] | undefined;
const relays: Record<string, RecordingProxy> = {};

beforeAll(async () => {
  group = await createTestGroup();
  legacyHttp = await startConformanceServer({ fixture: CONFORMANCE_FIXTURE });
  remote = startMemberServer({ name: "remote", tools: ["echo", "refuse_it", "wait_it"] });
  urlServer = await startLegacyUrlElicitationServer();
  // The stdio members run in a group of their own; the gateway's group holds their relays.
  const targets: Record<string, string> = {
    cm: group.run(await group.packageOf(CONFORMANCE_FIXTURE_2026), "src-cm", "src26", "stdio"),
    cl: group.run(await group.packageOf(CONFORMANCE_FIXTURE), "src-cl", "src26", "stdio"),
    probe: group.run(await group.packageOf(PROBE_FIXTURE), "src-probe", "src26"),
    hl: legacyHttp.url,
    ul: urlServer.url,
    ms: remote.url,
  };
  // A 2026-07-28 member that does not check the capabilities it is sent (as a remote one may not):
  // the 2026-07-28 fixture behind a relay that declares every capability for the caller, and rewrites
  // its answer as `uncheckedAnswer` says.
  unchecked = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const body = req.method === "POST" ? ((await req.json()) as Record<string, any>) : undefined;
      if (body?.method === "tools/call")
        body.params._meta["io.modelcontextprotocol/clientCapabilities"] = { elicitation: {}, sampling: {}, roots: {} };
      const headers = new Headers(req.headers);
      headers.delete("content-length");
      const response = await fetch(targets.cm as string, {
        method: req.method,
        headers,
        ...(body ? { body: JSON.stringify(body) } : {}),
        signal: req.signal,
      });
      const answer = await response.text();
      const rewritten = uncheckedAnswer ? answer.replace(uncheckedAnswer[0], uncheckedAnswer[1]) : answer;
      const answerHeaders = new Headers(response.headers);
      answerHeaders.delete("content-length");
      return new Response(rewritten, { status: response.status, headers: answerHeaders });
    },
  });
  targets.cx = `http://127.0.0.1:${unchecked.port}/mcp`;
  for (const [name, target] of Object.entries(targets)) {
    relays[name] = startRecordingProxy(target);
    group.run((relays[name] as RecordingProxy).url, name, "lane26");
  }
  gatewayUrl = (await group.gateway("lane26")).url;
}, 180_000);

afterAll(async () => {
  await group?.cleanup();
  for (const relay of Object.values(relays)) relay.stop();
  await legacyHttp?.stop();
  await urlServer?.stop();
  await remote?.stop();
  await unchecked?.stop(true);
});

type Message = { id?: unknown; method?: string; params?: any; result?: any; error?: any };

interface Answer {
  readonly status: number;
  readonly messages: Message[];
  readonly answer: Message | undefined;
}

const base64 = (text: string) => `=?base64?${Buffer.from(text).toString("base64")}?=`;
const CLIENT_INFO = "io.modelcontextprotocol/clientInfo";

/** The envelope with an `icons` list in its clientInfo: valid, and a field the lane leaves to the SDK. */
function withIcons(meta: Record<string, unknown>): Record<string, unknown> {
  const info = meta[CLIENT_INFO] as Record<string, unknown>;
  return { ...meta, [CLIENT_INFO]: { ...info, icons: [{ src: "https://example.com/lane26.png" }] } };
}

function envelope(capabilities: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  return { ...statelessMeta(capabilities, { name: "lane26", version: "1" }), ...extra };
}

async function read(response: Response): Promise<Answer> {
  const messages = (await answerMessages(response)) as Message[];
  return { status: response.status, messages, answer: messages.find((message) => message.id === 7) };
}

interface CallOptions {
  readonly meta?: Record<string, unknown>;
  readonly args?: Record<string, unknown>;
  readonly extra?: Record<string, unknown>;
  readonly headers?: Record<string, string>;
  /** The SDK path: an `icons` list in the envelope's clientInfo (`withIcons`). */
  readonly viaSdk?: boolean;
  readonly signal?: AbortSignal;
  readonly url?: string;
}

function post(name: string, options: CallOptions = {}): Promise<Response> {
  const meta = options.meta ?? envelope();
  return fetch(options.url ?? gatewayUrl, {
    method: "POST",
    headers: { ...statelessHeaders("tools/call", name), ...options.headers },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 7,
      method: "tools/call",
      params: { name, arguments: options.args ?? {}, _meta: options.viaSdk ? withIcons(meta) : meta, ...options.extra },
    }),
    ...(options.signal ? { signal: options.signal } : {}),
  });
}

const call = async (name: string, options: CallOptions = {}) => read(await post(name, options));

/** What a member was sent, without what differs by path by design (the id, the progress token's value). */
function sent(request: RecordedRequest | undefined) {
  const body = structuredClone(request?.body) as Record<string, any>;
  delete body.id;
  if (body.params?._meta?.progressToken !== undefined) body.params._meta.progressToken = "token";
  const headers: Record<string, string> = {};
  for (const [key, value] of request?.headers ?? [])
    if (key.startsWith("mcp-") && key !== "mcp-session-id") headers[key] = value;
  return { body, headers, session: request?.headers.has("mcp-session-id") };
}

/**
 * `name` (member `member`, its own tool `tool`) called through the lane and then through the SDK: both
 * answers, and what the member was sent each time. Fails unless each call took the path it was meant to.
 */
async function both(member: string, tool: string, options: CallOptions = {}) {
  const relay = relays[member] as RecordingProxy;
  const name = `${member}_${tool}`;
  const before = relay.calls(tool).length;
  const lane = await call(name, options);
  const laneSent = relay.calls(tool).slice(before);
  const sdk = await call(name, { ...options, viaSdk: true });
  const sdkSent = relay.calls(tool).slice(before + laneSent.length);
  expect(laneSent.map((request) => request.body?.id)).toEqual([expect.stringMatching(/^mcpmgr-m\d+$/)]);
  expect(sdkSent.map((request) => typeof request.body?.id)).toEqual(["number"]);
  return { lane, sdk, laneSent: laneSent[0] as RecordedRequest, sdkSent: sdkSent[0] as RecordedRequest };
}

/**
 * The messages without what a member makes anew on every call: a sealed requestState (its flight and
 * expiry), and with `anyText` a result's text (a fixture that reports its run time).
 */
function comparable(messages: readonly Message[], anyText = false): unknown[] {
  return messages.map((message) => {
    const copy = structuredClone(message);
    if (typeof copy.result?.requestState === "string") copy.result.requestState = "sealed";
    if (anyText) for (const block of copy.result?.content ?? []) block.text = "text";
    return copy;
  });
}

/** Both paths gave the caller the same answer (status and messages), and the member the same request. */
function expectSame(outcome: Awaited<ReturnType<typeof both>>, anyText = false): void {
  expect(outcome.lane.status).toBe(outcome.sdk.status);
  expect(comparable(outcome.lane.messages, anyText)).toEqual(comparable(outcome.sdk.messages, anyText));
  expect(sent(outcome.laneSent)).toEqual(sent(outcome.sdkSent));
}

test("results of both eras' members reach the caller as through the SDK, stamped with the gateway's identity", async () => {
  for (const [member, tool] of [
    ["cm", "test_simple_text"],
    ["cl", "test_simple_text"],
    ["hl", "test_simple_text"],
    ["cm", "test_multiple_content_types"],
    ["hl", "test_multiple_content_types"],
    ["cm", "test_error_handling"],
    ["hl", "test_error_handling"],
  ] as const) {
    const outcome = await both(member, tool);
    expectSame(outcome);
    expect(outcome.lane.answer?.result?.resultType).toBe("complete");
    expect(outcome.lane.answer?.result?._meta["io.modelcontextprotocol/serverInfo"].name).toBe("mcpmgr-gateway-lane26");
  }
});

test("a member's JSON-RPC error reaches the caller as through the SDK, with its code, message and data", async () => {
  const refused = await both("ms", "refuse_it", { args: { a: 1 } });
  expectSame(refused);
  expect(refused.lane.answer?.error).toEqual({
    code: -32602,
    message: "remote refuses refuse_it",
    data: { tool: "refuse_it" },
  });
  expect(refused.lane.status).toBe(200);
});

test("a 2026-07-28 member gets the caller's capabilities (only what it may ask for), its revision and the gateway's identity", async () => {
  const capabilities = {
    sampling: {},
    roots: { listChanged: true },
    elicitation: { form: {} },
    experimental: { x: {} },
  };
  const outcome = await both("cm", "test_simple_text", { meta: envelope(capabilities) });
  expectSame(outcome);
  const meta = outcome.laneSent.body?.params._meta;
  expect(meta["io.modelcontextprotocol/clientCapabilities"]).toEqual({
    sampling: {},
    roots: { listChanged: true },
    elicitation: { form: {} },
  });
  expect(meta["io.modelcontextprotocol/protocolVersion"]).toBe("2026-07-28");
  expect(meta["io.modelcontextprotocol/clientInfo"].name).toBe("mcpmgr-gateway");
  expect(outcome.laneSent.headers.get("mcp-name")).toBe("test_simple_text");
  // What most clients declare: a bare elicitation (form mode), and capabilities the gateway does not pass on.
  const usual = { sampling: {}, elicitation: {}, roots: { listChanged: true }, tasks: { list: {} } };
  for (const member of ["cm", "cl", "hl"])
    expectSame(await both(member, "test_simple_text", { meta: envelope(usual) }));
  const bare = await both("cm", "test_input_required_result_elicitation", { meta: envelope(usual) });
  expectSame(bare);
  expect(bare.lane.answer?.result.resultType).toBe("input_required");
  // A 2025-era member gets a session's call: no envelope, its session.
  const legacy = await both("hl", "test_simple_text", { meta: envelope(capabilities) });
  expectSame(legacy);
  expect(legacy.laneSent.body?.params._meta).toBeUndefined();
  expect(legacy.laneSent.headers.has("mcp-session-id")).toBe(true);
});

test("OpenTelemetry trace context in _meta (traceparent, tracestate, baggage) takes the lane; the member gets it as through the SDK", async () => {
  const trace = {
    traceparent: "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
    tracestate: "vendor=opaque",
    baggage: "user.id=ada",
  };
  // Both eras' members get the three keys in their request's _meta (the SDK path passes them on as written).
  for (const member of ["cm", "cl", "hl"]) {
    const outcome = await both(member, "test_simple_text", { meta: envelope({}, trace) });
    expectSame(outcome);
    expect(outcome.laneSent.body?.params._meta).toMatchObject(trace);
    expect(outcome.lane.answer?.result?.content[0].text).toBe("This is a simple text response for testing.");
  }
  // With a progress token beside them.
  expectSame(await both("hl", "test_simple_text", { meta: envelope({}, { ...trace, progressToken: "p-1" }) }));
});

/** A client's own `_meta` keys: vendor-prefixed, under a reserved prefix the revision does not define, and odd. */
const CLIENT_KEYS = {
  "com.example.client/toolUseId": "toolu_01",
  "com.example/context": { nested: [1, { a: null }], flag: true },
  "io.modelcontextprotocol/notYetDefined": 1,
  "io.modelcontextprotocol/subscriptionId": 3,
  "not a prefixed key": "x",
  traceparent: { not: "a string" },
};

test("a client's own _meta keys take the lane and reach both eras' members as written, as through the SDK", async () => {
  for (const member of ["cm", "cl", "hl"]) {
    const outcome = await both(member, "test_simple_text", { meta: envelope({}, CLIENT_KEYS) });
    expectSame(outcome);
    // A 2026-07-28 member gets them beside the gateway's envelope, the 2025-era one without any.
    if (member === "hl") expect(outcome.laneSent.body?.params._meta).toEqual(CLIENT_KEYS);
    else expect(outcome.laneSent.body?.params._meta).toMatchObject(CLIENT_KEYS);
    expect(outcome.lane.answer?.result?.content[0].text).toBe("This is a simple text response for testing.");
  }
  // Beside a progress token (the member gets the gateway's) and the envelope's other keys.
  for (const member of ["cm", "hl"]) {
    const meta = envelope(
      { sampling: {} },
      { ...CLIENT_KEYS, progressToken: "p-2", "io.modelcontextprotocol/logLevel": "info" },
    );
    const outcome = await both(member, "test_tool_with_progress", { meta });
    expectSame(outcome, true);
    expect(outcome.laneSent.body?.params._meta).toMatchObject(CLIENT_KEYS);
    const progress = outcome.lane.messages.filter((message) => message.method === "notifications/progress");
    expect(progress.map((message) => message.params.progressToken)).toEqual(["p-2", "p-2", "p-2"]);
  }
});

test("Mcp-Name in its Base64 form takes the lane; the member gets the name as the gateway writes it", async () => {
  for (const member of ["cm", "hl"]) {
    const headers = { "mcp-name": base64(`${member}_test_simple_text`) };
    const outcome = await both(member, "test_simple_text", { headers });
    expectSame(outcome);
    expect(outcome.lane.answer?.result?.content[0].text).toBe("This is a simple text response for testing.");
  }
  const modern = await both("cm", "test_simple_text", { headers: { "mcp-name": base64("cm_test_simple_text") } });
  expect(modern.laneSent.headers.get("mcp-name")).toBe("test_simple_text");
});

test("params the revision does not define (task, a vendor's) take the lane and are dropped, as through the SDK", async () => {
  const extra = { task: { ttl: 60_000 }, "com.example/hint": { fast: true } };
  for (const member of ["cm", "cl", "hl"]) {
    const outcome = await both(member, "test_simple_text", { extra });
    expectSame(outcome);
    expect(Object.keys(outcome.laneSent.body?.params ?? {}).sort()).toEqual(
      member === "hl" ? ["arguments", "name"] : ["_meta", "arguments", "name"],
    );
    expect(outcome.lane.answer?.result?.content[0].text).toBe("This is a simple text response for testing.");
  }
});

test("sampling and roots answers in inputResponses take the lane and reach the member as written", async () => {
  const meta = envelope({ sampling: {}, roots: {} });
  const sampled = { role: "assistant", content: { type: "text", text: "Paris" }, model: "m", stopReason: "endTurn" };
  const round = await both("cm", "test_input_required_result_sampling", { meta });
  expectSame(round);
  expect(round.lane.answer?.result.inputRequests.capital_question.method).toBe("sampling/createMessage");
  const answered = await both("cm", "test_input_required_result_sampling", {
    meta,
    extra: { inputResponses: { capital_question: sampled } },
  });
  expectSame(answered);
  expect(answered.laneSent.body?.params.inputResponses).toEqual({ capital_question: sampled });
  expect(answered.lane.answer?.result.content[0].text).toBe("Sampling response: Paris");
  const roots = { client_roots: { roots: [{ uri: "file:///work", name: "work" }] } };
  const listed = await both("cm", "test_input_required_result_list_roots", { meta, extra: { inputResponses: roots } });
  expectSame(listed);
  expect(listed.lane.answer?.result.content[0].text).toBe("Client exposed 1 root(s)");
  // Answers the member must judge (neither the SDK nor the lane checks them): the member asks again.
  const odd = { user_name: { action: "maybe" }, other: 5 };
  const judged = await both("cm", "test_input_required_result_elicitation", {
    meta: envelope({ elicitation: {} }),
    extra: { inputResponses: odd },
  });
  expectSame(judged);
  expect(judged.laneSent.body?.params.inputResponses).toEqual(odd);
  expect(judged.lane.answer?.result.resultType).toBe("input_required");
});

test("a 2025-era stdio server's sampling request, answered on the retry through the lane as through the SDK", async () => {
  const relay = relays.cl as RecordingProxy;
  const meta = envelope({ sampling: {} });
  const sampled = { role: "assistant", content: { type: "text", text: "hello back" }, model: "m" };
  const answers: Answer[] = [];
  const retries: RecordedRequest[] = [];
  for (const viaSdk of [false, true]) {
    const round = await call("cl_test_sampling", { meta, args: { prompt: "hi" }, viaSdk });
    const { inputRequests, requestState } = round.answer?.result ?? {};
    expect(Object.keys(inputRequests ?? {})).toEqual(["sampling"]);
    answers.push(
      await call("cl_test_sampling", {
        meta,
        args: { prompt: "hi" },
        viaSdk,
        extra: { inputResponses: { sampling: sampled }, requestState },
      }),
    );
    const retry = relay.calls("test_sampling").at(-1) as RecordedRequest;
    expect(retry.body?.params.requestState).toBe(requestState);
    retries.push(retry);
  }
  const [lane, sdk] = answers as [Answer, Answer];
  expect(typeof retries[0]?.body?.id).toBe("string");
  expect(typeof retries[1]?.body?.id).toBe("number");
  expect(lane.status).toBe(sdk.status);
  expect(comparable(lane.messages)).toEqual(comparable(sdk.messages));
  expect(lane.answer?.result.content[0].text).toBe("LLM response: hello back");
  const withoutState = (request: RecordedRequest | undefined) => {
    const seen = sent(request);
    seen.body.params.requestState = "sealed";
    return seen;
  };
  expect(withoutState(retries[0])).toEqual(withoutState(retries[1]));
});

test("a 2026-07-28 member's result the SDK's schema refuses or trims: the lane's documented answers", async () => {
  // Documented differences (modern-pass-through.ts, modern-answers.ts `complete`, docs/gateway.md): the
  // lane runs no result schema; the member is wrong in each case.
  const block = '"content":[{"type":"text","text":"This is a simple text response for testing."}]';
  const failed = "workload 'cx' failed to answer (Invalid result for tools/call:";
  const cases: [string, Record<string, unknown>, Record<string, unknown>][] = [
    // No content: an empty one here, where the SDK client refuses the result.
    ['"structuredContent":{"a":1}', { result: { structuredContent: { a: 1 }, content: [] } }, { error: failed }],
    // A key no content block has: passed on here, dropped by the SDK server.
    [
      '"content":[{"type":"text","text":"t","extra":1}]',
      { result: { content: [{ type: "text", text: "t", extra: 1 }] } },
      { result: { content: [{ type: "text", text: "t" }] } },
    ],
    // Malformed annotations on a text block: passed on here, refused by the SDK client.
    [
      '"content":[{"type":"text","text":"t","annotations":5}]',
      { result: { content: [{ type: "text", text: "t", annotations: 5 }] } },
      { error: failed },
    ],
    // No tool result at all: refused on both paths, in different words.
    ['"content":[{"type":"bogus"}]', { error: "Invalid tools/call result: not a CallToolResult" }, { error: failed }],
  ];
  const read = (answer: Message | undefined) =>
    answer?.error ? { error: answer.error.message.slice(0, failed.length) } : { result: answer?.result };
  try {
    for (const [replacement, lane, sdk] of cases) {
      uncheckedAnswer = [block, replacement];
      const outcome = await both("cx", "test_simple_text");
      expect(sent(outcome.laneSent)).toEqual(sent(outcome.sdkSent));
      expect(read(outcome.lane.answer)).toMatchObject(lane);
      expect(read(outcome.sdk.answer)).toMatchObject(sdk);
    }
  } finally {
    uncheckedAnswer = undefined;
  }
});

test("an input round of a 2026-07-28 member, and the caller's inputResponses and requestState on the retry", async () => {
  const meta = envelope({ elicitation: { form: {} } });
  const first = await both("cm", "test_input_required_result_elicitation", { meta });
  expectSame(first);
  expect(first.lane.answer?.result.resultType).toBe("input_required");
  const inputResponses = { user_name: { action: "accept", content: { name: "Ada" } } };
  const retry = await both("cm", "test_input_required_result_elicitation", { meta, extra: { inputResponses } });
  expectSame(retry);
  expect(retry.laneSent.body?.params.inputResponses).toEqual(inputResponses);
  expect(retry.lane.answer?.result.content[0].text).toBe("Hello, Ada!");

  const stateful = await call("cm_test_input_required_result_request_state", { meta });
  const { requestState } = stateful.answer?.result ?? {};
  expect(typeof requestState).toBe("string");
  const confirm = { confirm: { action: "accept", content: { ok: true } } };
  const verified = await both("cm", "test_input_required_result_request_state", {
    meta,
    extra: { inputResponses: confirm, requestState },
  });
  expectSame(verified);
  expect(verified.laneSent.body?.params.requestState).toBe(requestState);
  expect(verified.lane.answer?.result.content[0].text).toBe("state-ok: requestState verified");
  // A caller without the capability: the member's -32021, with its HTTP 400, both ways.
  const refused = await both("cm", "test_input_required_result_elicitation");
  expectSame(refused);
  expect(refused.lane.status).toBe(400);
  expect(refused.lane.answer?.error.code).toBe(-32021);
});

test("a member's input requests the caller's capabilities do not cover, or of no kind the revision knows, are refused as by the SDK", async () => {
  const elicit = '"user_name":{"method":"elicitation/create"';
  for (const [rewrite, code, status] of [
    [undefined, -32021, 400],
    [[elicit, '"user_name":{"method":"tools/list"'], -32603, 200],
    [[elicit, '"user_name":"who?","x":{"method":"elicitation/create"'], -32603, 200],
  ] as const) {
    uncheckedAnswer = rewrite as [string, string] | undefined;
    // The caller declares sampling only: the member asks for a form elicitation all the same.
    const outcome = await both("cx", "test_input_required_result_elicitation", { meta: envelope({ sampling: {} }) });
    expectSame(outcome);
    expect(outcome.lane.status).toBe(status);
    expect(outcome.lane.answer?.error?.code).toBe(code);
  }
  uncheckedAnswer = undefined;
  // Declared, it is passed on.
  const asked = await both("cx", "test_input_required_result_elicitation", { meta: envelope({ elicitation: {} }) });
  expectSame(asked);
  expect(asked.lane.answer?.result?.resultType).toBe("input_required");
});

test("a 2025-era member's -32042 becomes an input round (or -32021) on the lane as on the SDK path", async () => {
  // The member fails every odd call: the lane's and the SDK's first calls both meet its -32042.
  const meta = envelope({ elicitation: { url: {} } });
  const laneRound = await call("ul_connect_account", { meta });
  const laneRetry = await call("ul_connect_account", {
    meta,
    extra: { inputResponses: { "url-elicitation": { action: "accept" } } },
  });
  const sdkRound = await call("ul_connect_account", { meta, viaSdk: true });
  expect(laneRound.status).toBe(200);
  expect(laneRound.messages).toEqual(sdkRound.messages);
  expect(laneRound.answer?.result.resultType).toBe("input_required");
  expect(laneRetry.answer?.result.content[0].text).toBe("connected (call 2)");
  await call("ul_connect_account", { meta, viaSdk: true });
  const laneRefused = await call("ul_connect_account", { meta: envelope({ elicitation: { form: {} } }) });
  await call("ul_connect_account", { meta, viaSdk: true });
  const sdkRefused = await call("ul_connect_account", { meta: envelope({ elicitation: { form: {} } }), viaSdk: true });
  expect(laneRefused.status).toBe(400);
  expect(laneRefused.messages).toEqual(sdkRefused.messages);
  expect(laneRefused.answer?.error.code).toBe(-32021);
  const calls = (relays.ul as RecordingProxy).calls("connect_account");
  expect(calls.filter((request) => typeof request.body?.id === "string")).toHaveLength(3);
});

test("the requested log level reaches the member, and only that request's lines come back; none without a level", async () => {
  const debug = envelope({}, { "io.modelcontextprotocol/logLevel": "debug" });
  for (const member of ["cm", "cl"]) {
    const logged = await both(member, "test_tool_with_logging", { meta: debug });
    expectSame(logged);
    expect(logged.laneSent.body?.params._meta["io.modelcontextprotocol/logLevel"]).toBe("debug");
    expect(logged.lane.messages.filter((message) => message.method === "notifications/message")).toHaveLength(3);
    const quiet = await both(member, "test_tool_with_logging");
    expectSame(quiet);
    expect(quiet.lane.messages.filter((message) => message.method === "notifications/message")).toEqual([]);
  }
  // A 2025-era member's lines cannot be told apart per request: none reach the caller, on either path.
  const legacy = await both("hl", "test_tool_with_logging", { meta: debug });
  expectSame(legacy);
  expect(legacy.lane.messages.filter((message) => message.method === "notifications/message")).toEqual([]);
});

test("progress reaches the caller under its own token", async () => {
  for (const member of ["cm", "cl", "hl"]) {
    const outcome = await both(member, "test_tool_with_progress", { meta: envelope({}, { progressToken: "p-1" }) });
    expectSame(outcome, true);
    const progress = outcome.lane.messages.filter((message) => message.method === "notifications/progress");
    expect(progress.length).toBeGreaterThan(0);
    for (const message of progress) expect(message.params.progressToken).toBe("p-1");
  }
});

test("a member's own request mid-call: a 2025-era HTTP member is refused it, a stdio one asks through an input round", async () => {
  const meta = envelope({ sampling: {} });
  const refused = await both("hl", "test_sampling", { meta, args: { prompt: "hi" } });
  expectSame(refused);
  const round = await both("cl", "test_sampling", { meta, args: { prompt: "hi" } });
  expectSame(round);
  expect(round.lane.answer?.result.resultType).toBe("input_required");
});

test("the tool's Mcp-Param headers are checked at the gateway and sent on to a 2026-07-28 member", async () => {
  const args = { region: "eu-west-1", priority: 3 };
  const mirrored = { "mcp-param-region": "eu-west-1", "mcp-param-priority": "3" };
  const relay = relays.cm as RecordingProxy;
  const outcome = await both("cm", "test_mirrored_arguments", { args, headers: mirrored });
  expectSame(outcome);
  expect(outcome.lane.answer?.result.content[0].text).toBe("region=eu-west-1 priority=3");
  expect(outcome.laneSent.headers.get("mcp-param-region")).toBe("eu-west-1");
  expect(outcome.laneSent.headers.get("mcp-param-priority")).toBe("3");
  // A header that disagrees with the body, or is missing, is refused before any member sees the call.
  const seen = relay.seen.length;
  for (const headers of [{ ...mirrored, "mcp-param-region": "us-east-1" }, { "mcp-param-priority": "3" }]) {
    const refused = await call("cm_test_mirrored_arguments", { args, headers });
    expect(refused.status).toBe(400);
    expect(refused.answer?.error.code).toBe(-32020);
  }
  expect(relay.seen.length).toBe(seen);
});

test("requests the revision says must be refused are refused as by the SDK, and never reach a member", async () => {
  const relay = relays.cm as RecordingProxy;
  const seen = relay.seen.length;
  const name = "cm_test_simple_text";
  const refusals = [
    // MCP-Protocol-Version disagreeing with the envelope's.
    await call(name, { headers: { "mcp-protocol-version": "2025-11-25" } }),
    // Mcp-Name disagreeing with the body, or missing; Mcp-Method missing.
    await call(name, { headers: { "mcp-name": "cm_test_error_handling" } }),
    // Mcp-Name in a Base64 form that is not canonical, or that names another tool.
    await call(name, { headers: { "mcp-name": base64(name).replace("=?=", "?=") } }),
    await call(name, { headers: { "mcp-name": base64("cm_test_error_handling") } }),
    await read(
      await fetch(gatewayUrl, {
        method: "POST",
        headers: statelessHeaders("tools/call"),
        body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name, _meta: envelope() } }),
      }),
    ),
    await read(
      await fetch(gatewayUrl, {
        method: "POST",
        headers: { ...statelessHeaders(), "mcp-name": name },
        body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name, _meta: envelope() } }),
      }),
    ),
  ];
  for (const refused of refusals) {
    expect(refused.status).toBe(400);
    expect(refused.answer?.error.code).toBe(-32020);
  }
  // A revision the gateway does not serve, in both places.
  const future = await call(name, {
    headers: { "mcp-protocol-version": "2099-01-01" },
    meta: { ...envelope(), "io.modelcontextprotocol/protocolVersion": "2099-01-01" },
  });
  expect(future.status).toBe(400);
  expect(future.answer?.error.code).toBe(-32022);
  expect(relay.seen.length).toBe(seen);
});

/** The probe's own count of the calls it saw cancelled, and of those still sleeping. */
async function stats(): Promise<{ aborted: unknown[]; sleeping: number }> {
  const answer = await call("probe_stats");
  return JSON.parse(answer.answer?.result.content[0].text);
}

test("a client that closes its request cancels the call at the member", async () => {
  const before = (await stats()).aborted.length;
  const abort = new AbortController();
  const sleeping = post("probe_sleep", { args: { ms: 60_000 }, signal: abort.signal }).catch(() => undefined);
  expect(await until(async () => (await stats()).sleeping === 1)).toBe(true);
  const relayed = (relays.probe as RecordingProxy).calls("sleep").at(-1);
  expect(typeof relayed?.body?.id).toBe("string");
  abort.abort();
  await sleeping;
  expect(await until(async () => (await stats()).aborted.length === before + 1)).toBe(true);
  expect(await until(() => relayed?.aborted === true)).toBe(true);
});

test("a 2025-era member hears a closed request as notifications/cancelled for the call, on either path", async () => {
  const relay = relays.ms as RecordingProxy;
  const cancelled = (id: unknown) =>
    relay.seen.some((r) => r.body?.method === "notifications/cancelled" && r.body.params?.requestId === id);
  for (const viaSdk of [false, true]) {
    const abort = new AbortController();
    const before = relay.calls("wait_it").length;
    const waiting = post("ms_wait_it", { viaSdk, signal: abort.signal }).catch(() => undefined);
    expect(await until(() => relay.calls("wait_it").length === before + 1)).toBe(true);
    const id = relay.calls("wait_it").at(-1)?.body?.id;
    expect(typeof id).toBe(viaSdk ? "number" : "string");
    abort.abort();
    await waiting;
    expect(await until(() => cancelled(id))).toBe(true);
  }
});

test("a call past MCPMGR_REQUEST_TIMEOUT fails as on the SDK path and is cancelled at the member; progress keeps it alive", async () => {
  const quick = await group.gatewayWithEnv({ MCPMGR_REQUEST_TIMEOUT: "1s" }, "lane26");
  try {
    const before = (await stats()).aborted.length;
    const late = await call("probe_sleep", { url: quick.url, args: { ms: 3_000 } });
    expect(await until(async () => (await stats()).aborted.length === before + 1)).toBe(true);
    const lateSdk = await call("probe_sleep", { url: quick.url, args: { ms: 3_000 }, viaSdk: true });
    expect(late.messages).toEqual(lateSdk.messages);
    expect(late.answer?.error).toEqual({
      code: -32603,
      message:
        "workload 'probe' failed to answer (Request timed out); its tools, prompts and resources are unavailable",
      data: { workload: "probe" },
    });
    const slow = await call("probe_progress", {
      url: quick.url,
      args: { steps: 4, delayMs: 400, tag: "s" },
      meta: envelope({}, { progressToken: 5 }),
    });
    expect(slow.answer?.result).toBeDefined();
    expect(slow.messages.filter((message) => message.method === "notifications/progress")).toHaveLength(4);
  } finally {
    await quick.stop();
  }
});

test("a 2025-era member that restarts: the call that meets the forgotten session goes again on a new one, in both lanes", async () => {
  const relay = relays.hl as RecordingProxy;
  const port = new URL(legacyHttp.url).port;
  const text = (answer: Answer) => answer.answer?.result?.content?.[0]?.text;
  const sessionOf = (request: RecordedRequest | undefined) => request?.headers.get("mcp-session-id");
  for (const viaSdk of [false, true]) {
    expect(text(await call("hl_test_simple_text", { viaSdk }))).toBeString();
    // The upstream connection may notice the restart by itself first (its event stream breaks), and
    // then the call simply opens a new session: restart again until a call meets the forgotten session.
    let sentAgain = false;
    for (let attempt = 0; attempt < 3 && !sentAgain; attempt++) {
      const before = sessionOf(relay.calls("test_simple_text").at(-1));
      await legacyHttp.stop();
      legacyHttp = await startConformanceServer({ fixture: CONFORMANCE_FIXTURE, args: ["--port", port] });
      const seen = relay.calls("test_simple_text").length;
      // Answered either way: never the member's 404 passed on as the call's failure.
      expect(text(await call("hl_test_simple_text", { viaSdk }))).toBeString();
      const sent = relay.calls("test_simple_text").slice(seen).map(sessionOf);
      if (sent.length === 2) {
        // Once on the forgotten session, then on a new one.
        expect(sent[0]).toBe(before);
        expect(sent[1]).not.toBe(before);
        sentAgain = true;
      }
    }
    expect(sentAgain).toBe(true);
    expect(text(await call("hl_test_simple_text", { viaSdk }))).toBeString();
  }
});

test("a call that meets the forgotten session late goes again on the session opened since, and does not end it", async () => {
  const relay = relays.hl as RecordingProxy;
  const port = new URL(legacyHttp.url).port;
  const sessionOf = (request: RecordedRequest | undefined) => request?.headers.get("mcp-session-id");
  const lastCall = () => relay.calls("test_simple_text").at(-1);
  let checked = false;
  // The upstream connection may notice the restart by itself before the late call is sent: then it is
  // sent on the new session, and the restart is tried again.
  for (let attempt = 0; attempt < 5 && !checked; attempt++) {
    expect((await call("hl_test_simple_text")).answer?.result).toBeDefined();
    const before = sessionOf(lastCall());
    await legacyHttp.stop();
    legacyHttp = await startConformanceServer({ fixture: CONFORMANCE_FIXTURE, args: ["--port", port] });
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    relay.hold = (request) => (request.body?.params?.arguments?.late === true ? released : undefined);
    const late = call("hl_test_simple_text", { args: { late: true } });
    expect(await until(() => lastCall()?.body?.params?.arguments?.late === true)).toBe(true);
    const lateSession = sessionOf(lastCall());
    relay.hold = undefined;
    // Meanwhile the next call finds the forgotten session (or the connection noticed) and opens a new one.
    expect((await call("hl_test_simple_text")).answer?.result).toBeDefined();
    const fresh = sessionOf(lastCall());
    release();
    const lateAnswer = await late;
    if (lateSession !== before || fresh === before) continue;
    // The late call met the old session, and went again on the new one, which lives on at the member.
    expect(lateAnswer.answer?.result).toBeDefined();
    expect(sessionOf(lastCall())).toBe(fresh);
    expect(relay.seen.filter((r) => r.method === "DELETE").map(sessionOf)).not.toContain(fresh);
    expect((await call("hl_test_simple_text")).answer?.result).toBeDefined();
    expect(sessionOf(lastCall())).toBe(fresh);
    checked = true;
  }
  expect(checked).toBe(true);
});

// Last: it restarts the probe's server.
test("a stdio member whose server exits mid-call: the call gets its error, and later calls work", async () => {
  const exited = await call("probe_exit", { args: { code: 1, delayMs: 10 } });
  expect(exited.answer?.error).toEqual({ code: -32603, message: "the MCP server exited" });
  expect(
    await until(
      // Until the workload is back, the call is a tool error naming it (isError).
      async () => {
        const result = (await call("probe_echo", { args: { text: "back" } })).answer?.result;
        return result !== undefined && result.isError !== true;
      },
      40_000,
    ),
  ).toBe(true);
});
