/**
 * The footprint scenario of `bun run bench`: what idle background workloads cost in memory.
 * Five `mcpmgr run` workloads of a stdio server (bench/stdio-echo-pkg, sandboxed like the
 * `bridge` scenario) and five of a remote URL (the bench upstream) run detached, in a
 * private MCPMGR_HOME; once they are idle, each supervisor (the detached mcpmgr serving the
 * proxy; the MCP server it starts is a separate process and is not counted) is read from
 * /proc/PID/smaps_rollup: private memory (Private_Clean + Private_Dirty) is what the
 * workload alone costs, Pss shares the Bun binary's pages among all processes mapping
 * them, RSS counts them in full. Then one stdio workload serves 16 client sessions under
 * load, its supervisor read every 200 ms.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SmapsRollup } from "./lib/proc.ts";
import type { Harness } from "./scenarios.ts";

export interface FootprintGroup {
  /** What was measured, one line. */
  readonly title: string;
  /** One reading per process (supervisor). */
  readonly readings: readonly SmapsRollup[];
}

export interface FootprintResult {
  readonly groups: readonly FootprintGroup[];
  readonly notes: readonly string[];
}

export interface FootprintScenario {
  readonly id: string;
  readonly title: string;
  measure(h: Harness): Promise<FootprintResult>;
}

const WORKLOADS_PER_KIND = 5;
const BRIDGE_SESSIONS = 16;
/** After the last workload started: startup garbage has time to be collected. */
const SETTLE_MS = 3_000;

export const footprints: readonly FootprintScenario[] = [
  {
    id: "footprint",
    title: "idle background workloads and a bridge under 16 sessions (memory per supervisor)",
    measure,
  },
];

async function measure(h: Harness): Promise<FootprintResult> {
  const home = mkdtempSync(join(tmpdir(), "mcpmgr-bench-footprint-"));
  // Process runtime explicitly: with a container engine up, detection could pick it.
  const env = { MCPMGR_HOME: home, MCPMGR_RUNTIME: "process", NO_COLOR: "1" };
  const prefix = h.mcpmgrCommand();
  const sandboxed = Bun.which("bwrap") !== null;
  const names: string[] = [];

  /** Runs one mcpmgr command to completion; its stdout and stderr on failure. */
  const cli = async (args: string[]): Promise<string> => {
    const child = h.spawn("cli", [...prefix, ...args], { cwd: h.root, env });
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

  try {
    const up = await h.startUpstream();
    const stdioNames: string[] = [];
    const remoteNames: string[] = [];
    let bridgeUrl: string | undefined;
    for (let i = 1; i <= WORKLOADS_PER_KIND; i++) {
      const name = `bench-fp-stdio-${i}`;
      names.push(name);
      const out = await cli([
        "run",
        "npx://./bench/stdio-echo-pkg",
        "--name",
        name,
        ...(sandboxed ? [] : ["--insecure-allow-unsandboxed"]),
      ]);
      bridgeUrl ??= out.match(/^(http:\/\/\S+)$/m)?.[1];
      stdioNames.push(name);
    }
    for (let i = 1; i <= WORKLOADS_PER_KIND; i++) {
      const name = `bench-fp-remote-${i}`;
      names.push(name);
      await cli(["run", up.url, "--name", name]);
      remoteNames.push(name);
    }
    await Bun.sleep(SETTLE_MS);
    const stdioIdle = stdioNames.map((name) => read(supervisorOf(name), name));
    const remoteIdle = remoteNames.map((name) => read(supervisorOf(name), name));

    // The first stdio workload serves 16 sessions (one per connection) under load.
    if (bridgeUrl === undefined) throw new Error("mcpmgr run did not print the workload's URL");
    const bridgeName = stdioNames[0] as string;
    const bridgePid = supervisorOf(bridgeName);
    let peak: SmapsRollup | undefined;
    let sampler: ReturnType<typeof setInterval> | undefined;
    const sample = () => {
      const now = h.smapsRollup(bridgePid);
      if (now && (peak === undefined || privateBytes(now) > privateBytes(peak))) peak = now;
    };
    const load = h.spawn(
      "loadgen",
      h.loadCommand({ kind: "http", url: bridgeUrl, sessions: "per-connection" }, BRIDGE_SESSIONS),
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

    const server = sandboxed ? "bwrap + node, not counted" : "node, unsandboxed, not counted";
    return {
      groups: [
        { title: `stdio workloads (npx://./bench/stdio-echo-pkg; server: ${server}), idle`, readings: stdioIdle },
        { title: "remote-URL workloads (bench upstream), idle", readings: remoteIdle },
        { title: `stdio workload with ${BRIDGE_SESSIONS} client sessions under load (peak sample)`, readings: [peak] },
        { title: `the same right after the ${BRIDGE_SESSIONS} sessions ended`, readings: [after] },
      ],
      notes: [
        `${WORKLOADS_PER_KIND} + ${WORKLOADS_PER_KIND} detached \`${prefix.join(" ")} run …\` workloads in a private MCPMGR_HOME, MCPMGR_RUNTIME=process; read ${SETTLE_MS / 1000} s after the last one started`,
        "per supervisor process (the detached mcpmgr running the proxy or bridge), from /proc/PID/smaps_rollup; the MCP server it starts is a separate process and is not counted",
        "private = Private_Clean + Private_Dirty: memory only this workload uses; Pss adds its share of pages shared with the other mcpmgr processes (the Bun binary); RSS counts those in full",
      ],
    };
  } finally {
    for (const name of names) await cli(["rm", name]).catch(() => {});
    rmSync(home, { recursive: true, force: true });
  }
}

export function privateBytes(m: SmapsRollup): number {
  return m.privateClean + m.privateDirty;
}
