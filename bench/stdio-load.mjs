// Load driver for the `stdio-direct` scenario of `bun run bench`: spawns the stdio
// MCP echo server (bench/stdio-echo.mjs) as its child and talks to it directly over
// its stdin/stdout, newline-delimited JSON-RPC, exactly as a bridge does inside its own
// process. That makes it the in-process baseline for the stdio bridge: whatever the
// bridge scenario adds on top of this is HTTP, sessions and the bridge's own work.
//
//   node bench/stdio-load.mjs '{"server":["node","bench/stdio-echo.mjs"],"connections":16,"duration":10,"warmup":3}'
//
// Concurrency N = N requests in flight over the one pipe, each with a distinct JSON-RPC
// id; a request is sent the moment one is answered (closed loop, like autocannon's
// keep-alive connections). Every answer is checked and matched by id. When one stdout
// chunk carries several answers, their replacements go out in one write.
//
// Same protocol with the orchestrator as bench/load.mjs: stderr lines `PHASE ready`
// (child started and initialised, before any load), `PHASE measure` (warm-up over),
// `PHASE done` (measured phase over); one JSON result line on stdout, with the same
// fields. Latency per request: performance.now() from the write to the parsed answer.

import { spawn } from "node:child_process";

const ECHO_TEXT = "bench";
const EXPECTED = `Echo: ${ECHO_TEXT}`;

/** @param {string} msg */
function die(msg) {
  process.stderr.write(`stdio-load: ${msg}\n`);
  process.exit(1);
}

const cfg = JSON.parse(process.argv[2] ?? "{}");
const server = Array.isArray(cfg.server) && cfg.server.length ? cfg.server : die("missing server command");
const connections = Number(cfg.connections ?? 1);
const duration = Number(cfg.duration ?? 10);
const warmup = Number(cfg.warmup ?? 2);

const child = spawn(server[0], server.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
child.on("error", (err) => die(`cannot start ${server.join(" ")}: ${err.message}`));
let exitedEarly = true;
child.on("exit", (code, signal) => {
  if (exitedEarly) die(`server exited (code ${code}, signal ${signal}) during the run`);
});

/** id → callback for requests outside the load loop (handshake, check). */
const waiting = new Map();
/** id → send time (ms) for load requests in flight. */
const inFlight = new Map();
let onLoadAnswer = (_id, _sentAt, _ok, _out) => {};

let pending = "";
child.stdout.setEncoding("utf8");
child.stdout.on("data", (chunk) => {
  pending += chunk;
  const now = performance.now();
  const out = [];
  let start = 0;
  let nl;
  while ((nl = pending.indexOf("\n", start)) !== -1) {
    const line = pending.slice(start, nl);
    start = nl + 1;
    if (line.trim() === "") continue;
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      die(`server wrote a non-JSON line: ${line.slice(0, 200)}`);
    }
    const cb = waiting.get(msg.id);
    if (cb) {
      waiting.delete(msg.id);
      cb(msg);
      continue;
    }
    const sentAt = inFlight.get(msg.id);
    if (sentAt === undefined) die(`answer to an unknown id: ${line.slice(0, 200)}`);
    inFlight.delete(msg.id);
    onLoadAnswer(msg.id, now - sentAt, msg.result?.content?.[0]?.text === EXPECTED, out);
  }
  pending = start === pending.length ? "" : pending.slice(start);
  if (out.length) child.stdin.write(out.join(""));
});

function call(id, method, params) {
  return new Promise((resolve) => {
    waiting.set(id, resolve);
    child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
  });
}

let nextId = 1;
const request = (id) =>
  `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"echo","arguments":{"text":"${ECHO_TEXT}"}}}\n`;

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))];
}

async function main() {
  const init = await call("init", "initialize", {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "mcpmgr-bench", version: "0.1.0" },
  });
  if (!init.result) die(`initialize failed: ${JSON.stringify(init)}`);
  child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`);
  const check = await call("check", "tools/call", { name: "echo", arguments: { text: ECHO_TEXT } });
  if (check.result?.content?.[0]?.text !== EXPECTED) die(`tools/call check failed: ${JSON.stringify(check)}`);
  process.stderr.write("PHASE ready\n");

  let latencies = new Float64Array(1 << 16);
  let n = 0;
  let mismatches = 0;
  let recording = false;
  let stopping = false;
  let drained = () => {};

  onLoadAnswer = (_id, ms, ok, out) => {
    if (recording) {
      if (!ok) mismatches++;
      else {
        if (n === latencies.length) {
          const bigger = new Float64Array(latencies.length * 2);
          bigger.set(latencies);
          latencies = bigger;
        }
        latencies[n++] = ms;
      }
    }
    if (stopping) {
      if (inFlight.size === 0) drained();
      return;
    }
    const id = nextId++;
    inFlight.set(id, performance.now());
    out.push(request(id));
  };

  // Start the N requests; each answer sends the next one.
  let first = "";
  for (let i = 0; i < connections; i++) {
    const id = nextId++;
    inFlight.set(id, performance.now());
    first += request(id);
  }
  child.stdin.write(first);

  if (warmup > 0) await new Promise((r) => setTimeout(r, warmup * 1000));
  const cpuAtStart = process.cpuUsage();
  const started = performance.now();
  recording = true;
  process.stderr.write("PHASE measure\n");
  await new Promise((r) => setTimeout(r, duration * 1000));
  recording = false;
  stopping = true;
  const elapsed = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuAtStart);
  const drain = inFlight.size === 0 ? Promise.resolve() : new Promise((r) => (drained = r));
  process.stderr.write("PHASE done\n");

  // Let the requests still in flight come back, and keep the server alive a moment:
  // the orchestrator reads its CPU time and RSS when it sees `PHASE done`.
  await Promise.all([
    Promise.race([drain, new Promise((r) => setTimeout(r, 5000))]),
    new Promise((r) => setTimeout(r, 500)),
  ]);
  const timeouts = inFlight.size;
  exitedEarly = false;
  child.stdin.end();
  const killer = setTimeout(() => child.kill("SIGKILL"), 2000);
  await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once("exit", r)));
  clearTimeout(killer);

  const sorted = latencies.subarray(0, n).sort();
  let sum = 0;
  for (let i = 0; i < n; i++) sum += sorted[i];
  const out = {
    server,
    connections,
    duration: elapsed,
    warmup,
    responseType: "stdio (newline-delimited JSON)",
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
    non2xx: 0,
    errors: 0,
    timeouts,
    mismatches,
  };
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

main().catch((err) => die(err?.stack ?? String(err)));
