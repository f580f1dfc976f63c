/**
 * The stdio bridge's wire pieces on their own: JSON parsing with a nesting bound and exact
 * integers, the newline framing of server output (linear, limited, ids of dropped lines),
 * the 2026-07-28 edge checks, and the sealed request state of input rounds.
 */
import { describe, expect, test, setDefaultTimeout } from "bun:test";
import { nestsDeeperThan, parseJsonText } from "../../src/proxy/stdio-bridge/json-text.ts";
import { checkModernRequest, statusOfModernError } from "../../src/proxy/stdio-bridge/modern.ts";
import { paramsDigest, RequestStateSeal } from "../../src/proxy/stdio-bridge/request-state.ts";
import { lineChannel } from "../../src/proxy/stdio-bridge/server-channel.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

describe("json-text", () => {
  test("nesting is bounded before parsing; brackets inside strings do not count", () => {
    expect(nestsDeeperThan(`${"[".repeat(300)}${"]".repeat(300)}`, 256)).toBe(true);
    expect(nestsDeeperThan(`${"[".repeat(200)}${"]".repeat(200)}`, 256)).toBe(false);
    expect(nestsDeeperThan(JSON.stringify({ text: "[".repeat(10_000) }), 256)).toBe(false);
    expect(nestsDeeperThan(JSON.stringify({ text: `\\"${"{".repeat(1_000)}` }), 256)).toBe(false);
    expect(parseJsonText(`${"[".repeat(100_000)}${"]".repeat(100_000)}`)).toEqual({ error: "too-deep" });
    expect(parseJsonText("{nope")).toEqual({ error: "not-json" });
  });

  test("integers beyond 2^53 keep their digits through a parse and a serialisation", () => {
    const text = '{"id":12345678901234567890,"n":-98765432109876543210,"f":1.5,"s":"12345678901234567890"}';
    const parsed = parseJsonText(text);
    expect("value" in parsed && JSON.stringify(parsed.value)).toBe(text);
  });
});

/** Server output in chunks, through the real channel, collected. */
async function frame(chunks: (string | Uint8Array)[], maxMessageBytes?: number) {
  const messages: unknown[] = [];
  const oversized: [number, string | number | undefined][] = [];
  const invalid: string[] = [];
  const encoder = new TextEncoder();
  const stdout = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(typeof chunk === "string" ? encoder.encode(chunk) : chunk);
      controller.close();
    },
  });
  const channel = lineChannel({
    stdout,
    stdin: { write: () => undefined },
    onMessage: (m) => messages.push(m),
    onInvalidLine: (line) => invalid.push(line),
    onOversized: (bytes, id) => oversized.push([bytes, id]),
    ...(maxMessageBytes ? { maxMessageBytes } : {}),
  });
  await channel.closed;
  return { messages, oversized, invalid };
}

describe("server output framing", () => {
  test("lines split anywhere across chunks (even inside a UTF-8 character) come out whole", async () => {
    const line = JSON.stringify({ jsonrpc: "2.0", id: 1, result: { text: "héllo wörld" } });
    const bytes = new TextEncoder().encode(`${line}\nbanner\n${line}`);
    const chunks = [bytes.subarray(0, 5), bytes.subarray(5, 24), bytes.subarray(24, 60), bytes.subarray(60)];
    const { messages, invalid } = await frame(chunks);
    expect(messages).toEqual([JSON.parse(line), JSON.parse(line)]);
    expect(invalid).toEqual(["banner"]);
  });

  test("a 50 MB line in 64 KiB chunks is framed in linear time", async () => {
    const text = "x".repeat(50 * 1024 * 1024);
    const bytes = new TextEncoder().encode(`${JSON.stringify({ jsonrpc: "2.0", id: 2, result: { text } })}\n`);
    const chunks: Uint8Array[] = [];
    for (let at = 0; at < bytes.byteLength; at += 65_536) chunks.push(bytes.subarray(at, at + 65_536));
    const started = performance.now();
    const { messages } = await frame(chunks);
    expect(performance.now() - started).toBeLessThan(3_000);
    expect((messages[0] as { result: { text: string } }).result.text.length).toBe(text.length);
  });

  test("a line over the limit is dropped and reported with the id at its head or tail; the next line is read", async () => {
    const big = "y".repeat(5_000);
    const head = JSON.stringify({ jsonrpc: "2.0", id: 7, result: { big } });
    const tail = `{"result":{"big":"${big}"},"jsonrpc":"2.0","id":"abc"}`;
    const after = JSON.stringify({ jsonrpc: "2.0", id: 8, result: {} });
    const { messages, oversized } = await frame([head.slice(0, 100), `${head.slice(100)}\n${tail}\n${after}\n`], 1_024);
    expect(oversized).toEqual([
      [head.length, 7],
      [tail.length, "abc"],
    ]);
    expect(messages).toEqual([JSON.parse(after)]);
  });
});

describe("2026-07-28 edge checks", () => {
  const meta = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
  };
  const request = (params: Record<string, unknown>) => ({
    jsonrpc: "2.0" as const,
    id: 1,
    method: "tools/call",
    params,
  });
  const headers = (extra: Record<string, string> = {}) =>
    new Headers({ "mcp-method": "tools/call", "mcp-name": "café", "mcp-protocol-version": "2026-07-28", ...extra });

  test("a complete envelope with mirrored headers passes, Base64-encoded Mcp-Name included", () => {
    const encoded = `=?base64?${Buffer.from("café").toString("base64")}?=`;
    const ok = checkModernRequest(headers({ "mcp-name": encoded }), request({ name: "café", _meta: meta }), [
      "2026-07-28",
    ]);
    expect(ok).toEqual({ protocolVersion: "2026-07-28", capabilities: {}, logLevel: undefined });
  });

  test.each([
    ["no Mcp-Method", headers({ "mcp-method": "" }), { name: "café", _meta: meta }, -32020, 400],
    ["Mcp-Name not the body's", headers({ "mcp-name": "cafe" }), { name: "café", _meta: meta }, -32020, 400],
    ["no _meta", headers(), { name: "café" }, -32602, 400],
    [
      "header version not _meta's",
      headers({ "mcp-protocol-version": "2025-11-25" }),
      { name: "café", _meta: meta },
      -32020,
      400,
    ],
    [
      "unsupported version",
      headers({ "mcp-protocol-version": "2099-01-01" }),
      { name: "café", _meta: { ...meta, "io.modelcontextprotocol/protocolVersion": "2099-01-01" } },
      -32022,
      400,
    ],
    [
      "unknown log level",
      headers(),
      { name: "café", _meta: { ...meta, "io.modelcontextprotocol/logLevel": "loud" } },
      -32602,
      400,
    ],
  ])("%s is refused", (_why, h, params, code, status) => {
    const refusal = checkModernRequest(h, request(params), ["2026-07-28"]);
    expect(refusal).toMatchObject({ code, status });
  });

  test("error statuses: 404 for unknown methods, 400 for envelope errors, 200 for the rest", () => {
    expect([-32601, -32020, -32021, -32022, -32602, -32603].map(statusOfModernError)).toEqual([
      404, 400, 400, 400, 200, 200,
    ]);
  });
});

describe("request state", () => {
  const payload = { flight: 3, round: 1, method: "tools/call", digest: "d", principal: "alice", expires: 2_000 };

  test("a sealed state opens to its payload until it expires", () => {
    const seal = new RequestStateSeal();
    const state = seal.seal(payload);
    expect(seal.open(state, 1_000)).toEqual(payload);
    expect(seal.open(state, 2_000)).toContain("expired");
  });

  test("a changed byte, another process's key, or an oversized state is refused", () => {
    const seal = new RequestStateSeal();
    const state = seal.seal(payload);
    const forged = Buffer.from(JSON.stringify({ ...payload, principal: "mallory" })).toString("base64url");
    expect(seal.open(`${forged}${state.slice(state.indexOf("."))}`, 1_000)).toContain("integrity");
    expect(new RequestStateSeal().open(state, 1_000)).toContain("integrity");
    expect(seal.open("x".repeat(5_000), 1_000)).toContain("not one mcpmgr issued");
  });

  test("the parameter digest ignores what changes between rounds and sees everything else", () => {
    const base = { name: "t", arguments: { a: 1 } };
    expect(paramsDigest({ ...base, inputResponses: { x: {} }, requestState: "s", _meta: { y: 1 } })).toBe(
      paramsDigest(base),
    );
    expect(paramsDigest({ name: "t", arguments: { a: 2 } })).not.toBe(paramsDigest(base));
  });
});
