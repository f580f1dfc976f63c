/**
 * Telemetry end to end: an OTLP/HTTP receiver (test/support/otlp-receiver.ts) decodes the protobuf export with
 * the official OpenTelemetry proto definitions (otlp-transformer's generated root) and
 * checks span names, attributes and the resource; the upstream sees the W3C traceparent of
 * the span; /metrics passes `promtool check metrics`.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { attr, startOtlpReceiver, type KeyValue, type OtlpReceiver, type Span } from "../support/otlp-receiver.ts";
import { startAuthServer } from "../support/auth-server.ts";
import { CLI_ENTRY, REPO_ROOT, startRun } from "../support/processes.ts";
import { eventually } from "../support/raw-http.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const traceparents: string[] = [];
let receiver: OtlpReceiver;
let spans: OtlpReceiver["spans"];
let metricNames: Set<string>;
let upstream: ReturnType<typeof Bun.serve>;

beforeAll(() => {
  receiver = startOtlpReceiver();
  spans = receiver.spans;
  metricNames = receiver.metricNames;
  // A minimal MCP server that records the trace context it is given.
  upstream = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const traceparent = req.headers.get("traceparent");
      if (traceparent) traceparents.push(traceparent);
      // The end of its session (the one session id it hands out).
      if (req.method === "DELETE") return new Response(null, { status: 200 });
      const message = (await req.json()) as { id?: number; method: string };
      if (message.id === undefined) return new Response(null, { status: 202 });
      const result =
        message.method === "initialize"
          ? { protocolVersion: "2025-06-18", capabilities: { tools: {} }, serverInfo: { name: "rec", version: "1" } }
          : message.method === "tools/list"
            ? { tools: [] }
            : { content: [{ type: "text", text: "ok" }] };
      return Response.json(
        { jsonrpc: "2.0", id: message.id, result },
        message.method === "initialize" ? { headers: { "mcp-session-id": UPSTREAM_SESSION } } : {},
      );
    },
  });
});

afterAll(async () => {
  await receiver?.stop();
  await upstream?.stop(true);
});

const UPSTREAM_SESSION = "telemetry-session-7c2d9e41";

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify(body),
  });

const initialize = (id: number) => ({
  jsonrpc: "2.0",
  id,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
});

/** A tools/call of the upstream's echo, outside any session. */
const callEcho = (url: string) =>
  post(url, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "echo", arguments: {} } });

/** `mcpmgr run --foreground` in front of the recording upstream, as workload `name`. */
const runUpstream = (name: string, args: string[], env?: Record<string, string>) =>
  startRun([`http://127.0.0.1:${upstream.port}/mcp`, "--name", name, ...args], env ? { env } : {});

test("spans and metrics reach an OTLP receiver; the upstream continues the trace; /metrics passes promtool", async () => {
  const run = await runUpstream(
    "traced",
    [
      ...receiver.otelArgs("1.0"),
      "--otel-custom-attributes",
      "team=search,tier=dev",
      "--otel-env-vars",
      "TEST_ENV_ATTR",
      "--otel-headers",
      "x-collector-key=k",
      "--otel-enable-prometheus-metrics-path",
    ],
    { TEST_ENV_ATTR: "from-env" },
  );
  const url = run.url;
  try {
    expect((await post(url, initialize(1))).status).toBe(200);
    expect(
      (
        await post(
          url,
          { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "echo", arguments: {} } },
          { "mcp-session-id": UPSTREAM_SESSION },
        )
      ).status,
    ).toBe(200);
    // Method names are a client's to choose: notifications it makes up share one label, or every
    // name would be a new series kept (and exported) for as long as the proxy runs.
    for (const method of ["notifications/initialized", "notifications/made_up_one", "notifications/made_up_two"])
      expect((await post(url, { jsonrpc: "2.0", method }, { "mcp-session-id": UPSTREAM_SESSION })).status).toBe(202);
    const metrics = await (await fetch(new URL("/metrics", url))).text();
    expect(metrics).toContain("mcp_server_requests");
    expect(metrics).toContain('mcp_method_name="notifications/initialized"');
    expect(metrics).not.toContain("made_up");
    expect(metrics).toMatch(/^mcp_server_requests_total\{[^}]*mcp_method_name="other"[^}]*\} 2$/m);
    // The duration histogram counts seconds: the tools/call (a local echo) lands in a bucket
    // bounded by one second, and there are finer buckets below it than a millisecond scale has.
    const callBuckets = [...metrics.matchAll(/^mcp_server_request_duration_bucket\{([^}]*)\} (\d+)/gm)]
      .filter((m) => (m[1] as string).includes('mcp_method_name="tools/call"'))
      .map((m) => ({
        le: Number((/le="([^"]+)"/.exec(m[1] as string) as RegExpExecArray)[1]?.replace("+Inf", "Infinity")),
        count: Number(m[2]),
      }));
    expect(callBuckets.filter((b) => b.le > 0 && b.le < 0.01).length).toBeGreaterThanOrEqual(3);
    const calls = Math.max(...callBuckets.map((b) => b.count));
    expect(calls).toBe(1);
    const landed = Math.min(...callBuckets.filter((b) => b.count === calls).map((b) => b.le));
    expect(landed).toBeGreaterThan(0);
    expect(landed).toBeLessThanOrEqual(1);
    const checked = Bun.spawnSync(["promtool", "check", "metrics"], {
      stdin: new TextEncoder().encode(metrics),
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(checked.stderr.toString() + checked.stdout.toString()).not.toContain("error");
    expect(checked.exitCode).toBe(0);
  } finally {
    await run.stop();
  }
  // Stopping flushed what was buffered.
  const names = spans.map((s) => s.span.name);
  expect(names).toContain("initialize");
  expect(names).toContain("tools/call echo");
  // An initialize carries no MCP-Protocol-Version header: the revision it asks for is its own.
  const handshake = spans.find((s) => s.span.name === "initialize") as { span: Span };
  expect(attr(handshake.span.attributes, "mcp.protocol.version")).toBe("2025-06-18");
  const call = spans.find((s) => s.span.name === "tools/call echo") as { span: Span; resource: KeyValue[] };
  expect(attr(call.span.attributes, "mcp.method.name")).toBe("tools/call");
  expect(attr(call.span.attributes, "gen_ai.tool.name")).toBe("echo");
  expect(attr(call.span.attributes, "mcp.tool.name")).toBe("echo");
  expect(attr(call.span.attributes, "mcp.method")).toBe("tools/call");
  expect(attr(call.span.attributes, "environment.TEST_ENV_ATTR")).toBe("from-env");
  // The session is named by a keyed hash: a trace backend never holds an id that opens the session.
  expect(attr(call.span.attributes, "mcp.session.id")).toMatch(/^s_[\w-]{22}$/);
  expect(JSON.stringify(spans)).not.toContain(UPSTREAM_SESSION);
  expect(attr(call.resource, "service.name")).toBe("thv-traced");
  expect(attr(call.resource, "team")).toBe("search");
  // The upstream saw the span's trace id in traceparent.
  const traceId = Buffer.from(call.span.traceId).toString("hex");
  expect(traceparents.some((t) => t.split("-")[1] === traceId)).toBe(true);
  expect(metricNames.has("mcp.server.requests")).toBe(true);
  expect(metricNames.has("mcp.server.tool_calls")).toBe(true);
  const collectorKeys = receiver.requestHeaders.map((headers) => headers.get("x-collector-key"));
  expect(collectorKeys.length).toBeGreaterThan(0);
  expect(collectorKeys.every((key) => key === "k")).toBe(true);
}, 60_000);

test("--otel-tracing-enabled=false exports metrics but no spans; --otel-use-legacy-attributes=false drops the legacy names", async () => {
  const before = spans.length;
  metricNames.clear();
  const run = await runUpstream("untraced", [...receiver.otelArgs(), "--otel-tracing-enabled=false"]);
  try {
    expect((await callEcho(run.url)).status).toBe(200);
  } finally {
    await run.stop();
  }
  expect(spans.length).toBe(before);
  expect(metricNames.has("mcp.server.requests")).toBe(true);

  const modern = await runUpstream("modern", [...receiver.otelArgs("1"), "--otel-use-legacy-attributes=false"]);
  try {
    expect((await callEcho(modern.url)).status).toBe(200);
  } finally {
    await modern.stop();
  }
  const latest = spans.slice(before).find((s) => s.span.name === "tools/call echo");
  expect(latest).toBeDefined();
  expect(attr(latest?.span.attributes ?? [], "mcp.method.name")).toBe("tools/call");
  expect(attr(latest?.span.attributes ?? [], "mcp.method")).toBeUndefined();
  expect(attr(latest?.resource ?? [], "service.name")).toBe("thv-modern");
}, 60_000);

test("tool calls refused before the server (no token) give made-up tool names no metric label of their own", async () => {
  const auth = await startAuthServer();
  const run = await runUpstream("guarded", ["--otel-enable-prometheus-metrics-path", ...auth.oidcArgs()]);
  const url = run.url;
  try {
    // Telemetry counts every request, before authentication refuses it: these names are anyone's to choose.
    for (let i = 0; i < 3; i++) {
      const refused = await post(url, {
        jsonrpc: "2.0",
        id: i,
        method: "tools/call",
        params: { name: `made_up_tool_${i}`, arguments: {} },
      });
      expect(refused.status).toBe(401);
    }
    const token = await auth.token();
    const opened = await post(url, initialize(8), { authorization: `Bearer ${token}` });
    expect(opened.status).toBe(200);
    const call = await post(
      url,
      { jsonrpc: "2.0", id: 9, method: "tools/call", params: { name: "echo", arguments: {} } },
      { authorization: `Bearer ${token}`, "mcp-session-id": UPSTREAM_SESSION },
    );
    expect(call.status).toBe(200);
    const metrics = await (await fetch(new URL("/metrics", url))).text();
    expect(metrics).toMatch(/^mcp_server_tool_calls_total\{[^}]*gen_ai_tool_name="echo"[^}]*\} 1$/m);
    expect(metrics).toMatch(/^mcp_server_tool_calls_total\{[^}]*gen_ai_tool_name="other"[^}]*\} 3$/m);
    expect(metrics).not.toContain("made_up_tool");
  } finally {
    await run.stop();
    await auth.stop();
  }
}, 60_000);

describe.each([
  ["", []],
  // Policies between the metric and the proxy answer with a response of their own (the tool filter rewrites results).
  [" with --tools", ["--tools", "echo"]],
])("another caller's session%s", (suffix, policies) => {
  test("another caller's request or DELETE for a session does not end it in the active-sessions metric; its owner's DELETE does", async () => {
    const auth = await startAuthServer();
    const run = await runUpstream(`owned${suffix ? "-tools" : ""}`, [
      "--otel-enable-prometheus-metrics-path",
      ...policies,
      ...auth.oidcArgs(),
    ]);
    const url = run.url;
    const active = async () =>
      sample(await (await fetch(new URL("/metrics", url))).text(), "mcp_server_active_sessions");
    try {
      const owner = { authorization: `Bearer ${await auth.token()}` };
      const other = { authorization: `Bearer ${await auth.token({ client: "otherService" })}` };
      const inSession = { "mcp-session-id": UPSTREAM_SESSION };
      expect((await post(url, initialize(1), owner)).status).toBe(200);
      expect(await active()).toBe(1);
      // The other caller learned the id: its requests are refused as for a session that does not exist.
      const call = { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "echo", arguments: {} } };
      expect((await post(url, call, { ...other, ...inSession })).status).toBe(404);
      const foreignDelete = await fetch(url, { method: "DELETE", headers: { ...other, ...inSession } });
      expect(foreignDelete.status).toBe(404);
      expect(await active()).toBe(1);
      // The session goes on for its owner, and ends with the owner's DELETE.
      expect((await post(url, call, { ...owner, ...inSession })).status).toBe(200);
      expect((await fetch(url, { method: "DELETE", headers: { ...owner, ...inSession } })).status).toBe(200);
      expect(await active()).toBe(0);
    } finally {
      await run.stop();
      await auth.stop();
    }
  }, 60_000);
});

test("through the stdio bridge too: another caller's request or DELETE for a session does not end it in the metric", async () => {
  const auth = await startAuthServer();
  const run = await startRun(
    [
      "npx://./test/fixtures/sandbox-probe",
      "--name",
      "bridged-owned",
      "--otel-enable-prometheus-metrics-path",
      ...auth.oidcArgs(),
    ],
    { timeoutMs: 60_000 },
  );
  const url = run.url;
  const active = async () => sample(await (await fetch(new URL("/metrics", url))).text(), "mcp_server_active_sessions");
  try {
    const owner = { authorization: `Bearer ${await auth.token()}` };
    const other = { authorization: `Bearer ${await auth.token({ client: "otherService" })}` };
    const opened = await post(url, initialize(1), owner);
    expect(opened.status).toBe(200);
    await opened.body?.cancel();
    const inSession = {
      "mcp-session-id": opened.headers.get("mcp-session-id") as string,
      "mcp-protocol-version": "2025-06-18",
    };
    expect(await active()).toBe(1);
    const ping = { jsonrpc: "2.0", id: 2, method: "ping" };
    expect((await post(url, ping, { ...other, ...inSession })).status).toBe(404);
    expect((await fetch(url, { method: "DELETE", headers: { ...other, ...inSession } })).status).toBe(404);
    expect(await active()).toBe(1);
    expect((await post(url, ping, { ...owner, ...inSession })).status).toBe(200);
    expect((await fetch(url, { method: "DELETE", headers: { ...owner, ...inSession } })).ok).toBe(true);
    expect(await active()).toBe(0);
  } finally {
    await run.stop();
    await auth.stop();
  }
}, 120_000);

test("what a client chooses is cut short in spans: a 1 MiB tool name and request id are not exported whole", async () => {
  const run = await runUpstream("clipped", receiver.otelArgs("1.0"));
  const url = run.url;
  const name = `huge_${"t".repeat(1024 * 1024)}`;
  try {
    const call = await post(
      url,
      { jsonrpc: "2.0", id: "i".repeat(1024 * 1024), method: "tools/call", params: { name, arguments: {} } },
      { "mcp-session-id": UPSTREAM_SESSION },
    );
    expect(call.status).toBe(200);
  } finally {
    await run.stop();
  }
  // Stopping flushed the span.
  const span = spans.find((s) => s.span.name.startsWith("tools/call huge_"));
  expect(span).toBeDefined();
  expect(span?.span.name.length).toBeLessThanOrEqual(300);
  for (const key of ["gen_ai.tool.name", "mcp.tool.name", "jsonrpc.request.id", "mcp.request.id"]) {
    const value = attr(span?.span.attributes ?? [], key) ?? "";
    expect(value.length).toBeGreaterThan(100);
    expect(value.length).toBeLessThanOrEqual(1024);
  }
}, 60_000);

test("a collector that refuses the exports is named in the log once, and again once it takes them", async () => {
  // A collector at the wrong path or with a refused key answers 404/401: before, nothing said so.
  let refusing = true;
  let exports = 0;
  const collector = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch() {
      exports += 1;
      return refusing ? new Response("no such path", { status: 404 }) : new Response(new Uint8Array(0));
    },
  });
  const run = await runUpstream("uncollected", [
    "--otel-endpoint",
    `http://127.0.0.1:${collector.port}`,
    "--otel-insecure",
    "--otel-sampling-rate",
    "1",
  ]);
  try {
    expect((await callEcho(run.url)).status).toBe(200);
    await eventually(
      () => /spans could not be sent to http:\/\/127\.0\.0\.1:\d+\/v1\/traces/.test(run.output()),
      20_000,
      "the failure",
    );
    await eventually(
      () => /metrics could not be sent to http:\/\/127\.0\.0\.1:\d+\/v1\/metrics/.test(run.output()),
      20_000,
      "the metrics failure",
    );
    const seen = exports;
    await eventually(() => exports >= seen + 2, 20_000, "more exports");
    expect(run.output().match(/metrics could not be sent/g)?.length).toBe(1);
    refusing = false;
    await eventually(() => /metrics reach http:\S+ again/.test(run.output()), 20_000, "the recovery");
  } finally {
    await run.stop();
    await collector.stop(true);
  }
}, 60_000);

test("telemetry option mistakes are start-up errors", () => {
  for (const [args, text] of [
    [["--otel-endpoint", "http://collector.example:4318"], "needs --otel-insecure"],
    [["--otel-headers", "a=b"], "--otel-headers needs --otel-endpoint"],
    // mcpmgr's own secrets never go into spans, even when named.
    ...["MCPMGR_SECRETS_PASSWORD", "MCPMGR_SECRET_GITHUB_TOKEN", "MCPMGR_REMOTE_OAUTH_CLIENT_SECRET"].map(
      (name) =>
        [
          ["--otel-endpoint", "https://collector.example", "--otel-env-vars", `HOME,${name}`],
          `--otel-env-vars ${name}: that variable holds a secret of mcpmgr's`,
        ] as const,
    ),
  ] as const) {
    const result = Bun.spawnSync(
      [process.execPath, CLI_ENTRY, "run", "--foreground", `http://127.0.0.1:${upstream.port}/mcp`, ...args],
      { cwd: REPO_ROOT, env: { ...process.env, NO_COLOR: "1" } },
    );
    expect(result.exitCode).toBe(2);
    expect(result.stderr.toString()).toContain(text);
  }
});

/** The value of an unlabelled Prometheus gauge/counter line, or undefined when absent. */
function sample(text: string, name: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line === undefined ? undefined : Number(line.split(" ").pop());
}

test("through the stdio bridge: spans per request, and active sessions rise and fall (streamable HTTP and legacy SSE)", async () => {
  const before = spans.length;
  const bridged = (name: string, ...args: string[]) =>
    startRun(
      [
        "npx://./test/fixtures/sandbox-probe",
        "--name",
        name,
        ...args,
        ...receiver.otelArgs("1"),
        "--otel-enable-prometheus-metrics-path",
      ],
      { timeoutMs: 60_000 },
    );
  const run = await bridged("bridged");
  const url = run.url;
  const active = async () => sample(await (await fetch(new URL("/metrics", url))).text(), "mcp_server_active_sessions");
  try {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
    const client = new Client({ name: "gauge", version: "1" });
    const transport = new StreamableHTTPClientTransport(new URL(url));
    await client.connect(transport);
    await client.callTool({ name: "env", arguments: { name: "HOME" } });
    expect(await active()).toBe(1);
    await transport.terminateSession();
    await client.close();
    expect(await active()).toBe(0);
  } finally {
    await run.stop();
  }
  expect(spans.slice(before).map((s) => s.span.name)).toContain("tools/call env");

  const legacy = await bridged("bridged-sse", "--proxy-mode", "sse");
  const sseUrl = legacy.url;
  try {
    const metricsUrl = new URL("/metrics", sseUrl);
    const stream = new AbortController();
    const opened = await fetch(sseUrl, { headers: { accept: "text/event-stream" }, signal: stream.signal });
    expect(opened.status).toBe(200);
    const reader = (opened.body as ReadableStream<Uint8Array>).getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain("endpoint");
    expect(sample(await (await fetch(metricsUrl)).text(), "mcp_server_active_sessions")).toBe(1);
    stream.abort();
    await reader.cancel().catch(() => {});
    // The proxy notices the closed stream shortly after.
    let value: number | undefined = 1;
    const deadline = Date.now() + 20_000;
    while (value !== 0 && Date.now() < deadline) {
      await Bun.sleep(100);
      value = sample(await (await fetch(metricsUrl)).text(), "mcp_server_active_sessions");
    }
    expect(value).toBe(0);
  } finally {
    await legacy.stop();
  }
}, 120_000);
