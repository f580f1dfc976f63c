// Load generator for `bun run bench`: MCP session(s), then autocannon hammering
// `tools/call echo` on them over keep-alive connections.
//
// Runs in its own process (under Node by default, so it never shares an event loop
// or a runtime with the servers being measured). Plain ESM JavaScript so Node 20
// runs it without a TypeScript loader.
//
//   node bench/load.mjs '{"url":"http://127.0.0.1:PORT/mcp","connections":32,"duration":10,"warmup":3}'
//
// "sessions": "shared" (default) opens one session used by every connection;
// "per-connection" opens one session per connection (N connections = N concurrent
// client sessions, each connection always on its own; the warm-up's connections and
// the measured run's get the same N sessions); "stateless" opens none: every call is a
// 2026-07-28 request (the revision, method and tool in the Mcp-* headers, the client's
// revision, identity and capabilities in `_meta`, with a key of the client's own beside
// them, as some AI clients put a tool-use id there), as a client of that revision sends it.
//
// Prints exactly one line of JSON on stdout (the result), progress/errors on stderr.
//
// Latencies: autocannon's own histogram stores whole milliseconds, which is useless
// for a sub-millisecond proxy, so every 2xx response's float latency (process.hrtime
// based, from autocannon's `response` event) is kept and percentiles are exact.

import autocannon from "autocannon";

const PROTOCOL_VERSION = "2025-06-18";
const STATELESS_VERSION = "2026-07-28";
const ECHO_TEXT = "bench";

/** @param {string} msg */
function die(msg) {
  process.stderr.write(`load: ${msg}\n`);
  process.exit(1);
}

const cfg = JSON.parse(process.argv[2] ?? "{}");
const url = cfg.url ?? die("missing url");
const connections = Number(cfg.connections ?? 1);
const duration = Number(cfg.duration ?? 10);
const warmup = Number(cfg.warmup ?? 2);
const sessionMode = cfg.sessions ?? "shared";
if (sessionMode !== "shared" && sessionMode !== "per-connection" && sessionMode !== "stateless")
  die(`sessions must be "shared", "per-connection" or "stateless", got ${JSON.stringify(sessionMode)}`);
const stateless = sessionMode === "stateless";

const baseHeaders = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  "mcp-protocol-version": stateless ? STATELESS_VERSION : PROTOCOL_VERSION,
  ...(stateless ? { "mcp-method": "tools/call", "mcp-name": "echo" } : {}),
  // Extra headers a scenario needs on every request (e.g. a bearer token).
  ...(cfg.headers ?? {}),
};

/** A tools/call echo's params; a 2026-07-28 request carries its envelope in `_meta`. */
const callParams = {
  name: "echo",
  arguments: { text: ECHO_TEXT },
  ...(stateless
    ? {
        _meta: {
          "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
          "io.modelcontextprotocol/clientInfo": { name: "mcpmgr-bench", version: "0.1.0" },
          "io.modelcontextprotocol/clientCapabilities": {},
          "com.example.bench/toolUseId": "toolu_bench",
        },
      }
    : {}),
};

/**
 * POST one JSON-RPC message; returns status, headers and the parsed JSON-RPC reply
 * (from a JSON body or from the first `data:` line of an SSE body).
 */
async function rpc(body, sessionId) {
  const headers = { ...baseHeaders };
  if (sessionId) headers["mcp-session-id"] = sessionId;
  const res = await fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
  const text = await res.text();
  let message = null;
  const type = res.headers.get("content-type") ?? "";
  if (text) {
    try {
      if (type.includes("text/event-stream")) {
        const data = text.split(/\r?\n/).find((l) => l.startsWith("data:"));
        message = data ? JSON.parse(data.slice(5)) : null;
      } else {
        message = JSON.parse(text);
      }
    } catch {
      message = { unparsable: text.slice(0, 200) };
    }
  }
  return { status: res.status, headers: res.headers, message, type };
}

/** The one checked call of a stateless run (no session to open): a broken path fails loudly. */
async function checkStateless() {
  const call = await rpc({ jsonrpc: "2.0", id: "check", method: "tools/call", params: callParams });
  const got = call.message?.result?.content?.[0]?.text;
  if (call.status !== 200 || got !== `Echo: ${ECHO_TEXT}`) {
    die(`tools/call check failed: HTTP ${call.status} ${JSON.stringify(call.message)}`);
  }
  return { responseType: call.type.split(";")[0] };
}

async function openSession() {
  const init = await rpc({
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: {
      protocolVersion: PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: "mcpmgr-bench", version: "0.1.0" },
    },
  });
  if (init.status !== 200 || !init.message?.result) {
    die(`initialize failed: HTTP ${init.status} ${JSON.stringify(init.message)}`);
  }
  const sessionId = init.headers.get("mcp-session-id");
  if (!sessionId) die("initialize returned no Mcp-Session-Id header");

  const note = await rpc({ jsonrpc: "2.0", method: "notifications/initialized" }, sessionId);
  if (note.status !== 202) die(`notifications/initialized: expected 202, got ${note.status}`);

  // One checked call so a broken path fails loudly instead of benchmarking errors.
  const call = await rpc(
    { jsonrpc: "2.0", id: "check", method: "tools/call", params: { name: "echo", arguments: { text: ECHO_TEXT } } },
    sessionId,
  );
  const got = call.message?.result?.content?.[0]?.text;
  if (call.status !== 200 || got !== `Echo: ${ECHO_TEXT}`) {
    die(`tools/call check failed: HTTP ${call.status} ${JSON.stringify(call.message)}`);
  }
  return { sessionId, responseType: call.type.split(";")[0] };
}

async function closeSession(sessionId) {
  try {
    await fetch(url, { method: "DELETE", headers: { ...baseHeaders, "mcp-session-id": sessionId } });
  } catch {
    // best effort
  }
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))];
}

async function main() {
  // One after the other: a gateway may start a server process per session.
  const sessions = [];
  if (!stateless)
    for (let i = 0; i < (sessionMode === "shared" ? 1 : connections); i++) sessions.push(await openSession());
  const { responseType } = stateless ? await checkStateless() : sessions[0];
  const headersOf = sessions.map(({ sessionId }) => ({ ...baseHeaders, "mcp-session-id": sessionId }));
  const headers = headersOf[0] ?? baseHeaders;
  // `[<id>]` is replaced by autocannon with a fresh id per request: concurrent
  // calls on one session never share a JSON-RPC id, as with a real client.
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: "[<id>]",
    method: "tools/call",
    params: callParams,
  });
  const expected = `Echo: ${ECHO_TEXT}`;

  let latencies = new Float64Array(1 << 16);
  let n = 0;
  let non2xx = 0;
  let started = 0;

  const opts = {
    url,
    method: "POST",
    headers,
    body,
    idReplacement: true,
    connections,
    pipelining: 1,
    duration,
    // Mismatching bodies are counted (result.mismatches) and reported.
    verifyBody: (b) => b.includes(expected),
  };
  if (warmup > 0) opts.warmup = { connections, duration: warmup };
  if (sessions.length > 1) {
    // Called once per autocannon client (connection), warm-up's and run's alike.
    let nextClient = 0;
    opts.setupClient = (client) => client.setHeaders(headersOf[nextClient++ % headersOf.length]);
  }

  const instance = autocannon(opts);
  let cpuAtStart = process.cpuUsage();
  instance.on("start", () => {
    started = performance.now();
    cpuAtStart = process.cpuUsage();
    // Tells the orchestrator the warm-up is over (it snapshots the servers' CPU time).
    process.stderr.write("PHASE measure\n");
  });
  instance.on("response", (_client, statusCode, _bytes, responseTime) => {
    if (statusCode >= 200 && statusCode < 300) {
      if (n === latencies.length) {
        const bigger = new Float64Array(latencies.length * 2);
        bigger.set(latencies);
        latencies = bigger;
      }
      latencies[n++] = responseTime;
    } else {
      non2xx++;
    }
  });
  const result = await instance;
  const elapsed = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuAtStart);
  process.stderr.write("PHASE done\n");

  await Promise.all(sessions.map(({ sessionId }) => closeSession(sessionId)));

  const sorted = latencies.subarray(0, n).sort();
  let sum = 0;
  for (let i = 0; i < n; i++) sum += sorted[i];

  const out = {
    url,
    connections,
    sessions: sessions.length,
    duration: elapsed,
    warmup,
    responseType,
    requests: n,
    rps: n / elapsed,
    latencyMs: {
      min: sorted[0] ?? NaN,
      mean: n ? sum / n : NaN,
      p50: percentile(sorted, 50),
      p90: percentile(sorted, 90),
      p99: percentile(sorted, 99),
      max: sorted[n - 1] ?? NaN,
    },
    loadgenCpuSeconds: (cpu.user + cpu.system) / 1e6,
    non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    mismatches: result.mismatches ?? 0,
    autocannon: { requestsAverage: result.requests.average, total: result.requests.total, duration: result.duration },
  };
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

main().catch((err) => die(err?.stack ?? String(err)));
