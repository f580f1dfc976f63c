/**
 * `bun run bench`: latency, throughput and memory of the mcpmgr proxy against a
 * direct connection to the same upstream (and a naive Bun proxy), and of the stdio
 * bridge (`mcpmgr run`) against the stdio server driven directly and supergateway; and
 * (cli-startup) how fast the compiled CLI starts next to a trivial compiled Bun program.
 * See bench/README.md.
 *
 * Environment:
 *   BENCH_DURATION       seconds measured per run (default 10)
 *   BENCH_WARMUP         warm-up seconds before each run (default 3, at most BENCH_DURATION)
 *   BENCH_CONCURRENCY    comma-separated connection counts for every scenario (default: each scenario's, 1,32 or 1,16)
 *   BENCH_SCENARIOS      comma-separated scenario ids (default: all, see bench/scenarios.ts)
 *   BENCH_READY_TIMEOUT  ms a server gets to become ready (default 10000)
 *   BENCH_NOISY_RETRIES  reruns of a run during which other programs took > 25% of a core (default 2)
 *   BENCH_LOADGEN        runtime for the load generator: "node" (default) or "bun"
 *   BENCH_RESULTS        where to write the markdown (default bench/RESULTS.md; "-" = don't write)
 *   BENCH_PROXY_CMD      command that replaces `bun src/main.ts` for the proxy and bridge scenarios (e.g. a compiled binary)
 *   BENCH_STARTUP_RUNS   cli-startup: timed starts per command (default 30)
 *   BENCH_MCPMGR_BIN     cli-startup and footprint: an mcpmgr executable to measure instead of compiling one
 *   BENCH_FOOTPRINT_FORMS  footprint: "compiled", "source" or both (default both)
 *   BENCH_STRICT=1       exit 1 when a target is missed (a failed scenario always exits 1)
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { availableParallelism, totalmem } from "node:os";
import { dirname, join, resolve } from "node:path";
import {
  adopt,
  type Child,
  cpuSeconds,
  descendantsOf,
  freePort,
  killAll,
  killLeftovers,
  memory,
  processIds,
  smapsRollup,
  spawnChild,
  systemBusySeconds,
  threadCpuSeconds,
  waitForHttp,
  waitForMcp,
} from "./lib/proc.ts";
import { RESULTS_HEADER, replaceSections } from "./lib/results-section.ts";
import { compiledMcpmgr, removeCompiledMcpmgr } from "./lib/compiled.ts";
import { renderFootprint } from "./lib/footprint-report.ts";
import { type FootprintResult, footprints, footprintVerdicts } from "./footprint.ts";
import { type Harness, type Load, type Running, type Scenario, scenarios } from "./scenarios.ts";
import { renderStartup, runStartupScenario, startupVerdict } from "./lib/startup.ts";
import {
  type Machine,
  NOISE_CORES,
  type RunResult,
  type ScenarioResult,
  evaluateTargets,
  renderMarkdown,
} from "./lib/report.ts";

const benchDir = import.meta.dir;
const root = resolve(benchDir, "..");

function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0)
    throw new Error(`${name} must be a non-negative number, got ${JSON.stringify(raw)}`);
  return n;
}

const duration = envNumber("BENCH_DURATION", 10);
const warmup = Math.min(envNumber("BENCH_WARMUP", 3), duration);
const envConcurrencies = process.env.BENCH_CONCURRENCY?.trim()
  ? process.env.BENCH_CONCURRENCY.split(",")
      .map((s) => Number(s.trim()))
      .filter((n) => Number.isInteger(n) && n > 0)
  : undefined;
const readyTimeoutMs = envNumber("BENCH_READY_TIMEOUT", 10_000);
const noisyRetries = Math.floor(envNumber("BENCH_NOISY_RETRIES", 2));
const selected = process.env.BENCH_SCENARIOS?.split(",")
  .map((s) => s.trim())
  .filter(Boolean);
const resultsPath = process.env.BENCH_RESULTS ?? join(benchDir, "RESULTS.md");

if (duration <= 0) throw new Error("BENCH_DURATION must be > 0");
if (envConcurrencies?.length === 0) throw new Error("BENCH_CONCURRENCY lists no positive integer");

/** The start-up scenario (bench/lib/startup.ts): timed process starts, not a load. */
const STARTUP_ID = "cli-startup";
const chosen: Scenario[] = selected ? scenarios.filter((s) => selected.includes(s.id)) : [...scenarios];
const chosenFootprints = selected ? footprints.filter((f) => selected.includes(f.id)) : [...footprints];
const startupChosen = selected ? selected.includes(STARTUP_ID) : true;
if (selected) {
  const known = [...scenarios, ...footprints].map((s) => s.id).concat(STARTUP_ID);
  const unknown = selected.filter((id) => !known.includes(id));
  if (unknown.length) throw new Error(`unknown scenario(s) ${unknown.join(", ")}; known: ${known.join(", ")}`);
}
const startupRuns = Math.floor(envNumber("BENCH_STARTUP_RUNS", 30));

/** The connection counts a scenario runs at. */
function concurrenciesOf(s: Scenario): readonly number[] {
  return envConcurrencies ?? s.concurrencies ?? [1, 32];
}
const concurrencies = [...new Set(chosen.flatMap((s) => [...concurrenciesOf(s)]))].sort((a, b) => a - b);

// ---------------------------------------------------------------- load generator

/** The runtime of the load generators (bench/load.mjs for HTTP, bench/stdio-load.mjs for stdio). */
function loadgenRuntime(): { exe: string; runtime: string } {
  const want = process.env.BENCH_LOADGEN ?? "node";
  if (want === "node") {
    const node = Bun.which("node");
    if (node) {
      const version = Bun.spawnSync([node, "--version"]).stdout.toString().trim();
      return { exe: node, runtime: `node ${version}` };
    }
    process.stderr.write("bench: `node` not found, running the load generator under bun\n");
  } else if (want !== "bun") {
    throw new Error(`BENCH_LOADGEN must be "node" or "bun", got ${JSON.stringify(want)}`);
  }
  return { exe: process.execPath, runtime: `bun ${Bun.version}` };
}
const loadgen = loadgenRuntime();

function loadgenCommand(load: Load, concurrency: number): string[] {
  if (load.kind === "http") {
    const cfg = {
      url: load.url,
      connections: concurrency,
      duration,
      warmup,
      sessions: load.sessions ?? "shared",
      ...(load.headers ? { headers: load.headers } : {}),
    };
    return [loadgen.exe, join(benchDir, "load.mjs"), JSON.stringify(cfg)];
  }
  const cfg = { server: load.server, connections: concurrency, duration, warmup };
  return [loadgen.exe, join(benchDir, "stdio-load.mjs"), JSON.stringify(cfg)];
}

function describeLoad(load: Load): string {
  if (load.kind === "stdio") return "stdio pipe, N requests in flight";
  if (load.sessions === "stateless") return "HTTP, 2026-07-28 stateless requests (no session)";
  return load.sessions === "per-connection"
    ? "HTTP, one MCP session per connection"
    : "HTTP, one MCP session shared by all connections";
}

function target(load: Load): string {
  return load.kind === "http" ? load.url : `stdio: ${load.server.join(" ")}`;
}

interface LoadOutput {
  duration: number;
  responseType: string;
  requests: number;
  rps: number;
  latencyMs: RunResult["latencyMs"];
  loadgenCpuSeconds: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  mismatches: number;
  /** MCP sessions the HTTP load generator used. */
  sessions?: number;
}

/** A run, plus readings of a subject that only lives during the run (stdio loads). */
interface Measured {
  result: RunResult;
  rssIdle?: number;
  rssHwm?: number;
}

async function runLoad(running: Running, concurrency: number): Promise<Measured> {
  const load = running.load;
  // A stdio load generator starts the server itself: the subject is found once it says so.
  let subjectPid = running.subject?.pid;
  let rssIdle: number | undefined;
  let rssHwm: number | undefined;
  let rssAfter: number | undefined;
  let rssPeak = 0;
  let treePeak = 0;
  let treePids: number[] = [];
  const sampleRss = () => {
    if (subjectPid === undefined) return;
    const m = memory(subjectPid);
    if (m && m.rss > rssPeak) rssPeak = m.rss;
    let total = 0;
    for (const pid of treePids) total += memory(pid)?.rss ?? 0;
    if (total > treePeak) treePeak = total;
  };
  let sampler: ReturnType<typeof setInterval> | undefined;
  let measuring = false;
  let systemBusy = NaN;
  let threadsAtStart = new Map<string, { name: string; seconds: number }>();
  const threads: Record<string, number> = {};
  /** role → CPU seconds of each of its processes when the measured phase started. */
  const cpuAtStart = new Map<string, { pid: number; seconds: number }[]>();
  const cpuUsed: Record<string, number> = {};

  /** The processes behind each role right now: own processes, and descendants where asked. */
  const rolePids = (loadgenPid: number): Map<string, number[]> => {
    const roles = new Map<string, number[]>();
    const add = (role: string, pids: number[]) => roles.set(role, [...(roles.get(role) ?? []), ...pids]);
    for (const p of running.processes) add(p.role, [p.pid]);
    for (const d of running.descendants ?? []) add(d.role, descendantsOf(d.of.pid));
    if (load.kind === "stdio") add("upstream", descendantsOf(loadgenPid));
    return roles;
  };
  const findStdioSubject = (loadgenPid: number) => {
    if (load.kind === "stdio" && subjectPid === undefined) subjectPid = descendantsOf(loadgenPid)[0];
  };

  const child: Child = spawnChild("loadgen", loadgenCommand(load, concurrency), {
    cwd: root,
    onStderrLine(line) {
      if (line === "PHASE ready") {
        findStdioSubject(child.pid);
        if (subjectPid !== undefined) rssIdle = memory(subjectPid)?.rss;
      } else if (line === "PHASE measure") {
        measuring = true;
        systemBusy = systemBusySeconds();
        findStdioSubject(child.pid);
        if (subjectPid !== undefined) {
          threadsAtStart = threadCpuSeconds(subjectPid);
          treePids = [subjectPid, ...descendantsOf(subjectPid)];
        }
        for (const [role, pids] of rolePids(child.pid)) {
          const list: { pid: number; seconds: number }[] = [];
          for (const pid of pids) {
            const seconds = cpuSeconds(pid);
            if (seconds !== undefined) list.push({ pid, seconds });
          }
          cpuAtStart.set(role, list);
        }
        sampleRss();
        sampler = setInterval(sampleRss, 100);
      } else if (line === "PHASE done") {
        if (sampler) clearInterval(sampler);
        systemBusy = systemBusySeconds() - systemBusy;
        if (subjectPid !== undefined) {
          for (const [tid, t] of threadCpuSeconds(subjectPid)) {
            const used = t.seconds - (threadsAtStart.get(tid)?.seconds ?? 0);
            threads[t.name] = (threads[t.name] ?? 0) + used;
          }
        }
        for (const [role, list] of cpuAtStart) {
          let used = 0;
          // A process that ended meanwhile is left out (its last readings are gone).
          for (const { pid, seconds } of list) used += (cpuSeconds(pid) ?? seconds) - seconds;
          cpuUsed[role] = used;
        }
        sampleRss();
        if (subjectPid !== undefined) {
          const m = memory(subjectPid);
          rssAfter = m?.rss;
          rssHwm = m?.hwm;
        }
      } else if (line.trim()) {
        process.stderr.write(`    loadgen: ${line}\n`);
      }
    },
  });
  const limitMs =
    (warmup + duration) * 1500 +
    30_000 +
    (load.kind === "http" && load.sessions === "per-connection" ? concurrency * 2000 : 0);
  const timer = setTimeout(() => {
    process.stderr.write(`bench: load generator still running after ${limitMs / 1000} s, killing it\n`);
    child.proc.kill("SIGKILL");
  }, limitMs);
  const line = child.waitForLine(/^\{.*\}$/, limitMs + 1000).catch((e: Error) => e);
  const code = await child.proc.exited;
  clearTimeout(timer);
  if (sampler) clearInterval(sampler);
  const got = await line;
  if (code !== 0 || got instanceof Error || !measuring) {
    throw new Error(
      `load generator failed (exit ${code}) against ${target(load)} at concurrency ${concurrency}\n` +
        (got instanceof Error ? got.message : child.output()),
    );
  }
  const out = JSON.parse(got[0]) as LoadOutput;
  // A server that outlives the load generator is read again after the sessions closed.
  if (running.subject) {
    const m = memory(running.subject.pid);
    if (m) rssAfter = m.rss;
  }
  const cpu: Record<string, number> = {};
  for (const [role, used] of Object.entries(cpuUsed)) cpu[role] = used / out.duration;
  const loadgenCpu = out.loadgenCpuSeconds / out.duration;
  for (const name of Object.keys(threads)) threads[name] = (threads[name] as number) / out.duration;
  const ours = Object.values(cpu).reduce((a, b) => a + b, 0) + loadgenCpu;
  const result: RunResult = {
    concurrency,
    duration: out.duration,
    requests: out.requests,
    rps: out.rps,
    latencyMs: out.latencyMs,
    failures: out.non2xx + out.errors + out.timeouts + out.mismatches,
    failureDetail: { non2xx: out.non2xx, errors: out.errors, timeouts: out.timeouts, mismatches: out.mismatches },
    responseType: out.responseType,
    sessions: out.sessions,
    cpu,
    loadgenCpu,
    subjectThreads: threads,
    otherCpu: Math.max(0, systemBusy / out.duration - ours),
    rssPeak: rssPeak || undefined,
    rssTreePeak: treePeak || undefined,
    rssAfter,
  };
  return { result, rssIdle, rssHwm };
}

// ---------------------------------------------------------------- harness

/** A harness that remembers every process a scenario starts, so a failed start leaves nothing behind. */
function harnessFor(started: Child[]): Harness {
  const spawn: typeof spawnChild = (...args) => {
    const child = spawnChild(...args);
    started.push(child);
    return child;
  };
  return {
    root,
    bun: process.execPath,
    readyTimeoutMs,
    async startUpstream() {
      const child = spawn("upstream", [process.execPath, join(benchDir, "upstream.ts"), "--port", "0"], { cwd: root });
      const m = await child.waitForLine(/^READY (http:\/\/\S+)$/, readyTimeoutMs);
      return { url: m[1] as string, child };
    },
    spawn,
    waitForHttp,
    waitForMcp,
    freePort,
    descendantsOf,
    adopt,
    smapsRollup,
    loadCommand: loadgenCommand,
    mcpmgrCommand: () => process.env.BENCH_PROXY_CMD?.trim().split(/\s+/) ?? [process.execPath, "src/main.ts"],
    mcpmgrBinary: () => compiledMcpmgr(root),
  };
}

interface Live {
  scenario: Scenario;
  result: ScenarioResult;
  running?: Running;
  started: Child[];
}

async function startScenario(s: Scenario): Promise<Live> {
  const live: Live = { scenario: s, result: { id: s.id, title: s.title, runs: [] }, started: [] };
  try {
    process.stderr.write(`bench: ${s.id}: starting\n`);
    live.running = await s.start(harnessFor(live.started));
    await Bun.sleep(500); // let startup garbage settle before the idle reading
    const subject = live.running.subject;
    // A stdio load's server is started by the load generator: its role is "upstream".
    live.result.subjectRole = subject?.role ?? "upstream";
    if (subject) live.result.rssIdle = memory(subject.pid)?.rss;
    live.result.load = describeLoad(live.running.load);
    live.result.notes = [...(live.running.notes ?? [])];
    live.result.concurrencies = [...concurrenciesOf(s)];
  } catch (err) {
    fail(live, err);
  }
  return live;
}

function fail(live: Live, err: unknown): void {
  live.result.error = (err as Error)?.message ?? String(err);
  live.running = undefined;
  process.stderr.write(`bench: ${live.scenario.id}: FAILED: ${live.result.error}\n`);
}

async function stopScenario(live: Live): Promise<void> {
  const subject = live.running?.subject;
  if (subject) live.result.rssHwm = memory(subject.pid)?.hwm;
  // What the servers started themselves (sandbox, per-session servers) must not outlive them.
  const leftovers = processIds(live.started.flatMap((p) => descendantsOf(p.pid)));
  await Promise.all(live.started.map((p) => p.stop()));
  await live.running?.stop?.().catch(() => {});
  const killed = await killLeftovers(leftovers);
  if (killed) process.stderr.write(`bench: ${live.scenario.id}: killed ${killed} leftover child process(es)\n`);
  live.started.length = 0;
  live.running = undefined;
}

/**
 * All scenarios are started first (idle servers cost nothing), then the runs are
 * interleaved: for each concurrency, every scenario in turn. Runs that are compared
 * with each other are thus minutes closer in time than scenario-by-scenario, which
 * matters on a shared machine whose background load drifts.
 */
async function runAll(): Promise<ScenarioResult[]> {
  const lives: Live[] = [];
  try {
    for (const s of chosen) {
      const live = await startScenario(s);
      lives.push(live);
      if (!live.running) await stopScenario(live);
    }
    for (const c of concurrencies) {
      for (const live of lives) {
        if (!live.running || !concurrenciesOf(live.scenario).includes(c)) continue;
        const id = live.scenario.id;
        process.stderr.write(`bench: ${id}: concurrency ${c}, ${warmup} s warm-up + ${duration} s\n`);
        try {
          let m = await runLoad(live.running, c);
          // Something else hogged the CPU: try again, keep the quietest attempt.
          for (let retry = 1; retry <= noisyRetries && m.result.otherCpu > NOISE_CORES; retry++) {
            process.stderr.write(
              `bench: ${id}: c=${c} was noisy (CPU other ${Math.round(m.result.otherCpu * 100)}%), retry ${retry}/${noisyRetries}\n`,
            );
            await Bun.sleep(2000);
            const again = await runLoad(live.running, c);
            if (again.result.otherCpu < m.result.otherCpu) m = again;
          }
          const r = m.result;
          live.result.runs.push(r);
          // A server the load generator starts is idle-read at each start: keep the first.
          live.result.rssIdle ??= m.rssIdle;
          if (m.rssHwm !== undefined) live.result.rssHwm = Math.max(live.result.rssHwm ?? 0, m.rssHwm);
          process.stderr.write(
            `bench: ${id}: c=${c} ${r.rps.toFixed(0)} req/s p50 ${r.latencyMs.p50.toFixed(3)} ms p99 ${r.latencyMs.p99.toFixed(3)} ms, CPU other ${Math.round(r.otherCpu * 100)}%` +
              (r.failures ? ` FAILURES ${JSON.stringify(r.failureDetail)}` : "") +
              "\n",
          );
        } catch (err) {
          fail(live, err);
          await stopScenario(live);
        }
        await Bun.sleep(300);
      }
    }
  } finally {
    for (const live of lives) await stopScenario(live);
    killAll();
  }
  return lives.map((l) => l.result);
}

function machine(): Machine {
  let cpuModel = "unknown";
  try {
    cpuModel =
      readFileSync("/proc/cpuinfo", "utf8")
        .match(/^model name\s*:\s*(.+)$/m)?.[1]
        ?.trim() ?? cpuModel;
  } catch {}
  const nproc = Bun.spawnSync(["nproc"]).stdout.toString().trim() || String(availableParallelism());
  let kernel = "";
  try {
    kernel = readFileSync("/proc/sys/kernel/osrelease", "utf8").trim();
  } catch {}
  let autocannon = "?";
  try {
    autocannon = JSON.parse(readFileSync(join(root, "node_modules/autocannon/package.json"), "utf8")).version;
  } catch {}
  return {
    date: new Date(),
    nproc,
    cpuModel,
    memGiB: totalmem() / 2 ** 30,
    kernel,
    bun: Bun.version,
    loadgen: `autocannon ${autocannon} on ${loadgen.runtime}`,
    duration,
    warmup,
    concurrencies,
  };
}

/** The footprint scenarios, one after the other, after the loads (they start and stop their own workloads). */
async function runFootprints(): Promise<{ id: string; title: string; result?: FootprintResult; error?: string }[]> {
  const outcomes: Awaited<ReturnType<typeof runFootprints>> = [];
  for (const f of chosenFootprints) {
    const started: Child[] = [];
    process.stderr.write(`bench: ${f.id}: measuring\n`);
    try {
      const result: FootprintResult = await f.measure(harnessFor(started));
      outcomes.push({ id: f.id, title: f.title, result });
    } catch (err) {
      const error = (err as Error)?.message ?? String(err);
      process.stderr.write(`bench: ${f.id}: FAILED: ${error}\n`);
      outcomes.push({ id: f.id, title: f.title, error });
    } finally {
      await Promise.all(started.map((p) => p.stop()));
    }
  }
  return outcomes;
}

/** cli-startup: the markdown section, whether it ran, whether a goal was missed. */
async function runStartup(): Promise<{ md: string; failed: boolean; missed: boolean }> {
  process.stderr.write(`bench: ${STARTUP_ID}: ${startupRuns} runs per command\n`);
  try {
    const report = await runStartupScenario({
      root,
      runs: startupRuns,
      warmup: 3,
      binary: await compiledMcpmgr(root),
      freePort,
      async startUpstream() {
        const child = spawnChild("upstream", [process.execPath, join(benchDir, "upstream.ts"), "--port", "0"], {
          cwd: root,
        });
        const m = await child.waitForLine(/^READY (http:\/\/\S+)$/, readyTimeoutMs);
        return { url: m[1] as string, stop: () => child.stop() };
      },
    });
    for (const row of report.rows) {
      process.stderr.write(
        `bench: ${STARTUP_ID}: ${row.command}: ${row.wall.median.toFixed(1)} ms (${row.ratio.toFixed(2)}x the trivial program)\n`,
      );
    }
    const missed = report.rows.some((row) => startupVerdict(row) === false);
    return { md: renderStartup(report, new Date(), Bun.version), failed: false, missed };
  } catch (err) {
    const message = (err as Error)?.message ?? String(err);
    process.stderr.write(`bench: ${STARTUP_ID}: FAILED: ${message}\n`);
    return { md: `## CLI start-up (\`${STARTUP_ID}\`)\n\n**failed**: ${message}\n`, failed: true, missed: false };
  }
}

async function main(): Promise<number> {
  // Each part is one marked section of RESULTS.md (bench/lib/results-section.ts): a run
  // replaces the sections it measured and keeps the others (tool-search's among them).
  const sections: Record<string, string> = {};
  let failed = false;
  let missed = false;
  if (chosen.length > 0) {
    const results = await runAll();
    const verdicts = evaluateTargets(chosen, results);
    sections.load = renderMarkdown(machine(), chosen, results, verdicts);
    failed ||= results.some((r) => r.error);
    missed ||= verdicts.some((v) => v.status === "missed");
  }
  for (const outcome of await runFootprints()) {
    const m = machine();
    sections[outcome.id] = renderFootprint(outcome, {
      date: m.date,
      line: `${m.nproc} CPUs, ${m.cpuModel}, Linux ${m.kernel}, Bun ${m.bun}; the load on the bridge: ${m.loadgen}, ${m.warmup} s warm-up, ${m.duration} s measured.`,
    });
    failed ||= outcome.error !== undefined;
    missed ||= outcome.result !== undefined && footprintVerdicts(outcome.result).some((v) => !v.met);
  }
  if (startupChosen) {
    const startup = await runStartup();
    sections[STARTUP_ID] = startup.md;
    failed ||= startup.failed;
    missed ||= startup.missed;
  }
  process.stdout.write(`${Object.values(sections).join("\n")}\n`);
  if (resultsPath !== "-") {
    const existing = existsSync(resultsPath) ? readFileSync(resultsPath, "utf8") : RESULTS_HEADER;
    if (existsSync(dirname(resultsPath))) writeFileSync(resultsPath, replaceSections(existing, sections));
    process.stderr.write(`bench: wrote ${resultsPath}\n`);
  }
  if (failed) return 1;
  if (process.env.BENCH_STRICT === "1" && missed) return 1;
  return 0;
}

main()
  .then((code) => {
    killAll();
    removeCompiledMcpmgr();
    process.exit(code);
  })
  .catch((err) => {
    process.stderr.write(`bench: ${(err as Error)?.stack ?? err}\n`);
    killAll();
    removeCompiledMcpmgr();
    process.exit(1);
  });
