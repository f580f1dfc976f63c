/**
 * The `cli-startup` scenario: how long the compiled mcpmgr takes to start, next to a
 * trivial compiled Bun program (`console.log("x")`, built by the same Bun with the same
 * autoload settings) on the same machine, in the same minute.
 *
 * One-shot commands (`--version`, `--help`, `list`, `registry list`) are timed from spawn to
 * exit; long-running ones (`proxy`, `run --foreground`) from spawn to their first line on
 * stdout (the URL to connect to), then stopped. Runs are interleaved (trivial, then each
 * command, round after round) so drifting background load hits all of them alike, and the
 * median is reported: on a shared machine a few runs are always slow for reasons of their own.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";

export interface StartupCase {
  readonly id: string;
  readonly argv: readonly string[];
  /** How the report shows the command (default: mcpmgr + argv). */
  readonly label?: string;
  /** For long-running commands: timed until stdout has a line matching this, then stopped. */
  readonly until?: RegExp;
  /** The goal, as a multiple of the trivial program's median (one-shot commands). */
  readonly maxRatio?: number;
  /** The goal in milliseconds to the first output (long-running commands). */
  readonly maxMs?: number;
}

export interface Timing {
  readonly median: number;
  readonly min: number;
  readonly p90: number;
}

export interface StartupRow {
  readonly id: string;
  readonly command: string;
  /** Wall time, ms: spawn to exit, or to the first matching line. */
  readonly wall: Timing;
  /** User + system CPU time of the process, ms (one-shot commands only). */
  readonly cpuMs?: number;
  /** wall.median / the trivial program's wall.median. */
  readonly ratio: number;
  /** wall.min / the trivial program's wall.min: the least disturbed runs, steadier on a busy machine. */
  readonly minRatio: number;
  readonly maxRatio?: number;
  readonly maxMs?: number;
}

export interface StartupReport {
  /** 1-minute load average before and after the runs: a busy machine makes every figure noisy. */
  readonly load: readonly [number, number];
  readonly binary: string;
  readonly binaryMiB: number;
  readonly runs: number;
  readonly trivial: StartupRow;
  readonly rows: readonly StartupRow[];
}

function timing(samples: readonly number[]): Timing {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
  return { median: at(0.5), min: sorted[0] as number, p90: at(0.9) };
}

/**
 * Builds `console.log("x")` into an executable in a temporary directory with the running
 * Bun, as scripts/compile.ts builds mcpmgr (no .env or bunfig.toml autoloading).
 */
export async function buildTrivialProgram(): Promise<{ path: string; cleanup: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), "mcpmgr-bench-trivial-"));
  const source = join(dir, "trivial.ts");
  writeFileSync(source, 'console.log("x");\n');
  const outfile = join(dir, "trivial");
  const result = await Bun.build({
    entrypoints: [source],
    compile: { outfile, autoloadDotenv: false, autoloadBunfig: false },
    minify: true,
  });
  if (!result.success) throw new Error(`building the trivial program failed: ${result.logs.join("\n")}`);
  return { path: outfile, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

interface Sample {
  wallMs: number;
  cpuMs?: number;
}

function runOnce(argv: readonly string[], env: Record<string, string | undefined>): Sample {
  const start = performance.now();
  const proc = Bun.spawnSync([...argv], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const wallMs = performance.now() - start;
  if (proc.exitCode !== 0) {
    throw new Error(`${argv.join(" ")} exited ${proc.exitCode}: ${proc.stderr.toString().trim().slice(0, 500)}`);
  }
  const cpu = proc.resourceUsage?.cpuTime;
  return { wallMs, cpuMs: cpu ? (Number(cpu.user) + Number(cpu.system)) / 1000 : undefined };
}

async function firstLine(argv: readonly string[], until: RegExp, env: Record<string, string | undefined>) {
  const start = performance.now();
  const proc = Bun.spawn([...argv], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const stderr = new Response(proc.stderr).text();
  try {
    const decoder = new TextDecoder();
    let seen = "";
    for await (const chunk of proc.stdout) {
      seen += decoder.decode(chunk, { stream: true });
      if (seen.split("\n").some((line) => until.test(line))) return { wallMs: performance.now() - start };
    }
    throw new Error(`${argv.join(" ")} ended without printing ${until}: ${(await stderr).trim().slice(0, 500)}`);
  } finally {
    proc.kill("SIGTERM");
    const exited = await Promise.race([proc.exited, Bun.sleep(5000).then(() => "timeout" as const)]);
    if (exited === "timeout") proc.kill("SIGKILL");
  }
}

/**
 * Times every case `runs` times (after `warmup` untimed rounds that fill the page cache),
 * interleaved with the trivial program.
 */
export async function measureStartup(opts: {
  readonly binary: string;
  readonly trivial: string;
  readonly cases: readonly StartupCase[];
  readonly runs: number;
  readonly warmup: number;
  readonly env: Record<string, string | undefined>;
}): Promise<StartupReport> {
  const loadBefore = loadavg()[0] as number;
  const samples = new Map<string, Sample[]>([
    ["trivial", []],
    ...opts.cases.map((c) => [c.id, []] as [string, Sample[]]),
  ]);
  const one = async (c: StartupCase | undefined): Promise<Sample> => {
    if (c === undefined) return runOnce([opts.trivial], opts.env);
    const argv = [opts.binary, ...c.argv];
    return c.until ? firstLine(argv, c.until, opts.env) : runOnce(argv, opts.env);
  };
  for (let round = 0; round < opts.warmup + opts.runs; round++) {
    for (const c of [undefined, ...opts.cases]) {
      const sample = await one(c);
      if (round >= opts.warmup) samples.get(c?.id ?? "trivial")!.push(sample);
    }
  }
  const rowOf = (id: string, command: string, c?: StartupCase): Omit<StartupRow, "ratio" | "minRatio"> => {
    const all = samples.get(id)!;
    const cpu = all.flatMap((s) => (s.cpuMs === undefined ? [] : [s.cpuMs]));
    return {
      id,
      command,
      wall: timing(all.map((s) => s.wallMs)),
      ...(cpu.length ? { cpuMs: timing(cpu).median } : {}),
      ...(c?.maxRatio !== undefined ? { maxRatio: c.maxRatio } : {}),
      ...(c?.maxMs !== undefined ? { maxMs: c.maxMs } : {}),
    };
  };
  const trivialRow = rowOf("trivial", 'trivial compiled Bun program (console.log("x"))');
  const base = trivialRow.wall;
  return {
    load: [loadBefore, loadavg()[0] as number],
    binary: opts.binary,
    binaryMiB: Bun.file(opts.binary).size / 2 ** 20,
    runs: opts.runs,
    trivial: { ...trivialRow, ratio: 1, minRatio: 1 },
    rows: opts.cases.map((c) => {
      const row = rowOf(c.id, c.label ?? `mcpmgr ${c.argv.join(" ")}`, c);
      return { ...row, ratio: row.wall.median / base.median, minRatio: row.wall.min / base.min };
    }),
  };
}

/** Whether a row meets its goal (undefined: it has none). */
export function startupVerdict(row: StartupRow): boolean | undefined {
  if (row.maxRatio !== undefined) return row.ratio <= row.maxRatio;
  if (row.maxMs !== undefined) return row.wall.median <= row.maxMs;
  return undefined;
}

export function renderStartup(report: StartupReport, when: Date, bunVersion: string): string {
  const ms = (n: number | undefined) => (n === undefined ? "–" : n.toFixed(1));
  const stamp = when
    .toISOString()
    .replace("T", " ")
    .replace(/\.\d+Z$/, " UTC");
  const goal = (r: StartupRow) => {
    const verdict = startupVerdict(r);
    if (verdict === undefined) return "–";
    const text = r.maxRatio !== undefined ? `≤ ${r.maxRatio}×` : `≤ ${r.maxMs} ms`;
    return `${text} ${verdict ? "met" : "**missed**"}`;
  };
  const line = (r: StartupRow) =>
    `| \`${r.command}\` | ${ms(r.wall.median)} | ${ms(r.wall.min)} | ${ms(r.wall.p90)} | ${ms(r.cpuMs)} | ${r.ratio.toFixed(2)}× | ${r.minRatio.toFixed(2)}× | ${goal(r)} |`;
  return [
    "## CLI start-up (`cli-startup`)",
    "",
    `Run of ${stamp}: Bun ${bunVersion}, ${report.binaryMiB.toFixed(0)} MiB executable, ` +
      `${report.runs} runs per command interleaved with the trivial program; empty MCPMGR_HOME; ` +
      `load average ${report.load[0].toFixed(2)} before, ${report.load[1].toFixed(2)} after. ` +
      "One-shot commands: spawn to exit; `proxy`/`run`: spawn to the URL line on stdout (then stopped). " +
      "Ratios: median / the trivial program's median (the goal), min / its min (the least disturbed runs).",
    "",
    "| Command | median ms | min ms | p90 ms | CPU ms (median) | vs trivial | min vs min | goal |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    line(report.trivial),
    ...report.rows.map(line),
    "",
  ].join("\n");
}

/** Goals of issue 14: one-shot commands within 2x the trivial program; no visible wait for proxy/run. */
const ONE_SHOT_RATIO = 2;
const FIRST_OUTPUT_MS = 100;

/**
 * The `cli-startup` scenario: compiles mcpmgr (scripts/compile.ts, unless `binary` is given)
 * and the trivial program, starts bench/upstream.ts for `proxy` and `run` to point at, and
 * measures. An empty MCPMGR_HOME, so `list` reads an empty store.
 */
export async function runStartupScenario(options: {
  readonly root: string;
  readonly runs: number;
  readonly warmup: number;
  readonly binary?: string;
  readonly startUpstream: () => Promise<{ url: string; stop: () => Promise<void> }>;
  readonly freePort: () => number;
}): Promise<StartupReport> {
  const scratch = mkdtempSync(join(tmpdir(), "mcpmgr-bench-startup-"));
  const trivial = await buildTrivialProgram();
  let upstream: { url: string; stop: () => Promise<void> } | undefined;
  try {
    let binary = options.binary;
    if (binary === undefined) {
      const build = Bun.spawnSync([process.execPath, "scripts/compile.ts", "--outdir", scratch], {
        cwd: options.root,
        stdout: "pipe",
        stderr: "pipe",
      });
      if (!build.success) throw new Error(`compiling mcpmgr failed: ${build.stderr.toString().trim()}`);
      binary = join(scratch, "mcpmgr");
    }
    upstream = await options.startUpstream();
    const home = join(scratch, "home");
    const env = { ...process.env, MCPMGR_HOME: home, NO_COLOR: "1" };
    const url = /^https?:\/\//;
    return await measureStartup({
      binary,
      trivial: trivial.path,
      runs: options.runs,
      warmup: options.warmup,
      env,
      cases: [
        { id: "version", argv: ["--version"], maxRatio: ONE_SHOT_RATIO },
        { id: "help", argv: ["--help"], maxRatio: ONE_SHOT_RATIO },
        { id: "list", argv: ["list"], maxRatio: ONE_SHOT_RATIO },
        { id: "registry-list", argv: ["registry", "list"], maxRatio: ONE_SHOT_RATIO },
        {
          id: "proxy",
          argv: ["proxy", "bench", "--target-uri", upstream.url, "--port", String(options.freePort())],
          label: "mcpmgr proxy NAME --target-uri URL (to its first output)",
          until: url,
          maxMs: FIRST_OUTPUT_MS,
        },
        {
          id: "run",
          argv: ["run", "--foreground", upstream.url, "--name", "bench", "--proxy-port", String(options.freePort())],
          label: "mcpmgr run --foreground URL (to its first output)",
          until: url,
          maxMs: FIRST_OUTPUT_MS,
        },
      ],
    });
  } finally {
    await upstream?.stop();
    trivial.cleanup();
    rmSync(scratch, { recursive: true, force: true });
  }
}
