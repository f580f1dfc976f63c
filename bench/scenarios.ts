/**
 * What `bun run bench` measures. Each entry starts whatever serves MCP and says which
 * process is "the subject" (its RSS is reported). Adding a scenario is adding an entry
 * here; compare it with others through `baseline`/`compare` and give it `targets`.
 *
 * Two families share the report:
 *   - HTTP in front of an HTTP upstream: direct, mcpmgr proxy, the naive Bun proxy;
 *   - stdio servers: driven directly over the pipe (the in-process baseline), through
 *     mcpmgr's stdio bridge (`mcpmgr run`), through supergateway.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type {
  adopt,
  Child,
  descendantsOf,
  freePort,
  SmapsRollup,
  spawnChild,
  waitForHttp,
  waitForMcp,
} from "./lib/proc.ts";

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
  waitForMcp: typeof waitForMcp;
  freePort: typeof freePort;
  descendantsOf: typeof descendantsOf;
  /** Kill this process (not started through `spawn`) if the bench stops early. */
  adopt: typeof adopt;
  smapsRollup(pid: number): SmapsRollup | undefined;
  /** The load generator's command for `load` at `concurrency`, with the run's duration and warm-up. */
  loadCommand(load: Load, concurrency: number): string[];
  /** `bun src/main.ts`, or what BENCH_PROXY_CMD says. */
  mcpmgrCommand(): string[];
  /** The compiled executable (BENCH_MCPMGR_BIN, or built once per bench run: bench/lib/compiled.ts). */
  mcpmgrBinary(): Promise<string>;
}

/** How the load is generated. */
export type Load =
  /**
   * bench/load.mjs (autocannon) POSTing tools/call to `url`. `sessions`: one MCP
   * session shared by every connection (default), or one session per connection
   * (N connections = N concurrent client sessions), or none: every call a 2026-07-28
   * stateless request (`stateless`).
   */
  | {
      readonly kind: "http";
      readonly url: string;
      readonly sessions?: "shared" | "per-connection" | "stateless";
      readonly headers?: Readonly<Record<string, string>>;
    }
  /**
   * bench/stdio-load.mjs, which spawns `server` itself and keeps N requests in flight
   * on its stdin/stdout. The spawned server is the subject (role "upstream").
   */
  | { readonly kind: "stdio"; readonly server: readonly string[] };

export interface Running {
  readonly load: Load;
  /**
   * The process under test: its RSS goes in the table. Absent for stdio loads (the load
   * generator starts it). Not necessarily one the bench spawned (nginx's worker).
   */
  readonly subject?: Pick<Child, "role" | "pid">;
  /** Every server process of the scenario (CPU time is reported per role: own CPU only). */
  readonly processes: readonly Child[];
  /**
   * Processes a server starts by itself: their CPU is summed under `role` (all live
   * descendants of `of` when the measured phase starts: a sandboxed stdio server, a
   * gateway's per-session servers).
   */
  readonly descendants?: readonly { readonly of: Child; readonly role: string }[];
  /** Facts about this run worth a line in the report (sandbox, peer settings, ...). */
  readonly notes?: readonly string[];
  /** In-process helpers the scenario started (authorization server, sinks): stopped with it. */
  readonly stop?: () => Promise<void>;
}

export type Target =
  /** p50 of this scenario minus p50 of the baseline, at `concurrency`, at most `maxMs`. */
  | { kind: "addedP50"; concurrency: number; maxMs: number; baseline?: string }
  /** req/s of this scenario divided by req/s of the baseline, at `concurrency`, at least `min`. */
  | { kind: "rpsRatio"; concurrency: number; min: number; baseline?: string }
  /** RSS of the subject at idle (ready, before any load) below `maxMiB`. */
  | { kind: "idleRss"; maxMiB: number };

export interface Scenario {
  readonly id: string;
  readonly title: string;
  /** id of the scenario this one is compared with (ratios; targets unless they name another). */
  readonly baseline?: string;
  /** Further scenarios it is compared with in the ratio table. */
  readonly compare?: readonly string[];
  readonly targets?: readonly Target[];
  /** Concurrencies it runs at (default 1 and 32); BENCH_CONCURRENCY overrides every scenario's. */
  readonly concurrencies?: readonly number[];
  start(h: Harness): Promise<Running>;
}

/** The bench's stdio echo server as a local Node project (bin: echo.mjs → bench/stdio-echo.mjs). */
const ECHO_PKG = "bench/stdio-echo-pkg";

/** The Node that runs stdio servers: the one `mcpmgr run npx://./local` picks (node on PATH). */
function nodeBinary(): string {
  const node = Bun.which("node");
  if (!node)
    throw new Error("node is not on PATH: the stdio scenarios run bench/stdio-echo.mjs with node, as mcpmgr does");
  return node;
}

/**
 * The echo server as a container image (bench/stdio-echo.mjs on the offline node base
 * image the tests build), tagged by content so it is built once.
 */
export async function echoImage(h: Harness): Promise<string> {
  const docker = (...args: string[]) => Bun.spawnSync(["docker", ...args], { stdout: "pipe", stderr: "pipe" });
  if (docker("info").exitCode !== 0)
    throw new Error(
      "no Docker engine answers `docker info`: leave bridge-container out (BENCH_SCENARIOS) or start dockerd",
    );
  const { ensureTestImages, NODE_BASE_IMAGE } = await import("../test/support/docker-images.ts");
  await ensureTestImages();
  const script = await Bun.file(join(h.root, "bench/stdio-echo.mjs")).text();
  const dockerfile = `FROM ${NODE_BASE_IMAGE}\nCOPY stdio-echo.mjs /app/stdio-echo.mjs\nENTRYPOINT ["node", "/app/stdio-echo.mjs"]\n`;
  const tag = `mcpmgr-bench/stdio-echo:${Bun.hash(dockerfile + script).toString(16)}`;
  if (docker("image", "inspect", tag).exitCode === 0) return tag;
  const dir = mkdtempSync(join(tmpdir(), "mcpmgr-bench-image-"));
  try {
    await Bun.write(join(dir, "Dockerfile"), dockerfile);
    await Bun.write(join(dir, "stdio-echo.mjs"), script);
    const built = docker("build", "-q", "-t", tag, dir);
    if (built.exitCode !== 0) throw new Error(`docker build of the echo image failed: ${built.stderr.toString()}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return tag;
}

/** `mcpmgr run --foreground URL [policy options]` in front of the bench upstream (the transparent forwarder). */
async function startRunRemote(
  h: Harness,
  name: string,
  up: { url: string; child: Running["processes"][number] },
  extra: string[],
  headers?: Record<string, string>,
): Promise<Running> {
  const port = h.freePort();
  const prefix = h.mcpmgrCommand();
  const args = ["run", "--foreground", up.url, "--name", name, "--proxy-port", String(port), ...extra];
  const run = h.spawn("run", [...prefix, ...args], { cwd: h.root });
  await h.waitForHttp(`http://127.0.0.1:${port}/health`, h.readyTimeoutMs, run);
  return {
    load: { kind: "http", url: `http://127.0.0.1:${port}/mcp`, ...(headers ? { headers } : {}) },
    subject: run,
    processes: [run, up.child],
    notes: [`\`${prefix.join(" ")} ${args.join(" ")}\``],
  };
}

/** The stdio scenarios run at 1 connection and at 16 concurrent client sessions. */
const STDIO_CONCURRENCIES = [1, 16] as const;

/**
 * `mcpmgr gateway bench` in front of one detached stdio echo workload, in a temporary MCPMGR_HOME;
 * `stateless`: the load is 2026-07-28 requests (no sessions) instead of one session per connection.
 */
async function startGatewayScenario(h: Harness, stateless: boolean): Promise<Running> {
  const prefix = h.mcpmgrCommand();
  // Its own MCPMGR_HOME: the group holds just this workload, run detached as users do.
  const home = mkdtempSync(join(tmpdir(), "mcpmgr-bench-gateway-"));
  const env = { MCPMGR_HOME: home, MCPMGR_RUNTIME: "process" };
  const sandboxed = Bun.which("bwrap") !== null;
  const runArgs = ["run", "--name", "bench-echo", "--group", "bench", `npx://./${ECHO_PKG}`];
  if (!sandboxed) runArgs.push("--insecure-allow-unsandboxed");
  const cleanup = async () => {
    Bun.spawnSync([...prefix, "rm", "bench-echo"], { cwd: h.root, env: { ...process.env, ...env } });
    rmSync(home, { recursive: true, force: true });
  };
  // `run --group` joins an existing group only, so the bench's group is created first.
  const group = Bun.spawnSync([...prefix, "group", "create", "bench"], {
    cwd: h.root,
    env: { ...process.env, ...env },
  });
  if (group.exitCode !== 0) {
    await cleanup();
    throw new Error(`mcpmgr group create bench failed: ${group.stderr.toString().trim()}`);
  }
  const run = Bun.spawnSync([...prefix, ...runArgs], { cwd: h.root, env: { ...process.env, ...env } });
  if (run.exitCode !== 0) {
    await cleanup();
    throw new Error(`mcpmgr ${runArgs.join(" ")} failed: ${run.stderr.toString().trim()}`);
  }
  const workloadUrl = run.stdout.toString().trim();
  const port = h.freePort();
  // when-needed: a group of one keeps the tool's own name (`echo`), which the load generator calls.
  const args = ["gateway", "bench", "--port", String(port), "--name-prefix", "when-needed"];
  const gateway = h.spawn("gateway", [...prefix, ...args], { cwd: h.root, env });
  const url = `http://127.0.0.1:${port}/mcp`;
  try {
    await h.waitForHttp(`http://127.0.0.1:${port}/health`, h.readyTimeoutMs, gateway);
    await h.waitForMcp(url, h.readyTimeoutMs, gateway);
  } catch (err) {
    await cleanup();
    throw new Error(
      `mcpmgr gateway not ready (limit ${h.readyTimeoutMs / 1000} s): ${(err as Error).message}\n    command: ${prefix.join(" ")} ${args.join(" ")}`,
    );
  }
  return {
    load: { kind: "http", url, sessions: stateless ? "stateless" : "per-connection" },
    subject: gateway,
    processes: [gateway],
    stop: cleanup,
    notes: [
      `\`${prefix.join(" ")} ${runArgs.join(" ")}\` (detached, at ${workloadUrl}), then \`${prefix.join(" ")} ${args.join(" ")}\``,
      stateless
        ? "2026-07-28 stateless tools/call, no session, with a vendor key in `_meta` as some AI clients send one: the gateway reaches the workload as a 2026-07-28 server over the one upstream connection of its (unauthenticated) caller; the workload's own processes (supervisor, bridge, server) run outside the bench's process tree and are not in the table"
        : "one gateway session per connection, each with its own upstream session to the workload; the workload's own processes (supervisor, bridge, server) run outside the bench's process tree and are not in the table",
      "compare with `bridge` (the same server behind `mcpmgr run --foreground`, no gateway): the difference is the gateway hop",
    ],
  };
}

export const scenarios: readonly Scenario[] = [
  {
    id: "direct",
    title: "direct → upstream",
    async start(h) {
      const up = await h.startUpstream();
      return { load: { kind: "http", url: up.url }, subject: up.child, processes: [up.child] };
    },
  },
  {
    id: "proxy",
    title: "mcpmgr proxy → upstream",
    baseline: "direct",
    compare: ["nginx", "naive-proxy", "bun-relay"],
    // Issue 15: keep up with nginx in front of the same upstream (a single worker, keep-alive
    // pool, no buffering), and add next to nothing to a lone session's latency.
    targets: [
      { kind: "addedP50", concurrency: 1, maxMs: 0.1 },
      { kind: "rpsRatio", concurrency: 1, min: 0.9, baseline: "nginx" },
      { kind: "rpsRatio", concurrency: 32, min: 0.9, baseline: "nginx" },
      { kind: "idleRss", maxMiB: 60 },
    ],
    async start(h) {
      const up = await h.startUpstream();
      const port = h.freePort();
      const prefix = h.mcpmgrCommand();
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
      return { load: { kind: "http", url }, subject: proxy, processes: [proxy, up.child] };
    },
  },
  {
    id: "proxy-oidc",
    title: "mcpmgr proxy --oidc-issuer (JWT checked per request) → upstream",
    baseline: "proxy",
    compare: ["direct"],
    async start(h) {
      const up = await h.startUpstream();
      // A real authorization server (oidc-provider, as in the tests) in the bench process.
      const { startAuthServer } = await import("../test/support/auth-server.ts");
      const auth = await startAuthServer({ accessTokenTtl: 3600 });
      const port = h.freePort();
      const prefix = h.mcpmgrCommand();
      const args = ["proxy", "bench", "--target-uri", up.url, "--port", String(port), ...auth.oidcArgs()];
      const proxy = h.spawn("proxy", [...prefix, ...args], { cwd: h.root });
      const token = await auth.token();
      await h.waitForHttp(`http://127.0.0.1:${port}/health`, h.readyTimeoutMs, proxy);
      return {
        stop: () => auth.stop(),
        load: { kind: "http", url: `http://127.0.0.1:${port}/mcp`, headers: { authorization: `Bearer ${token}` } },
        subject: proxy,
        processes: [proxy, up.child],
        notes: [
          "every request carries an RS256 JWT from oidc-provider; the proxy verifies signature, iss, aud and exp (jose, cached JWKS) before forwarding",
        ],
      };
    },
  },
  {
    id: "run-remote",
    title: "mcpmgr run URL (no policies) → upstream",
    baseline: "direct",
    async start(h) {
      const up = await h.startUpstream();
      // Scenarios run side by side, and a running foreground run's name is taken: one name each.
      return startRunRemote(h, "bench-remote", up, []);
    },
  },
  {
    id: "run-remote-policies",
    title: "mcpmgr run URL + OIDC, tools, Cedar, audit, OTel → upstream",
    baseline: "run-remote",
    compare: ["direct"],
    targets: [{ kind: "addedP50", concurrency: 1, maxMs: 0.2 }],
    async start(h) {
      const up = await h.startUpstream();
      const { startAuthServer } = await import("../test/support/auth-server.ts");
      const auth = await startAuthServer({ accessTokenTtl: 3600 });
      const dir = mkdtempSync(join(tmpdir(), "mcpmgr-bench-policies-"));
      await Bun.write(
        join(dir, "authz.json"),
        JSON.stringify({
          version: "1.0",
          type: "cedarv1",
          cedar: { policies: ["permit(principal, action, resource);"] },
        }),
      );
      await Bun.write(join(dir, "audit.json"), JSON.stringify({ logFile: join(dir, "audit.jsonl") }));
      // A collector that accepts and discards OTLP.
      const sink = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(null, { status: 200 }) });
      const args = [
        ...auth.oidcArgs(),
        "--tools",
        "echo",
        "--authz-config",
        join(dir, "authz.json"),
        "--audit-config",
        join(dir, "audit.json"),
        "--otel-endpoint",
        `http://127.0.0.1:${sink.port}`,
        "--otel-insecure",
      ];
      const running = await startRunRemote(h, "bench-remote-policies", up, args, {
        authorization: `Bearer ${await auth.token()}`,
      });
      return {
        ...running,
        async stop() {
          await sink.stop(true);
          await auth.stop();
          rmSync(dir, { recursive: true, force: true });
        },
        notes: [
          ...(running.notes ?? []),
          "policies: OIDC JWT check (jose; cached after the first request), --tools echo, Cedar permit-all (asked of the Cedar evaluator once, then remembered in the proxy), audit to a file, OTel spans at the default 10% sampling and metrics to a local sink; webhooks left out (each adds its own HTTPS round trip by design)",
        ],
      };
    },
  },
  {
    id: "naive-proxy",
    title: "naive Bun proxy (peer) → upstream",
    baseline: "direct",
    async start(h) {
      const up = await h.startUpstream();
      const proxy = h.spawn(
        "proxy",
        [h.bun, join(h.root, "bench/peers/naive-proxy.ts"), "--target", up.url, "--port", "0"],
        {
          cwd: h.root,
        },
      );
      const m = await proxy.waitForLine(/^READY (http:\/\/\S+)$/, h.readyTimeoutMs);
      return {
        load: { kind: "http", url: m[1] as string },
        subject: proxy,
        processes: [proxy, up.child],
        notes: ["Bun.serve + fetch, bodies buffered, no checks: the floor of a fetch-based proxy in Bun"],
      };
    },
  },
  {
    id: "bun-relay",
    title: "Bun TCP relay (peer, floor of a JavaScript proxy) → upstream",
    baseline: "direct",
    async start(h) {
      const up = await h.startUpstream();
      const relay = h.spawn(
        "proxy",
        [h.bun, join(h.root, "bench/peers/bun-relay.ts"), "--target", up.url, "--port", "0"],
        {
          cwd: h.root,
        },
      );
      const m = await relay.waitForLine(/^READY (http:\/\/\S+)$/, h.readyTimeoutMs);
      return {
        load: { kind: "http", url: m[1] as string },
        subject: relay,
        processes: [relay, up.child],
        notes: [
          "Bun.listen + Bun.connect, one upstream connection per client connection, bytes passed through unparsed: the floor of any proxy in JavaScript on Bun's sockets",
        ],
      };
    },
  },
  {
    id: "nginx",
    title: "nginx (peer) → upstream",
    baseline: "direct",
    async start(h) {
      const { ensureNginx, nginxVersion, writeNginxConf } = await import("./peers/nginx.ts");
      const nginx = ensureNginx();
      const up = await h.startUpstream();
      const port = h.freePort();
      const target = new URL(up.url);
      const conf = writeNginxConf({ port, upstream: target.host });
      try {
        const master = h.spawn("proxy", [nginx, "-c", conf.file, "-p", conf.dir], { cwd: conf.dir });
        await h.waitForHttp(`http://127.0.0.1:${port}/health`, h.readyTimeoutMs, master);
        // The one worker does the forwarding: it is the subject (RSS, threads); the master's
        // CPU (next to none) is counted with it.
        const worker = h.descendantsOf(master.pid)[0];
        if (worker === undefined) throw new Error("nginx started no worker process");
        return {
          load: { kind: "http", url: `http://127.0.0.1:${port}${target.pathname}` },
          subject: { role: "proxy", pid: worker },
          processes: [master, up.child],
          descendants: [{ of: master, role: "proxy" }],
          stop: async () => conf.cleanup(),
          notes: [
            `nginx ${nginxVersion(nginx)} (\`${nginx}\`; Debian's nginx-light, installed by the bench when missing): one worker, \`proxy_http_version 1.1\` with an upstream \`keepalive 64\` pool, \`proxy_buffering off\`, \`proxy_request_buffering off\`, access log off, listening on 127.0.0.1 (config: bench/peers/nginx.ts)`,
            "RSS is the worker's; CPU is master + worker",
          ],
        };
      } catch (err) {
        conf.cleanup();
        throw err;
      }
    },
  },
  {
    id: "stdio-direct",
    title: "stdio direct (in-process baseline)",
    concurrencies: STDIO_CONCURRENCIES,
    async start() {
      const server = [nodeBinary(), `${ECHO_PKG}/echo.mjs`];
      return {
        load: { kind: "stdio", server },
        processes: [],
        notes: [
          `bench/stdio-load.mjs spawns \`${server.join(" ")}\` and keeps N requests in flight on its stdin/stdout (no HTTP, no sandbox)`,
        ],
      };
    },
  },
  {
    id: "bridge",
    title: "mcpmgr run (stdio bridge)",
    baseline: "stdio-direct",
    compare: ["supergateway"],
    concurrencies: STDIO_CONCURRENCIES,
    targets: [
      { kind: "addedP50", concurrency: 1, maxMs: 0.3 },
      { kind: "rpsRatio", concurrency: 16, min: 3, baseline: "supergateway" },
    ],
    async start(h) {
      const port = h.freePort();
      const prefix = h.mcpmgrCommand();
      // The sandbox is what users get: bwrap when it is installed. Without it mcpmgr
      // refuses to start a local server unless told to run it unsandboxed.
      const sandboxed = Bun.which("bwrap") !== null;
      const args = [
        "run",
        "--foreground",
        "--name",
        "bench-stdio-echo",
        `npx://./${ECHO_PKG}`,
        "--proxy-port",
        String(port),
      ];
      if (!sandboxed) args.push("--insecure-allow-unsandboxed");
      // The process runtime explicitly: with a container engine up, detection would pick it.
      const bridge = h.spawn("bridge", [...prefix, ...args], { cwd: h.root, env: { MCPMGR_RUNTIME: "process" } });
      const command = `${prefix.join(" ")} ${args.join(" ")}`;
      try {
        // It prints the client URL on stdout; ready once an initialize POST succeeds.
        const m = await bridge.waitForLine(/^(http:\/\/\S+)$/, h.readyTimeoutMs);
        await h.waitForMcp(m[1] as string, h.readyTimeoutMs, bridge);
        return {
          load: { kind: "http", url: m[1] as string, sessions: "per-connection" },
          subject: bridge,
          processes: [bridge],
          descendants: [{ of: bridge, role: "upstream" }],
          notes: [
            `\`${command}\` (stdio server: \`node ${ECHO_PKG}/echo.mjs\`)`,
            sandboxed
              ? 'stdio server sandboxed by bubblewrap (mcpmgr\'s default, what users get); its bwrap processes and node are counted as "upstream"'
              : "bubblewrap is NOT installed: the stdio server runs unsandboxed (--insecure-allow-unsandboxed)",
            "one MCP session per connection (concurrency 16 = 16 client sessions multiplexed on the one stdio server)",
          ],
        };
      } catch (err) {
        throw new Error(
          `mcpmgr run not ready (limit ${h.readyTimeoutMs / 1000} s): ${(err as Error).message}\n    command: ${command}`,
        );
      }
    },
  },
  {
    id: "gateway",
    title: "mcpmgr gateway GROUP → one workload (stdio bridge)",
    baseline: "bridge",
    compare: ["stdio-direct"],
    concurrencies: STDIO_CONCURRENCIES,
    start: (h) => startGatewayScenario(h, false),
  },
  {
    id: "gateway-2026",
    title: "mcpmgr gateway GROUP → one workload, 2026-07-28 stateless calls",
    baseline: "bridge",
    compare: ["gateway"],
    concurrencies: STDIO_CONCURRENCIES,
    start: (h) => startGatewayScenario(h, true),
  },
  {
    id: "bridge-container",
    title: "mcpmgr run IMAGE (stdio bridge, Docker container)",
    baseline: "bridge",
    compare: ["stdio-direct"],
    concurrencies: STDIO_CONCURRENCIES,
    async start(h) {
      const image = await echoImage(h);
      const port = h.freePort();
      const prefix = h.mcpmgrCommand();
      const args = [
        "run",
        "--foreground",
        "--name",
        "bench-container-echo",
        image,
        "--proxy-port",
        String(port),
        "--image-verification",
        "disabled",
      ];
      const bridge = h.spawn("bridge", [...prefix, ...args], { cwd: h.root, env: { MCPMGR_RUNTIME: "docker" } });
      const command = `MCPMGR_RUNTIME=docker ${prefix.join(" ")} ${args.join(" ")}`;
      try {
        const m = await bridge.waitForLine(/^(http:\/\/\S+)$/, h.readyTimeoutMs);
        await h.waitForMcp(m[1] as string, h.readyTimeoutMs, bridge);
        return {
          load: { kind: "http", url: m[1] as string, sessions: "per-connection" },
          subject: bridge,
          processes: [bridge],
          notes: [
            `\`${command}\` (image: bench/stdio-echo.mjs on node, FROM the offline test base image; hardened: caps dropped, no-new-privileges, init, limits)`,
            "the container's node runs under dockerd/containerd, not as a child of mcpmgr: its CPU is not in the table",
            "one MCP session per connection, all multiplexed over the container's attached stdin/stdout",
          ],
        };
      } catch (err) {
        throw new Error(
          `mcpmgr run (container) not ready (limit ${h.readyTimeoutMs / 1000} s): ${(err as Error).message}\n    command: ${command}`,
        );
      }
    },
  },
  {
    id: "supergateway",
    title: "supergateway (stateful streamable-http, peer)",
    baseline: "stdio-direct",
    concurrencies: STDIO_CONCURRENCIES,
    async start(h) {
      const port = h.freePort();
      const node = nodeBinary();
      const entry = join(h.root, "node_modules/supergateway/dist/index.js");
      const stdio = `${node} ${join(h.root, ECHO_PKG, "echo.mjs")}`;
      // --logLevel none: its default (info) prints every message it relays, which
      // would slow it down; the peer gets its fastest setting. loopback-only.cjs makes
      // its `app.listen(port)` bind 127.0.0.1 instead of every interface.
      const cmd = [
        node,
        "--require",
        join(h.root, "bench/peers/loopback-only.cjs"),
        entry,
        "--stdio",
        stdio,
        "--outputTransport",
        "streamableHttp",
        "--stateful",
        "--port",
        String(port),
        "--logLevel",
        "none",
        "--healthEndpoint",
        "/healthz",
      ];
      const gateway = h.spawn("gateway", cmd, { cwd: h.root });
      const url = `http://127.0.0.1:${port}/mcp`;
      try {
        await h.waitForHttp(`http://127.0.0.1:${port}/healthz`, h.readyTimeoutMs, gateway);
        await h.waitForMcp(url, h.readyTimeoutMs, gateway);
      } catch (err) {
        throw new Error(
          `supergateway not ready (limit ${h.readyTimeoutMs / 1000} s): ${(err as Error).message}\n    command: ${cmd.join(" ")}`,
        );
      }
      let version = "?";
      try {
        version = (await Bun.file(join(h.root, "node_modules/supergateway/package.json")).json()).version;
      } catch {}
      return {
        load: { kind: "http", url, sessions: "per-connection" },
        subject: gateway,
        processes: [gateway],
        descendants: [{ of: gateway, role: "upstream" }],
        notes: [
          `supergateway ${version} on node: \`--stdio "node ${ECHO_PKG}/echo.mjs" --outputTransport streamableHttp --stateful --logLevel none\`, answers as text/event-stream`,
          'stateful mode spawns one stdio server (`sh -c` + node) per session: at concurrency 16 that is 16 servers, counted as "upstream"; no sandbox',
        ],
      };
    },
  },
];
