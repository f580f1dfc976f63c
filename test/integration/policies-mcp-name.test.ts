/**
 * The policies compare a 2026-07-28 request's `Mcp-Name` header with its body (what they decide on
 * and what a router may route on must agree). The revision lets that header carry its value in the
 * `=?base64?…?=` form (a name or URI outside plain ASCII must travel so, mcpmgr's own `proxy stdio`
 * sends it so) and asks every server and intermediary that inspects it to decode it first: with a
 * tool filter on, both the transparent proxy (`run URL`) and the stdio bridge (`run` of a stdio
 * server) must let such a call through. A header that does disagree is refused with 400 and the
 * revision's HeaderMismatch code (-32020), which a dual-era client recognises as a 2026-07-28
 * server's answer rather than a 2025-era server's refusal to fall back from. Before, both were
 * refused with -32600.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import {
  CONFORMANCE_FIXTURE_2026,
  runStdioFixture,
  startConformanceServer,
  type RunningFixture,
} from "../support/conformance.ts";
import { startRun } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const V = "2026-07-28";
const FILTER = ["--tools", "test_simple_text"];
let fixture: RunningFixture;
const urls: Record<string, string> = {};
const stops: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  fixture = await startConformanceServer({ fixture: CONFORMANCE_FIXTURE_2026 });
  const remote = await startRun([fixture.url, "--name", "filtered-remote", ...FILTER]);
  stops.push(() => remote.stop());
  urls["run URL"] = remote.url;
  const stdio = await runStdioFixture(CONFORMANCE_FIXTURE_2026, { args: FILTER });
  stops.push(() => stdio.stop());
  urls["run of a stdio server"] = stdio.url;
}, 120_000);

afterAll(async () => {
  await Promise.allSettled(stops.map((stop) => stop()));
  await fixture?.stop();
});

async function call(url: string, mcpName: string) {
  const res = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": V,
      "mcp-method": "tools/call",
      "mcp-name": mcpName,
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: {
        name: "test_simple_text",
        arguments: {},
        _meta: { "io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": {} },
      },
    }),
  });
  const text = await res.text();
  // A lone answer is JSON; a streamed one carries it as the last `data:` line.
  const json = text.startsWith("{")
    ? text
    : (text.split("\n").findLast((line) => line.startsWith("data: ")) ?? "").slice(6);
  return { status: res.status, body: JSON.parse(json) as { result?: unknown; error?: { code: number } } };
}

for (const mode of ["run URL", "run of a stdio server"]) {
  test(`${mode} with a tool filter: a Base64 Mcp-Name is decoded, and a disagreeing one is -32020`, async () => {
    const url = urls[mode] as string;
    const encoded = await call(url, `=?base64?${Buffer.from("test_simple_text").toString("base64")}?=`);
    expect(encoded.status).toBe(200);
    expect(encoded.body.result).toBeDefined();
    const disagreeing = await call(url, "test_error_handling");
    expect(disagreeing.status).toBe(400);
    expect(disagreeing.body.error?.code).toBe(-32020);
  });
}
