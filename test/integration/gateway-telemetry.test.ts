/**
 * Telemetry on `mcpmgr gateway GROUP --otel-*`: the gateway counts and traces the calls made
 * through it under the names its clients use. Two real workloads (`mcpmgr run` of the stdio probe
 * server, `alpha`, and of a member server over HTTP, `notes`, which records the `traceparent` it
 * is sent), an SDK client, the gateway's Prometheus `/metrics`, and an OTLP/HTTP receiver
 * (test/support/otlp-receiver.ts) decoding the protobuf export.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type MemberServer, startMemberServer } from "../fixtures/member-server.ts";
import { createTestGroup, PROBE_FIXTURE, type TestGroup, until } from "../support/gateway-group.ts";
import { attr, hex, type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../support/otlp-receiver.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let group: TestGroup;
let receiver: OtlpReceiver;
let notes: MemberServer;
let gateway: Awaited<ReturnType<TestGroup["gateway"]>>;
const clients: Client[] = [];

async function connect(headers: Record<string, string> = {}, url = gateway.url): Promise<Client> {
  const client = new Client({ name: "observed", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  clients.push(client);
  return client;
}

/** The sum of a Prometheus metric's samples whose labels include every one given. */
function total(metrics: string, name: string, labels: Record<string, string>): number {
  let sum = 0;
  for (const line of metrics.split("\n")) {
    const match = /^([a-zA-Z_:][\w:]*)\{([^}]*)\} (\S+)/.exec(line);
    if (match?.[1] !== name) continue;
    const set = match[2] as string;
    if (Object.entries(labels).every(([key, value]) => set.includes(`${key}="${value}"`))) sum += Number(match[3]);
  }
  return sum;
}

const scrape = async () => {
  const response = await fetch(new URL("/metrics", gateway.url));
  expect(response.status).toBe(200);
  return response.text();
};

beforeAll(async () => {
  receiver = startOtlpReceiver();
  group = await createTestGroup();
  notes = startMemberServer({ name: "notes", tools: ["echo"], resources: ["notes://a"] });
  group.run(await group.packageOf(PROBE_FIXTURE), "alpha", "obs");
  group.run(notes.url, "notes", "obs");
  gateway = await group.gateway(
    "obs",
    "--otel-endpoint",
    receiver.endpoint,
    "--otel-insecure",
    "--otel-sampling-rate",
    "1",
    "--otel-custom-attributes",
    "team=platform",
    "--otel-enable-prometheus-metrics-path",
  );
}, 120_000);

afterAll(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
  await group?.cleanup();
  await notes?.stop();
  await receiver?.stop();
});

describe("the gateway's /metrics", () => {
  test("counts requests per method and tool calls per gateway tool name", async () => {
    const before = await scrape();
    const requests = (metrics: string, method: string) =>
      total(metrics, "mcp_server_requests_total", { mcp_method_name: method });
    const toolCalls = (metrics: string, tool: string) =>
      total(metrics, "mcp_server_tool_calls_total", { gen_ai_tool_name: tool });

    const client = await connect();
    await client.listTools();
    await client.callTool({ name: "alpha_echo", arguments: { text: "one" } });
    await client.callTool({ name: "alpha_echo", arguments: { text: "two" } });
    await client.callTool({ name: "notes_echo", arguments: { text: "three" } });
    await client.readResource({ uri: "notes://a" });

    const after = await scrape();
    expect(requests(after, "initialize") - requests(before, "initialize")).toBe(1);
    expect(requests(after, "tools/list") - requests(before, "tools/list")).toBe(1);
    expect(requests(after, "tools/call") - requests(before, "tools/call")).toBe(3);
    expect(requests(after, "resources/read") - requests(before, "resources/read")).toBe(1);
    expect(toolCalls(after, "alpha_echo") - toolCalls(before, "alpha_echo")).toBe(2);
    expect(toolCalls(after, "notes_echo") - toolCalls(before, "notes_echo")).toBe(1);
    // The calls' durations are recorded under their method too.
    expect(
      total(after, "mcp_server_request_duration_count", { mcp_method_name: "tools/call" }) -
        total(before, "mcp_server_request_duration_count", { mcp_method_name: "tools/call" }),
    ).toBe(3);
    const checked = Bun.spawnSync(["promtool", "check", "metrics"], { stdin: new TextEncoder().encode(after) });
    expect(checked.stderr.toString() + checked.stdout.toString()).not.toContain("error");
    expect(checked.exitCode).toBe(0);
  });
});

describe("the OTLP export", () => {
  test("a tools/call through the gateway is a server span under its gateway name in the client's trace, which the workload continues", async () => {
    // The client's own trace context: the gateway's span continues it, and it tells this test's span from others.
    const clientTrace = crypto.randomUUID().replaceAll("-", "");
    const clientSpan = clientTrace.slice(0, 16);
    const client = await connect({ traceparent: `00-${clientTrace}-${clientSpan}-01` });
    const result = await client.callTool({ name: "notes_echo", arguments: { text: "traced" } });
    expect(JSON.stringify(result)).toContain('notes ran echo {\\"text\\":\\"traced\\"}');

    const isCall = (s: ReceivedSpan) => s.span.name === "tools/call notes_echo" && hex(s.span.traceId) === clientTrace;
    expect(await until(() => receiver.spans.some(isCall))).toBe(true);
    const calls = receiver.spans.filter(isCall);
    expect(calls).toHaveLength(1);
    const { span, resource } = calls[0] as ReceivedSpan;
    expect(span.kind).toBe(2); // SPAN_KIND_SERVER
    expect(attr(span.attributes, "mcp.method.name")).toBe("tools/call");
    expect(attr(span.attributes, "gen_ai.tool.name")).toBe("notes_echo");
    expect(attr(span.attributes, "gen_ai.operation.name")).toBe("execute_tool");
    expect(attr(span.attributes, "mcp.tool.name")).toBe("notes_echo");
    expect(attr(span.attributes, "mcp.server.name")).toBe("gateway-obs");
    expect(attr(span.attributes, "mcp.session.id")).toMatch(/^s_[\w-]{22}$/);
    expect(attr(resource, "service.name")).toBe("thv-gateway-obs");
    expect(attr(resource, "team")).toBe("platform");
    expect(hex(span.parentSpanId)).toBe(clientSpan);
    // The workload's request carries the gateway span's context, as `run` passes it upstream.
    expect(notes.traceparents).toContain(`00-${hex(span.traceId)}-${hex(span.spanId)}-01`);

    // A resource read is traced under its URI, in the same client trace.
    await client.readResource({ uri: "notes://a" });
    const isRead = (s: ReceivedSpan) => s.span.name === "resources/read" && hex(s.span.traceId) === clientTrace;
    expect(await until(() => receiver.spans.some(isRead))).toBe(true);
    const read = (receiver.spans.find(isRead) as ReceivedSpan).span;
    expect(attr(read.attributes, "mcp.resource.uri")).toBe("notes://a");
    expect(notes.traceparents).toContain(`00-${clientTrace}-${hex(read.spanId)}-01`);
  });
});

describe("without --otel-*", () => {
  test("the client's own trace context reaches the workload, as through `run`", async () => {
    const plain = await group.gateway("obs");
    const traceparent = `00-${crypto.randomUUID().replaceAll("-", "")}-00f067aa0ba902b7-01`;
    const client = await connect({ traceparent, tracestate: "vendor=abc" }, plain.url);
    await client.callTool({ name: "notes_echo", arguments: { text: "plain" } });
    expect(notes.traceparents).toContain(traceparent);
    // This gateway exports nothing and serves no metrics.
    expect((await fetch(new URL("/metrics", plain.url))).status).not.toBe(200);
  });
});
