/**
 * The footprint scenario of `bun run bench`: what idle background workloads cost in memory
 * (issue 15). Five `mcpmgr run` workloads of a stdio server (bench/stdio-echo-pkg, sandboxed
 * like the `bridge` scenario), five of a remote URL (the bench upstream) and, when a Docker
 * engine answers, five of the echo server's container image run detached in a private
 * MCPMGR_HOME; once they are idle, each supervisor (the detached mcpmgr serving the proxy; the
 * MCP server it starts is a separate process and is not counted) is read from
 * /proc/PID/smaps_rollup: private memory (Private_Dirty + Swap: the heap, stacks, JIT code and
 * anything else written) is what the workload alone costs; Private_Clean (clean pages of the
 * executable only this process touched so far: the kernel drops and rereads them, and they
 * are shared as soon as another mcpmgr touches them) is reported beside it, not counted; Pss
 * shares the executable's pages among all processes mapping them, RSS counts them in full. Then one stdio workload serves 16 client sessions under load, its supervisor
 * read every 200 ms, right after and once it settled.
 *
 * Workloads with Cedar policies share one more process, the user's Cedar evaluator (`mcpmgr
 * __cedar-evaluator`, which holds the Cedar engine for all of them): each such workload is counted
 * as its supervisor plus its share of the evaluator (a fifth, with five running), and both are
 * reported apart too.
 *
 * Each form of mcpmgr is measured on its own (its workloads removed before the next): the
 * compiled executable, which is what users run (and whose supervisors share its pages), and
 * `bun src/main.ts`, how issue 15's starting point was measured.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SmapsRollup } from "./lib/proc.ts";
import { cedarEvaluatorPids } from "../test/support/processes.ts";
import { echoImage, type Harness } from "./scenarios.ts";

export interface FootprintGroup {
  /** What was measured, one line. */
  readonly title: string;
  /**
   * Idle workloads of one kind (checked against the target), the bridge under load, or a part of
   * an idle group reported apart (the Cedar evaluator, the supervisors without it).
   */
  readonly kind: "idle" | "load" | "part";
  /** Which workloads: stdio, remote or container (idle groups). */
  readonly workload?: "stdio" | "remote" | "cedar" | "container";
  /** One reading per process (supervisor). */
  readonly readings: readonly SmapsRollup[];
}

/** One form of mcpmgr (the compiled executable, or the source run by bun) and its readings. */
export interface FootprintForm {
  readonly id: FormId;
  readonly title: string;
  /** The command that ran mcpmgr. */
  readonly command: readonly string[];
  readonly groups: readonly FootprintGroup[];
}

export interface FootprintResult {
  readonly forms: readonly FootprintForm[];
  readonly notes: readonly string[];
}

export interface FootprintScenario {
  readonly id: string;
  readonly title: string;
  measure(h: Harness): Promise<FootprintResult>;
}

export type FormId = "compiled" | "source";

const WORKLOADS_PER_KIND = 5;
const BRIDGE_SESSIONS = 16;
/** After the last workload started: every supervisor has reported "running" and collected its start's garbage. */
const SETTLE_MS = 3_000;
/** After the load: what the bridge gives back on its own (JavaScriptCore's collector, the allocator). */
const AFTER_LOAD_MS = 10_000;

/** Issue 15: 39 MiB of private memory per idle workload when it was written (`bun src/main.ts`), at most 20 MiB wanted. */
export const ISSUE_START_MIB = 39;
export const TARGET_MIB = 20;

export const footprints: readonly FootprintScenario[] = [
  {
    id: "footprint",
    title: "idle background workloads and a bridge under 16 sessions (memory per supervisor)",
    measure,
  },
];

/** BENCH_FOOTPRINT_FORMS: which forms to measure (default both, the compiled executable first). */
function chosenForms(): FormId[] {
  const raw = process.env.BENCH_FOOTPRINT_FORMS?.trim();
  if (!raw) return ["compiled", "source"];
  const forms = raw.split(",").map((s) => s.trim());
  const unknown = forms.filter((f) => f !== "compiled" && f !== "source");
  if (unknown.length > 0 || forms.length === 0)
    throw new Error(`BENCH_FOOTPRINT_FORMS takes compiled and/or source, got ${JSON.stringify(raw)}`);
  return forms as FormId[];
}

async function measure(h: Harness): Promise<FootprintResult> {
  const forms = chosenForms();
  const up = await h.startUpstream();
  const notes: string[] = [];
  let image: string | undefined;
  try {
    image = await echoImage(h);
  } catch (err) {
    notes.push(`no container workloads: ${(err as Error).message.split("\n")[0]}`);
  }
  const measured: FootprintForm[] = [];
  for (const id of forms) {
    const command = id === "compiled" ? [await h.mcpmgrBinary()] : [h.bun, "src/main.ts"];
    process.stderr.write(`bench: footprint: ${id} (${command.join(" ")})\n`);
    measured.push(await measureForm(h, id, command, up.url, image));
  }
  const sandboxed = Bun.which("bwrap") !== null;
  return {
    forms: measured,
    notes: [
      `${WORKLOADS_PER_KIND} detached \`mcpmgr run\` workloads of each kind in a private MCPMGR_HOME (stdio: \`npx://./bench/stdio-echo-pkg\`, MCPMGR_RUNTIME=process, ${sandboxed ? "sandboxed by bubblewrap" : "unsandboxed: bwrap is not installed"}; remote: the bench upstream's URL; cedar: the stdio server with a two-policy \`--authz-config\`, each counted with its share of the one Cedar evaluator (\`mcpmgr __cedar-evaluator\`) that decides for all five${image ? `; container: \`${image}\` with MCPMGR_RUNTIME=docker` : ""}), read ${SETTLE_MS / 1000} s after the last one started`,
      "per supervisor process (the detached mcpmgr running the proxy or bridge), from /proc/PID/smaps_rollup; the MCP server it starts is a separate process (or a container) and is not counted",
      "private = Private_Dirty + Swap: memory written by this workload alone (its heap, stacks, JIT code; Anonymous, reported beside it, is nearly all of it); Private_Clean (file pages of the executable only this process has touched, which the kernel can drop and reread) is reported but not counted; Pss adds its share of pages shared with the other mcpmgr processes (the executable); RSS counts those in full",
      "each form runs on its own, its workloads removed before the next: the compiled executable's supervisors share its pages as users' do",
      ...notes,
    ],
  };
}

async function measureForm(
  h: Harness,
  id: FormId,
  prefix: readonly string[],
  remoteUrl: string,
  image: string | undefined,
): Promise<FootprintForm> {
  const home = mkdtempSync(join(tmpdir(), "mcpmgr-bench-footprint-"));
  const env = { MCPMGR_HOME: home, NO_COLOR: "1" };
  const sandboxed = Bun.which("bwrap") !== null;
  const names: string[] = [];
  // Container names are the engine's, shared with every other user of it: one run's names are its own.
  const run = Math.random().toString(36).slice(2, 6);

  /** Runs one mcpmgr command to completion; its stdout and stderr on failure. */
  const cli = async (args: string[], runtime = "process"): Promise<string> => {
    const child = h.spawn("cli", [...prefix, ...args], { cwd: h.root, env: { ...env, MCPMGR_RUNTIME: runtime } });
    const timeout = Bun.sleep(h.readyTimeoutMs * 3).then(() => "timeout" as const);
    const code = await Promise.race([child.proc.exited, timeout]);
    if (code === "timeout") {
      await child.stop();
      throw new Error(`mcpmgr ${args.join(" ")} did not finish in time:\n${child.output().slice(-2000)}`);
    }
    if (code !== 0) throw new Error(`mcpmgr ${args.join(" ")} failed (exit ${code}):\n${child.output().slice(-2000)}`);
    return child.output();
  };
  /** The supervisor's pid, from the workload's status file. */
  const supervisorOf = (name: string): number => {
    const status = JSON.parse(readFileSync(join(home, "state", "workloads", name, "status.json"), "utf8")) as {
      pid?: number;
    };
    if (status.pid === undefined) throw new Error(`workload ${name} has no supervisor pid`);
    h.adopt(status.pid);
    return status.pid;
  };
  const read = (pid: number, name: string): SmapsRollup => {
    const memory = h.smapsRollup(pid);
    if (memory === undefined) throw new Error(`the supervisor of ${name} (pid ${pid}) is gone`);
    return memory;
  };
  /** Starts WORKLOADS_PER_KIND workloads `prefix-1…`; returns their names and the first one's client URL. */
  const start = async (kind: string, args: string[], runtime?: string) => {
    const started: string[] = [];
    let url: string | undefined;
    for (let i = 1; i <= WORKLOADS_PER_KIND; i++) {
      const name = `bench-fp-${run}-${kind}-${i}`;
      names.push(name);
      const out = await cli(["run", ...args, "--name", name], runtime);
      url ??= out.match(/^(http:\/\/\S+)$/m)?.[1];
      started.push(name);
    }
    return { names: started, url };
  };

  try {
    const stdio = await start("stdio", [
      "npx://./bench/stdio-echo-pkg",
      ...(sandboxed ? [] : ["--insecure-allow-unsandboxed"]),
    ]);
    const remote = await start("remote", [remoteUrl]);
    // The same stdio server behind Cedar policies: the engine (WebAssembly) is what such a workload
    // loads on top, and it stays loaded, so it is measured on its own.
    const policies = join(home, "authz.json");
    writeFileSync(
      policies,
      JSON.stringify({
        version: "1.0",
        type: "cedarv1",
        cedar: {
          policies: [
            'permit(principal, action == Action::"call_tool", resource);',
            'forbid(principal, action, resource == Tool::"rm");',
          ],
          entities_json: "[]",
        },
      }),
    );
    const cedar = await start("cedar", [
      "npx://./bench/stdio-echo-pkg",
      "--authz-config",
      policies,
      ...(sandboxed ? [] : ["--insecure-allow-unsandboxed"]),
    ]);
    const container = image
      ? await start("container", [image, "--image-verification", "disabled"], "docker")
      : undefined;
    await Bun.sleep(SETTLE_MS);
    const idle = (names: readonly string[]) => names.map((name) => read(supervisorOf(name), name));
    const cedarSupervisors = idle(cedar.names);
    const evaluators = cedarEvaluators(home);
    for (const pid of evaluators) h.adopt(pid);
    const evaluatorReadings = evaluators.map((pid) => read(pid, "the Cedar evaluator"));
    const groups: FootprintGroup[] = [
      { title: "stdio workloads, idle", kind: "idle", workload: "stdio", readings: idle(stdio.names) },
      { title: "remote-URL workloads, idle", kind: "idle", workload: "remote", readings: idle(remote.names) },
      {
        title:
          evaluators.length > 0
            ? `stdio workloads with Cedar policies (\`--authz-config\`), idle: each supervisor plus 1/${cedar.names.length} of the Cedar evaluator`
            : "stdio workloads with Cedar policies (`--authz-config`), idle",
        kind: "idle",
        workload: "cedar",
        readings: cedarSupervisors.map((reading) => withShare(reading, evaluatorReadings, cedar.names.length)),
      },
    ];
    if (evaluators.length > 0)
      groups.push(
        { title: "… their supervisors alone", kind: "part", readings: cedarSupervisors },
        {
          title: `… the Cedar evaluator they share (${evaluators.length === 1 ? "one process" : `${evaluators.length} processes`})`,
          kind: "part",
          readings: evaluatorReadings,
        },
      );
    if (container) {
      groups.push({
        title: "container stdio workloads, idle",
        kind: "idle",
        workload: "container",
        readings: idle(container.names),
      });
    }

    // The first stdio workload serves 16 sessions (one per connection) under load.
    if (stdio.url === undefined) throw new Error("mcpmgr run did not print the workload's URL");
    const bridgeName = stdio.names[0] as string;
    const bridgePid = supervisorOf(bridgeName);
    let peak: SmapsRollup | undefined;
    let sampler: ReturnType<typeof setInterval> | undefined;
    const sample = () => {
      const now = h.smapsRollup(bridgePid);
      if (now && (peak === undefined || privateBytes(now) > privateBytes(peak))) peak = now;
    };
    const load = h.spawn(
      "loadgen",
      h.loadCommand({ kind: "http", url: stdio.url, sessions: "per-connection" }, BRIDGE_SESSIONS),
      {
        cwd: h.root,
        onStderrLine(line) {
          if (line === "PHASE measure") {
            sample();
            sampler = setInterval(sample, 200);
          } else if (line === "PHASE done") {
            sample();
            if (sampler) clearInterval(sampler);
          }
        },
      },
    );
    const code = await load.proc.exited;
    if (sampler) clearInterval(sampler);
    if (code !== 0 || peak === undefined) {
      throw new Error(`the load on ${bridgeName} failed (exit ${code}):\n${load.output().slice(-2000)}`);
    }
    const after = read(bridgePid, bridgeName);
    await Bun.sleep(AFTER_LOAD_MS);
    const settled = read(bridgePid, bridgeName);
    groups.push(
      {
        title: `a stdio workload with ${BRIDGE_SESSIONS} client sessions under load (peak sample)`,
        kind: "load",
        readings: [peak],
      },
      {
        title: `the same right after the load (${BRIDGE_SESSIONS} sessions still open)`,
        kind: "load",
        readings: [after],
      },
      { title: `the same ${AFTER_LOAD_MS / 1000} s later`, kind: "load", readings: [settled] },
    );
    return {
      id,
      title: id === "compiled" ? "compiled executable (what users run)" : "from source (`bun src/main.ts`)",
      command: prefix,
      groups,
    };
  } finally {
    for (const name of names) await cli(["rm", name]).catch(() => {});
    rmSync(home, { recursive: true, force: true });
  }
}

/**
 * The Cedar evaluators serving this home's workloads (`__cedar-evaluator SOCKET`, the socket under
 * the home), by their command lines: one when all is well.
 */
function cedarEvaluators(home: string): number[] {
  return cedarEvaluatorPids((socket) => socket.startsWith(`${home}/`));
}

/** A supervisor's reading with its share of the shared processes' (their sum divided among `among`). */
function withShare(own: SmapsRollup, shared: readonly SmapsRollup[], among: number): SmapsRollup {
  const share = (pick: (m: SmapsRollup) => number) => shared.reduce((sum, m) => sum + pick(m), 0) / among;
  return {
    rss: own.rss + share((m) => m.rss),
    pss: own.pss + share((m) => m.pss),
    privateClean: own.privateClean + share((m) => m.privateClean),
    privateDirty: own.privateDirty + share((m) => m.privateDirty),
    sharedClean: own.sharedClean + share((m) => m.sharedClean),
    sharedDirty: own.sharedDirty + share((m) => m.sharedDirty),
    swap: own.swap + share((m) => m.swap),
    anonymous: own.anonymous + share((m) => m.anonymous),
  };
}

export function privateBytes(m: SmapsRollup): number {
  return m.privateDirty + m.swap;
}

/** The issue's target, per idle group of the compiled executable: the worst supervisor at most TARGET_MIB. */
export function footprintVerdicts(result: FootprintResult): { group: string; maxMiB: number; met: boolean }[] {
  const compiled = result.forms.find((f) => f.id === "compiled");
  if (compiled === undefined) return [];
  return compiled.groups
    .filter((g) => g.kind === "idle" && g.readings.length > 0)
    .map((g) => {
      const maxMiB = Math.max(...g.readings.map(privateBytes)) / 2 ** 20;
      return { group: g.title, maxMiB, met: maxMiB <= TARGET_MIB };
    });
}
