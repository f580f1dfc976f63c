/**
 * The gateway's fast lane for tools/call (src/gateway/pass-through.ts), end to end: a stdio probe
 * workload and a streamable-HTTP member behind `mcpmgr gateway`, driven over raw HTTP so each test
 * sees exactly what the client gets and what the workload saw. Each asserts something the lane must
 * keep (or, for ids and disconnects, what it adds over the SDK path).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { type MemberServer, startMemberServer } from "../fixtures/member-server.ts";
import { createTestGroup, PROBE_FIXTURE, type TestGroup, until } from "../support/gateway-group.ts";
import { openRawSession } from "../support/raw-session.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

let group: TestGroup;
let gateway: Awaited<ReturnType<TestGroup["gateway"]>>;
let member: MemberServer;

beforeAll(async () => {
  group = await createTestGroup();
  member = startMemberServer({ name: "remote", tools: ["echo", "refuse_it"] });
  group.run(await group.packageOf(PROBE_FIXTURE), "alpha", "lane");
  group.run(member.url, "remote", "lane");
  gateway = await group.gateway("lane");
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  await member?.stop();
});

interface Answer {
  readonly status: number;
  readonly type: string;
  readonly text: string;
  /** Every JSON-RPC message in the body (one for JSON, one per event for an event stream). */
  readonly messages: Record<string, unknown>[];
}

async function read(response: Response): Promise<Answer> {
  const text = await response.text();
  const type = response.headers.get("content-type") ?? "";
  const datas = type.includes("text/event-stream")
    ? text
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).trim())
    : text
      ? [text]
      : [];
  return { status: response.status, type, text, messages: datas.map((data) => JSON.parse(data)) };
}

/** A 2025-era session over raw HTTP: what it returns POSTs in the session. */
async function openSession(url = gateway.url): Promise<(body: string, signal?: AbortSignal) => Promise<Response>> {
  const session = await openRawSession(url, "2025-06-18", "lane");
  return (body, signal) => session.post(body, signal ? { signal } : {});
}

const call = (id: string, name: string, args: object, meta?: object) =>
  `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":${JSON.stringify({
    name,
    arguments: args,
    ...(meta ? { _meta: meta } : {}),
  })}}`;

/** The JSON payload of a probe tool's text result. */
function payload(message: Record<string, unknown> | undefined): Record<string, unknown> {
  const result = message?.result as { content: { text: string }[] };
  return JSON.parse(result.content[0]?.text as string) as Record<string, unknown>;
}

async function probeStats(post: Awaited<ReturnType<typeof openSession>>) {
  const answer = await read(await post(call('"stats"', "alpha_stats", {})));
  return payload(answer.messages[0]) as { aborted: unknown[]; sleeping: number };
}

test("a call is answered in the workload's framing, under the client's id, with the workload's own tool name upstream", async () => {
  const post = await openSession();
  const answer = await read(await post(call('"first"', "alpha_raw_request", {})));
  expect(answer.status).toBe(200);
  // The bridge answers JSON: so does the gateway (no event stream around a single answer).
  expect(answer.type).toStartWith("application/json");
  expect(answer.messages).toHaveLength(1);
  expect(answer.messages[0]?.id).toBe("first");
  const raw = JSON.parse(payload(answer.messages[0]).raw as string) as { params: { name: string } };
  // The workload saw its own name for the tool, not the gateway's.
  expect(raw.params.name).toBe("raw_request");
});

test("arguments or _meta with an own __proto__ key are left to the SDK, which drops that key", async () => {
  const post = await openSession();
  const proto = '"__proto__":{"polluted":true}';
  for (const params of [
    `{"name":"alpha_raw_request","arguments":{${proto},"k":1}}`,
    `{"name":"alpha_raw_request","arguments":{"k":1},"_meta":{${proto},"com.example/k":1}}`,
  ]) {
    const answer = await read(await post(`{"jsonrpc":"2.0","id":"p","method":"tools/call","params":${params}}`));
    // What the server saw (the lane would have relayed the key as parsed).
    const raw = JSON.parse(payload(answer.messages[0]).raw as string);
    expect(raw.params.arguments).toEqual({ k: 1 });
    expect(Object.hasOwn(raw.params.arguments, "__proto__")).toBe(false);
    expect(Object.hasOwn(raw.params._meta ?? {}, "__proto__")).toBe(false);
  }
});

test("ids beyond 2^53 and fractional ids are answered with every digit, as the bridge does", async () => {
  const post = await openSession();
  for (const id of [
    "123456789012345678901234567890",
    "-9007199254740993",
    "1.50",
    "0.1000000000000000055511151231257827",
  ]) {
    const answer = await read(await post(call(id, "alpha_echo", { text: `id ${id}` })));
    expect(answer.status).toBe(200);
    expect(answer.text).toContain(`"id":${id}`);
    expect(answer.text).toContain(`id ${id}`);
  }
});

test("progress reaches the caller under its own token (a number here), on an event stream", async () => {
  const post = await openSession();
  const answer = await read(
    await post(call("5", "alpha_progress", { steps: 3, delayMs: 5, tag: "n" }, { progressToken: 77 })),
  );
  expect(answer.type).toStartWith("text/event-stream");
  const progress = answer.messages.filter((m) => m.method === "notifications/progress");
  expect(progress.map((m) => (m.params as { progressToken: unknown }).progressToken)).toEqual([77, 77, 77]);
  expect(progress.map((m) => (m.params as { message: unknown }).message)).toEqual(["n:1", "n:2", "n:3"]);
  const last = answer.messages.at(-1) as Record<string, unknown>;
  expect(last.id).toBe(5);
  expect(last.result).toBeDefined();
});

test("a JSON-RPC error from the workload reaches the client with its code, message and data", async () => {
  const post = await openSession();
  const answer = await read(await post(call('"e"', "remote_refuse_it", { a: 1 })));
  expect(answer.messages).toHaveLength(1);
  expect(answer.messages[0]).toEqual({
    jsonrpc: "2.0",
    id: "e",
    error: { code: -32602, message: "remote refuses refuse_it", data: { tool: "refuse_it" } },
  });
  // The member still answers the next call on that session.
  const next = await read(await post(call('"n"', "remote_echo", { b: 2 })));
  const result = next.messages[0]?.result as { content: { text: string }[] } | undefined;
  expect(result?.content[0]?.text).toBe('remote ran echo {"b":2}');
});

test("notifications/cancelled for a relayed call reaches the workload", async () => {
  const post = await openSession();
  const sleeping = post(call('"long"', "alpha_sleep", { ms: 60_000 }));
  const before = (await probeStats(post)).aborted.length;
  expect(await until(async () => (await probeStats(post)).sleeping === 1)).toBe(true);
  await (
    await post(
      JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "long", reason: "x" } }),
    )
  ).text();
  expect(await until(async () => (await probeStats(post)).aborted.length === before + 1)).toBe(true);
  // The cancelled call's POST ends without an answer (MCP: a cancelled request gets none).
  const ended = await read(await sleeping);
  expect(ended.messages.filter((m) => m.id === "long")).toEqual([]);
});

test("a client that disconnects mid-call cancels it at the workload", async () => {
  const post = await openSession();
  const before = (await probeStats(post)).aborted.length;
  const abort = new AbortController();
  const sleeping = post(call('"gone"', "alpha_sleep", { ms: 60_000 }), abort.signal).catch(() => undefined);
  expect(await until(async () => (await probeStats(post)).sleeping === 1)).toBe(true);
  abort.abort();
  await sleeping;
  expect(await until(async () => (await probeStats(post)).aborted.length === before + 1)).toBe(true);
  expect((await probeStats(post)).sleeping).toBe(0);
});

test("a call the lane does not take (params it does not know) is still answered by the SDK path", async () => {
  const post = await openSession();
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: "odd",
    method: "tools/call",
    params: { name: "alpha_echo", arguments: { text: "via sdk" }, extra: true },
  });
  const answer = await read(await post(body));
  // The SDK path answers on an event stream.
  expect(answer.type).toStartWith("text/event-stream");
  expect(payload(answer.messages.at(-1)).text).toBe("via sdk");
});

test("headers the SDK refuses are refused as before, not relayed", async () => {
  const session = await openRawSession(gateway.url, "2025-06-18", "strict");
  const send = async (headers: Record<string, string>) => {
    const response = await session.post(call('"h"', "alpha_echo", { text: "h" }), { headers });
    return { status: response.status, answer: await read(response) };
  };
  expect((await send({ accept: "application/json" })).status).toBe(406);
  expect((await send({ "mcp-protocol-version": "1999-01-01" })).status).toBe(400);
  expect((await send({ "content-type": "text/plain" })).status).toBe(415);
  // The session is unharmed, and the same call with the usual headers is relayed.
  const fine = await send({});
  expect(fine.status).toBe(200);
  expect(payload(fine.answer.messages[0]).text).toBe("h");
});

test("a relayed call past MCPMGR_REQUEST_TIMEOUT fails as before and is cancelled at the workload; progress keeps it alive", async () => {
  const quick = await group.gatewayWithEnv({ MCPMGR_REQUEST_TIMEOUT: "1s" }, "lane");
  try {
    const post = await openSession(quick.url);
    const before = (await probeStats(post)).aborted.length;
    const late = await read(await post(call('"late"', "alpha_sleep", { ms: 5_000 })));
    expect(late.messages).toEqual([
      {
        jsonrpc: "2.0",
        id: "late",
        error: {
          code: -32603,
          message:
            "workload 'alpha' failed to answer (Request timed out); its tools, prompts and resources are unavailable",
          data: { workload: "alpha" },
        },
      },
    ]);
    expect(await until(async () => (await probeStats(post)).aborted.length === before + 1)).toBe(true);
    // Four steps of 400 ms: longer than the timeout in all, never without progress for that long.
    const slow = await read(
      await post(call('"slow"', "alpha_progress", { steps: 4, delayMs: 400, tag: "s" }, { progressToken: "t" })),
    );
    expect(slow.messages.at(-1)?.result).toBeDefined();
  } finally {
    await quick.stop();
  }
});

test("MCPMGR_REQUEST_TIMEOUT past the longest timer (720h, meant as never): calls are answered, not timed out at once", async () => {
  const patient = await group.gatewayWithEnv({ MCPMGR_REQUEST_TIMEOUT: "720h" }, "lane");
  try {
    const post = await openSession(patient.url);
    const answered = await read(await post(call('"patient"', "alpha_sleep", { ms: 50 })));
    expect(answered.messages[0]?.error).toBeUndefined();
    expect(answered.messages[0]?.result).toBeDefined();
  } finally {
    await patient.stop();
  }
});

// Last: it restarts the probe's server.
test("a workload whose server exits mid-call: the call gets an error, and later calls on the session work again", async () => {
  const post = await openSession();
  await read(await post(call('"warm"', "alpha_echo", { text: "warm" })));
  const exited = await read(await post(call('"bye"', "alpha_exit", { code: 1, delayMs: 10 })));
  // The workload's own error, passed on unchanged.
  expect(exited.messages.find((m) => m.id === "bye")).toEqual({
    jsonrpc: "2.0",
    id: "bye",
    error: { code: -32603, message: "the MCP server exited" },
  });
  const echoed = async () => {
    const next = await read(await post(call('"again"', "alpha_echo", { text: "back" })));
    const answer = next.messages.find((m) => m.id === "again");
    // Until the workload is back, the call is a tool error naming it (isError, text that is no JSON).
    const result = answer?.result as { isError?: boolean } | undefined;
    return result !== undefined && result.isError !== true && payload(answer).text === "back";
  };
  expect(await until(echoed, 40_000)).toBe(true);
});
