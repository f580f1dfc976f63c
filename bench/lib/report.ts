/** Results of `bun run bench` as markdown, and the verdict on each target. */
import type { Scenario, Target } from "../scenarios.ts";

export interface RunResult {
  concurrency: number;
  duration: number;
  requests: number;
  rps: number;
  latencyMs: { min: number; mean: number; p50: number; p90: number; p99: number; max: number };
  /** non-2xx + socket errors + timeouts + wrong bodies */
  failures: number;
  failureDetail: { non2xx: number; errors: number; timeouts: number; mismatches: number };
  responseType: string;
  /** MCP sessions the HTTP load generator used (1 shared, or one per connection). */
  sessions?: number;
  /** CPU used during the measured phase per server role, in cores (1 = one core busy). */
  cpu: Record<string, number>;
  loadgenCpu: number;
  /** Machine-wide busy cores minus the above: kernel softirq (loopback) plus anything else running. */
  otherCpu: number;
  /** CPU of the subject during the measured phase by thread name, in cores. */
  subjectThreads: Record<string, number>;
  /** Highest VmRSS of the subject sampled (every 100 ms) during the measured phase, bytes. */
  rssPeak?: number;
  /** Same, for the subject plus every process it started (sandbox, stdio servers), bytes. */
  rssTreePeak?: number;
  /** VmRSS of the subject right after the run, bytes. */
  rssAfter?: number;
}

export interface ScenarioResult {
  id: string;
  title: string;
  subjectRole?: string;
  /** How the load was generated (HTTP with a shared session or one per connection, or stdio). */
  load?: string;
  /** Facts about the scenario worth a line (sandbox, peer settings). */
  notes?: string[];
  concurrencies?: number[];
  /** VmRSS of the subject once ready, before any load, bytes. */
  rssIdle?: number;
  /** VmHWM (kernel's peak RSS) of the subject at the end of the scenario, bytes. */
  rssHwm?: number;
  runs: RunResult[];
  error?: string;
}

export interface Machine {
  date: Date;
  nproc: string;
  cpuModel: string;
  memGiB: number;
  kernel: string;
  bun: string;
  loadgen: string;
  duration: number;
  warmup: number;
  concurrencies: number[];
}

export interface Verdict {
  scenario: string;
  text: string;
  status: "met" | "missed" | "not measured";
  detail: string;
}

const MiB = 2 ** 20;
/** Foreign CPU (in cores) during a run above which the run is flagged as noisy. */
export const NOISE_CORES = 0.25;
const ms = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? "–" : v.toFixed(3));
const mib = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? "–" : (v / MiB).toFixed(1));
const pct = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? "–" : `${Math.round(v * 100)}%`);
const us = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? "–" : v.toFixed(1));
const signed = (v: number) => `${v >= 0 ? "+" : "−"}${Math.abs(v).toFixed(3)}`;

function runAt(r: ScenarioResult | undefined, c: number): RunResult | undefined {
  return r?.runs.find((x) => x.concurrency === c);
}

function describe(t: Target, baseline: string | undefined): string {
  const base = baseline ?? "the baseline";
  switch (t.kind) {
    case "addedP50":
      return `at concurrency ${t.concurrency} it adds ≤ ${t.maxMs} ms to p50 over ${base}`;
    case "rpsRatio":
      return t.min >= 1
        ? `at concurrency ${t.concurrency} it reaches ≥ ${t.min}× the req/s of ${base}`
        : `at concurrency ${t.concurrency} it keeps ≥ ${Math.round(t.min * 100)}% of the req/s of ${base}`;
    case "idleRss":
      return `idle RSS < ${t.maxMiB} MiB`;
  }
}

const ratio = (v: number) => (Number.isNaN(v) ? "–" : v >= 1.995 ? `${v.toFixed(2)}×` : pct(v));

export function evaluateTargets(scenarios: readonly Scenario[], results: readonly ScenarioResult[]): Verdict[] {
  const verdicts: Verdict[] = [];
  for (const s of scenarios) {
    const r = results.find((x) => x.id === s.id);
    for (const t of s.targets ?? []) {
      const baseId = t.kind === "idleRss" ? undefined : (t.baseline ?? s.baseline);
      const base = baseId ? results.find((x) => x.id === baseId) : undefined;
      const v: Verdict = {
        scenario: s.id,
        text: `${s.id}: ${describe(t, baseId)}`,
        status: "not measured",
        detail: "",
      };
      verdicts.push(v);
      if (!r || r.error) {
        v.detail = r?.error ? `scenario failed: ${firstLine(r.error)}` : "scenario not run";
        continue;
      }
      if (t.kind === "idleRss") {
        if (r.rssIdle === undefined) v.detail = "no RSS reading";
        else {
          v.status = r.rssIdle < t.maxMiB * MiB ? "met" : "missed";
          v.detail = `idle RSS ${mib(r.rssIdle)} MiB`;
        }
        continue;
      }
      const mine = runAt(r, t.concurrency);
      const theirs = runAt(base, t.concurrency);
      if (!mine || !theirs) {
        v.detail = !mine
          ? `no run at concurrency ${t.concurrency}`
          : `baseline ${baseId ?? "(none)"} has no run at concurrency ${t.concurrency}${base?.error ? ` (failed: ${firstLine(base.error)})` : ""}`;
        continue;
      }
      if (t.kind === "addedP50") {
        const added = mine.latencyMs.p50 - theirs.latencyMs.p50;
        v.status = added <= t.maxMs ? "met" : "missed";
        v.detail = `p50 ${ms(mine.latencyMs.p50)} ms vs ${ms(theirs.latencyMs.p50)} ms: ${signed(added)} ms`;
      } else {
        const r = mine.rps / theirs.rps;
        v.status = r >= t.min ? "met" : "missed";
        v.detail = `${mine.rps.toFixed(0)} vs ${theirs.rps.toFixed(0)} req/s: ${t.min >= 1 ? `${r.toFixed(2)}×` : pct(r)}`;
      }
      if (mine.failures || theirs.failures) {
        v.detail += " (runs had failed requests, see table)";
      }
    }
  }
  return verdicts;
}

function firstLine(s: string): string {
  return s.split("\n")[0] ?? s;
}

export function renderMarkdown(
  m: Machine,
  scenarios: readonly Scenario[],
  results: readonly ScenarioResult[],
  verdicts: readonly Verdict[],
): string {
  const out: string[] = [];
  const stamp = m.date
    .toISOString()
    .replace("T", " ")
    .replace(/\.\d+Z$/, " UTC");
  out.push(`## Run of ${stamp}`, "");
  out.push(
    `- Machine: ${m.nproc} CPUs (\`nproc\`), ${m.cpuModel}, ${m.memGiB.toFixed(1)} GiB RAM, Linux ${m.kernel}`,
    `- Bun ${m.bun}; load generators in a separate process: HTTP ${m.loadgen} (keep-alive connections), stdio \`bench/stdio-load.mjs\` on the same runtime`,
    `- Each run: ${m.warmup} s warm-up, then ${m.duration} s measured; concurrency (connections, or requests in flight on the pipe) per scenario below`,
    `- Request: \`tools/call\` \`echo\` on an initialised session (\`Mcp-Session-Id\`, \`MCP-Protocol-Version: 2025-06-18\`, \`Accept: application/json, text/event-stream\`); every answer is checked`,
    "",
  );
  if (results.length > 0) out.push(...renderRuns(results));

  const serverCpu = (x: RunResult) => Object.values(x.cpu).reduce((a, b) => a + b, 0);
  const ratioRows: string[] = [];
  for (const s of scenarios) {
    const r = results.find((x) => x.id === s.id);
    for (const other of [...(s.baseline ? [s.baseline] : []), ...(s.compare ?? [])]) {
      const base = results.find((x) => x.id === other);
      if (!base && !scenarios.some((x) => x.id === other)) continue; // not selected for this run
      const levels = [...new Set([...(r?.concurrencies ?? []), ...(base?.concurrencies ?? [])])].sort((a, b) => a - b);
      for (const c of levels) {
        const a = runAt(r, c);
        const b = runAt(base, c);
        if (!a || !b) {
          if (r?.concurrencies?.includes(c) && base?.concurrencies?.includes(c)) {
            ratioRows.push(`| ${s.id} vs ${other} | ${c} | – | – | – | not measured | – | – | – | – |`);
          }
          continue;
        }
        const subject = r?.subjectRole ? a.cpu[r.subjectRole] : undefined;
        const usPerReq = subject === undefined ? undefined : (subject / a.rps) * 1e6;
        const baseSubject = base?.subjectRole ? b.cpu[base.subjectRole] : undefined;
        const baseUs = baseSubject === undefined ? undefined : (baseSubject / b.rps) * 1e6;
        ratioRows.push(
          `| ${s.id} vs ${other} | ${c} | ${signed(a.latencyMs.p50 - b.latencyMs.p50)} | ${signed(a.latencyMs.p99 - b.latencyMs.p99)} | ${signed(a.latencyMs.mean - b.latencyMs.mean)} | ${ratio(a.rps / b.rps)} | ${us(usPerReq)} | ${us(baseUs)} | ${us((serverCpu(a) / a.rps) * 1e6)} | ${us((serverCpu(b) / b.rps) * 1e6)} |`,
        );
      }
    }
  }
  if (ratioRows.length) {
    out.push(
      "### Ratios",
      "",
      "| Comparison | Conc. | added p50 ms | added p99 ms | added mean ms | req/s ratio | subject CPU µs/req | other's subject CPU µs/req | server-side CPU µs/req | other's server-side CPU µs/req |",
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
      ...ratioRows,
      "",
      '"A vs B": A minus B, A divided by B. Subject CPU µs/req: CPU time of the process under test per request served (proxy, bridge or gateway; for `direct`/`stdio-direct` the server itself). ' +
        "Server-side CPU µs/req: subject plus upstream (every stdio server and sandbox process included), i.e. everything but the load generator. " +
        "On a small machine the load generator and the servers share the cores, so CPU per request is what bounds req/s.",
      "",
    );
  }

  if (verdicts.length) {
    out.push("### Targets", "");
    for (const v of verdicts) {
      const mark = v.status === "met" ? "✅ MET" : v.status === "missed" ? "❌ MISSED" : "⚠️ NOT MEASURED";
      out.push(`- ${mark}: ${v.text} — ${v.detail}`);
    }
    out.push("");
  }

  const threadLines = results.flatMap((r) =>
    r.runs.map((x) => {
      const parts = Object.entries(x.subjectThreads)
        .filter(([, v]) => v >= 0.01)
        .sort((a, b) => b[1] - a[1])
        .map(([name, v]) => `${name} ${pct(v)}`);
      return `- ${r.id} (${r.subjectRole ?? "subject"}) at concurrency ${x.concurrency}: ${parts.join(", ") || "–"}`;
    }),
  );
  if (threadLines.length) {
    out.push(
      "### Subject CPU by thread",
      "",
      "Share of one core per thread of the process under test during the measured phase (`bun.exe`/`bun` is the JavaScript thread; Bun's `fetch` runs on its `HTTP Client` thread).",
      "",
      ...threadLines,
      "",
    );
  }

  const noisy = results.flatMap((r) => r.runs.filter((x) => x.otherCpu > NOISE_CORES).map((x) => ({ r, x })));
  if (noisy.length) {
    out.push(
      "### Noise",
      "",
      `Runs during which more than ${pct(NOISE_CORES)} of a core went to something other than the bench's own processes (other programs on the machine, or kernel networking); their figures, and ratios involving them, are less trustworthy:`,
      "",
      ...noisy.map(({ r, x }) => `- ${r.id} at concurrency ${x.concurrency}: CPU other ${pct(x.otherCpu)}`),
      "",
    );
  }

  const failed = results.filter((r) => r.error);
  if (failed.length) {
    out.push("### Errors", "");
    for (const r of failed) out.push(`- **${r.id}**:`, "", "```", (r.error ?? "").trimEnd(), "```", "");
  }
  const failing = results.flatMap((r) => r.runs.filter((x) => x.failures).map((x) => ({ r, x })));
  for (const { r, x } of failing) {
    out.push(`- ${r.id} c=${x.concurrency}: failed requests ${JSON.stringify(x.failureDetail)}`);
  }
  return out.join("\n").trimEnd();
}

/** The scenarios' descriptions and the table of every run. */
function renderRuns(results: readonly ScenarioResult[]): string[] {
  const out: string[] = ["### Scenarios", ""];
  for (const r of results) {
    const type = r.runs[0]?.responseType;
    out.push(
      `- **${r.id}** (${r.title}): ${r.load ?? "–"}; concurrency ${r.concurrencies?.join(", ") ?? "–"}${type ? `; answers ${type}` : ""}`,
      ...(r.notes ?? []).map((n) => `  - ${n}`),
    );
  }
  out.push("");

  out.push(
    "| Scenario | Conc. | req/s | p50 ms | p90 ms | p99 ms | max ms | failed | CPU subject | CPU upstream | CPU loadgen | CPU other | RSS idle MiB | RSS peak MiB | RSS after MiB | RSS peak incl. children MiB |",
    `| --- |${" ---: |".repeat(15)}`,
  );
  for (const r of results) {
    if (r.error && r.runs.length === 0) {
      out.push(`| ${r.title} | – | **failed** | | | | | | | | | | ${mib(r.rssIdle)} | | | |`);
      continue;
    }
    for (const run of r.runs) {
      const subjectCpu = r.subjectRole ? run.cpu[r.subjectRole] : undefined;
      const upstreamCpu = r.subjectRole === "upstream" ? undefined : run.cpu.upstream;
      out.push(
        `| ${r.title} | ${run.concurrency} | ${run.rps.toFixed(0)} | ${ms(run.latencyMs.p50)} | ${ms(run.latencyMs.p90)} | ${ms(run.latencyMs.p99)} | ${ms(run.latencyMs.max)} | ${run.failures} | ${pct(subjectCpu)} | ${pct(upstreamCpu)} | ${pct(run.loadgenCpu)} | ${pct(run.otherCpu)} | ${mib(r.rssIdle)} | ${mib(run.rssPeak)} | ${mib(run.rssAfter)} | ${mib(run.rssTreePeak)} |`,
      );
    }
    if (r.error) out.push(`| ${r.title} | – | **failed later** | | | | | | | | | | | | | |`);
  }
  out.push(
    "",
    "CPU columns: share of one core used during the measured phase (subject = the process under test: the proxy, bridge or gateway; for `direct` and `stdio-direct` the server itself; " +
      "upstream = the server behind the subject: bench/upstream.ts, or the stdio echo server(s) with their sandbox processes; " +
      "other = the machine's busy time not charged to these processes: loopback softirq plus anything else running, which makes a run noisy when large). " +
      "RSS is the subject's VmRSS: idle = ready, before any load; peak = highest 100 ms sample during the measured phase; after = right after the run; " +
      "incl. children = the subject plus every process it started (sandbox, stdio servers: supergateway has one per session).",
    "",
  );
  return out;
}
