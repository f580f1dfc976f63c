/**
 * What `bun run bench` measures. Each entry starts whatever serves MCP at some URL
 * and says which process is "the subject" (its RSS is reported). Adding a scenario
 * (stdio bridge, a peer such as supergateway, ...) is adding an entry here; compare
 * it to another one with `baseline` and give it `targets` if it has any.
 */
import { type Child, freePort, spawnChild, waitForHttp } from "./lib/proc.ts";

export interface Harness {
  /** Repository root (cwd for `bun src/main.ts`). */
  readonly root: string;
  /** The bun executable running the bench. */
  readonly bun: string;
  /** How long a server may take to become ready, ms (BENCH_READY_TIMEOUT, default 10 s). */
  readonly readyTimeoutMs: number;
  /** A fresh bench/upstream.ts on a free port. */
  startUpstream(): Promise<{ url: string; child: Child }>;
  spawn: typeof spawnChild;
  waitForHttp: typeof waitForHttp;
  freePort: typeof freePort;
}

export interface Running {
  /** The MCP endpoint the load generator talks to. */
  readonly url: string;
  /** The process under test: its RSS goes in the table. */
  readonly subject: Child;
  /** Every server process of the scenario (CPU time is reported per role). */
  readonly processes: readonly Child[];
}

export type Target =
  /** p50 of this scenario minus p50 of the baseline, at `concurrency`, at most `maxMs`. */
  | { kind: "addedP50"; concurrency: number; maxMs: number }
  /** req/s of this scenario divided by req/s of the baseline, at `concurrency`, at least `min`. */
  | { kind: "rpsRatio"; concurrency: number; min: number }
  /** RSS of the subject at idle (ready, before any load) below `maxMiB`. */
  | { kind: "idleRss"; maxMiB: number };

export interface Scenario {
  readonly id: string;
  readonly title: string;
  /** id of the scenario this one is compared with (ratios, targets). */
  readonly baseline?: string;
  readonly targets?: readonly Target[];
  start(h: Harness): Promise<Running>;
}

export const scenarios: readonly Scenario[] = [
  {
    id: "direct",
    title: "direct → upstream",
    async start(h) {
      const up = await h.startUpstream();
      return { url: up.url, subject: up.child, processes: [up.child] };
    },
  },
  {
    id: "proxy",
    title: "mcpmgr proxy → upstream",
    baseline: "direct",
    targets: [
      { kind: "addedP50", concurrency: 1, maxMs: 0.25 },
      { kind: "rpsRatio", concurrency: 32, min: 0.7 },
      { kind: "idleRss", maxMiB: 60 },
    ],
    async start(h) {
      const up = await h.startUpstream();
      const port = h.freePort();
      // BENCH_PROXY_CMD replaces `bun src/main.ts`, e.g. with a compiled binary.
      const prefix = process.env.BENCH_PROXY_CMD?.trim().split(/\s+/) ?? [h.bun, "src/main.ts"];
      const proxy = h.spawn("proxy", [...prefix, "proxy", "bench", "--target-uri", up.url, "--port", String(port)], {
        cwd: h.root,
      });
      try {
        await h.waitForHttp(`http://127.0.0.1:${port}/health`, h.readyTimeoutMs, proxy);
      } catch (err) {
        throw new Error(
          `mcpmgr proxy not ready (limit ${h.readyTimeoutMs / 1000} s): ${(err as Error).message}\n` +
            `    command: ${prefix.join(" ")} proxy bench --target-uri ${up.url} --port ${port}; readiness: GET /health = 200`,
        );
      }
      // The client URL has the target's path on the proxy's origin.
      const url = `http://127.0.0.1:${port}${new URL(up.url).pathname}`;
      return { url, subject: proxy, processes: [proxy, up.child] };
    },
  },
];
