/**
 * Workload lifecycle with the process runtime, as a user drives it: `run` (detached),
 * `list`, `logs`, `stop`, `start`, `restart`, `export`, `run --from-config`, `rm`,
 * crash restarts and a supervisor that died. Every test uses its own MCPMGR_HOME.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CONFORMANCE_FIXTURE_2026 } from "../support/conformance.ts";
import { CLI_ENTRY, followLogs, freePort, isAlive, REPO_ROOT } from "../support/processes.ts";
import { postInitialize } from "../support/raw-session.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const PROBE = "npx://./test/fixtures/sandbox-probe";
let home: string;

function mcpmgr(...args: string[]) {
  const result = Bun.spawnSync([process.execPath, CLI_ENTRY, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
    timeout: 120_000,
  });
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

interface Row {
  name: string;
  status: string;
  group: string;
  url: string;
  restarts: number;
  lastError?: string;
}
const list = (): Row[] => JSON.parse(mcpmgr("list", "--format", "json").stdout) as Row[];
const row = (name: string) => list().find((r) => r.name === name);

async function echoEnv(url: string): Promise<string | undefined> {
  const client = new Client({ name: "workload-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    const result = (await client.callTool({ name: "env", arguments: { name: "PROBE_MODE" } })) as {
      content: { text: string }[];
    };
    return result.content[0]?.text;
  } finally {
    await client.close();
  }
}

async function until(predicate: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate() && Date.now() < deadline) await Bun.sleep(100);
  expect(predicate()).toBe(true);
}

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), "mcpmgr-workloads-"));
});

afterAll(async () => {
  for (const r of list()) mcpmgr("rm", r.name);
  await rm(home, { recursive: true, force: true });
});

describe("a detached workload", () => {
  let url: string;

  test("run returns once the proxy answers, and prints the URL", async () => {
    expect(mcpmgr("group", "create", "team-a").code).toBe(0);
    const started = mcpmgr("run", PROBE, "--name", "probe", "-e", "PROBE_MODE=detached", "--group", "team-a");
    expect(started.code).toBe(0);
    url = started.stdout.trim();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(await echoEnv(url)).toBe("detached");
    expect(row("probe")).toMatchObject({ status: "running", url, restarts: 0, group: "team-a" });
    expect(mcpmgr("list").stdout).toMatch(/probe\s+running\s+http/);
    expect(mcpmgr("list", "--group", "other", "--format", "json").stdout.trim()).toBe("[]");
    const inGroup = JSON.parse(mcpmgr("list", "--group", "team-a", "--format", "json").stdout) as Row[];
    expect(inGroup.map((r) => r.name)).toEqual(["probe"]);
  }, 60_000);

  test("a second workload with the same name is refused, before anything is prepared for it", () => {
    const again = mcpmgr("run", PROBE, "--name", "probe");
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain("already exists");
    // Refused first: no grant summary (nor image pull, build or secret prompt) for a run that cannot happen.
    expect(again.stderr).not.toContain("probe gets");
    expect(again.stderr.trim().split("\n")).toHaveLength(1);
  });

  test("logs show the server's stderr; --proxy shows the proxy's", async () => {
    // The supervisor copies both into its log files as they come: polled, not read once.
    await until(() => mcpmgr("logs", "probe").stdout.includes("sandbox-probe ready"));
    await until(() => mcpmgr("logs", "probe", "--proxy").stdout.includes("probe running at"));
  });

  test("a crashed server is restarted on the same port and the count is visible", async () => {
    const client = new Client({ name: "crasher", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    await client.callTool({ name: "crash", arguments: {} }).catch(() => {});
    await client.close().catch(() => {});
    await until(() => (row("probe")?.restarts ?? 0) >= 1 && row("probe")?.status === "running");
    expect(await echoEnv(url)).toBe("detached");
  }, 60_000);

  test("while a crashed server restarts, its port stays held and answers 503 with Retry-After", async () => {
    const port = Number(new URL(url).port);
    const before = row("probe")?.restarts ?? 0;
    const client = new Client({ name: "crasher", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    await client.callTool({ name: "crash", arguments: {} }).catch(() => {});
    await client.close().catch(() => {});
    const seen: string[] = [];
    let portTaken = false;
    let restarting: { retryAfter: string | null; body: { error?: { message: string } } } | undefined;
    let rebound: { status: number; text: string } | undefined;
    for (let i = 0; i < 600; i++) {
      const response = await postInitialize(url, "poll").catch(() => undefined);
      seen.push(response === undefined ? "refused" : String(response.status));
      if (response?.status === 503 && response.headers.get("retry-after") !== null && restarting === undefined) {
        restarting = {
          retryAfter: response.headers.get("retry-after"),
          body: (await response.json()) as { error?: { message: string } },
        };
        // The listener kept while the server restarts has the endpoint's Host guard (S12): a page
        // whose name was rebound to this machine does not even learn the workload's name.
        const probe = await fetch(url, { method: "POST", headers: { host: `rebind.attacker.example:${port}` } });
        rebound = { status: probe.status, text: await probe.text() };
        // Nobody else can take the port meanwhile.
        try {
          Bun.listen({ hostname: "127.0.0.1", port, socket: { data() {} } }).stop(true);
        } catch {
          portTaken = true;
        }
      } else await response?.body?.cancel();
      if (restarting !== undefined && response?.status === 200 && (row("probe")?.restarts ?? 0) > before) break;
      await Bun.sleep(50);
    }
    expect(seen).not.toContain("refused");
    expect(restarting?.body.error?.message).toContain("restarting");
    expect(Number(restarting?.retryAfter)).toBeGreaterThan(0);
    expect(rebound?.status).toBe(403);
    expect(rebound?.text).not.toContain("probe");
    expect(portTaken).toBe(true);
    expect(seen.at(-1)).toBe("200");
    expect(await echoEnv(url)).toBe("detached");
  }, 60_000);

  test("stop, start and restart keep the URL", async () => {
    expect(mcpmgr("stop", "probe").code).toBe(0);
    expect(row("probe")?.status).toBe("stopped");
    expect(
      await fetch(url, { method: "POST", body: "{}" }).then(
        () => "answered",
        () => "refused",
      ),
    ).toBe("refused");
    const started = mcpmgr("start", "probe");
    expect(started.code).toBe(0);
    expect(started.stdout.trim()).toBe(url);
    expect(await echoEnv(url)).toBe("detached");
    // Started again while it runs: nothing changes, and the URL is printed all the same (scripts).
    const again = mcpmgr("start", "probe");
    expect(again.code).toBe(0);
    expect(again.stderr).toContain("probe is already running");
    expect(again.stdout.trim()).toBe(url);
    expect(mcpmgr("restart", "probe").stdout.trim()).toBe(url);
    expect(await echoEnv(url)).toBe("detached");
  }, 60_000);

  test("export, rm and run --from-config recreate the same workload", async () => {
    const file = join(home, "probe-export.json");
    expect(mcpmgr("export", "probe", file).code).toBe(0);
    const exported = (await Bun.file(file).json()) as { name: string; group: string; env: Record<string, string> };
    expect(exported.name).toBe("probe");
    expect(exported.group).toBe("team-a");
    expect(exported.env).toEqual({ PROBE_MODE: "detached" });
    expect(mcpmgr("rm", "probe").code).toBe(0);
    expect(row("probe")).toBeUndefined();
    const recreated = mcpmgr("run", "--from-config", file);
    expect(recreated.code).toBe(0);
    expect(recreated.stdout.trim()).toBe(url);
    expect(row("probe")?.group).toBe("team-a");
    expect(await echoEnv(url)).toBe("detached");
  }, 60_000);

  test("a supervisor killed behind our back shows as failed", async () => {
    const status = (await Bun.file(join(home, "state/workloads/probe/status.json")).json()) as { pid: number };
    process.kill(status.pid, "SIGKILL");
    await until(() => row("probe")?.status === "failed");
    expect(row("probe")?.lastError).toContain("no longer running");
    expect(mcpmgr("rm", "probe").code).toBe(0);
    expect(list()).toEqual([]);
  }, 30_000);
});

test("run --group refuses a group that does not exist, before anything is created", () => {
  const refused = mcpmgr("run", PROBE, "--name", "orphan", "--group", "no-such-group");
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("no group named no-such-group");
  expect(refused.stderr).toContain("mcpmgr group create no-such-group");
  expect(row("orphan")).toBeUndefined();
});

test("a server that fails to start is reported with its output, and nothing is kept", () => {
  const result = mcpmgr("run", "npx://./test/fixtures/exits-early");
  expect(result.code).toBe(1);
  // The error line keeps its hint; the server's own words follow it, indented.
  expect(result.stderr).toMatch(
    /^\[error\] exits-early failed to start: exits-early did not complete the MCP handshake: the MCP server exited with code 3 \(hint: [^\n]*\)\n {2}fatal: MY_API_KEY is not set$/m,
  );
  expect(result.stdout).toBe("");
  expect(list().find((r) => r.name === "exits-early")).toBeUndefined();
}, 60_000);

test("a package the sandbox must fetch with no network: it fails at once, and the hint says why, not 'check the package name'", () => {
  // Without a network npm is told to work offline (sandbox-launch.ts): before, it retried for over a minute.
  const started = performance.now();
  const result = mcpmgr(
    "run",
    "npx://mcpmgr-test-never-published@1.0.0",
    "--name",
    "offline-pkg",
    "--permission-profile",
    "none",
  );
  expect(performance.now() - started).toBeLessThan(30_000);
  expect(result.stderr).toContain("npm error code ENOTCACHED");
  expect(result.code).toBe(1);
  expect(result.stderr).toContain("fetches it inside the sandbox"); // the warning before the start
  const errors = result.stderr.split("\n").filter((line) => line.startsWith("[error]"));
  expect(errors).toHaveLength(1);
  expect(errors[0]).toContain("offline-pkg did not complete the MCP handshake");
  expect(errors[0]).toContain("npx had no network to fetch the package");
  expect(errors[0]).toContain("--permission-profile network");
  expect(errors[0]).not.toContain("check the package name");
  expect(list().find((r) => r.name === "offline-pkg")).toBeUndefined();
}, 60_000);

test("Ctrl-C while a background run waits for its first start stops the supervisor and keeps nothing", async () => {
  // A package npm keeps trying to fetch (the profile gives the sandbox no network, and npm is told to try
  // online all the same, over mcpmgr's offline default): the start takes a minute.
  const run = Bun.spawn(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      "npx://mcpmgr-test-never-published@1.0.0",
      "--name",
      "interrupted",
      "--permission-profile",
      "none",
      "-e",
      "npm_config_offline=false",
    ],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  // Waiting on its supervisor: the workload is recorded and the supervisor has said who it is.
  const statusFile = join(home, "state/workloads/interrupted/status.json");
  let supervisor: number | undefined;
  await until(() => {
    supervisor = (JSON.parse(readFileSyncOr(statusFile) ?? "{}") as { pid?: number }).pid;
    return supervisor !== undefined;
  });
  run.kill("SIGINT");
  expect(await run.exited).toBe(130);
  const stderr = await new Response(run.stderr).text();
  expect(stderr).toContain("SIGINT: stopped interrupted while it was starting; the workload was not kept");
  expect(stderr).not.toContain("[error]");
  expect(row("interrupted")).toBeUndefined();
  // SIGKILL, when it came to that, is sent without waiting for the process to be gone (nor reaped).
  await until(() => !isAlive(supervisor as number), 10_000);
  expect(isAlive(supervisor as number)).toBe(false);
}, 60_000);

/** Pids of processes whose command line holds `marker` (the sandboxed server and its bwrap), other than `except`. */
function processesWith(marker: string, except: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === except) continue;
    const cmdline = readFileSyncOr(`/proc/${pid}/cmdline`);
    if (cmdline?.split("\0").includes(marker)) pids.push(pid);
  }
  return pids;
}

describe("a workload stopped or removed while its server is still starting", () => {
  /** A background run of the probe that answers its handshake only after two minutes; run's process and the marker. */
  async function slowRun(name: string) {
    const marker = `slow-${name}-${process.pid}-${Date.now()}`;
    const run = Bun.spawn(
      [process.execPath, CLI_ENTRY, "run", PROBE, "--name", name, "--", "--slow-start", "120000", marker],
      { cwd: REPO_ROOT, env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home }, stdout: "pipe", stderr: "pipe" },
    );
    // The server is up and in its handshake: the start is under way.
    await until(() => processesWith(marker, run.pid).length > 0);
    // The supervisor's pid is in the status once `run` has written it, which a busy machine may
    // delay past the moment the supervisor's own server is up.
    const statusFile = join(home, `state/workloads/${name}/status.json`);
    let supervisor: number | undefined;
    await until(() => {
      supervisor = (JSON.parse(readFileSyncOr(statusFile) ?? "{}") as { pid?: number }).pid;
      return supervisor !== undefined;
    });
    return { run, marker, supervisor: supervisor as number };
  }

  test("stop returns within seconds, stops the server and the supervisor, and leaves it stopped", async () => {
    const { run, marker, supervisor } = await slowRun("slow-stop");
    const before = performance.now();
    const stopped = mcpmgr("stop", "slow-stop");
    const took = performance.now() - before;
    expect(stopped.code).toBe(0);
    // Without an abortable start, stop waited for the 15 s SIGKILL.
    expect(took).toBeLessThan(6_000);
    // Gone once reaped: until `run` (its parent, still waiting) reaps it, an exited supervisor is a zombie.
    await until(() => !isAlive(supervisor), 5_000);
    await until(() => processesWith(marker, run.pid).length === 0, 5_000);
    expect(row("slow-stop")?.status).toBe("stopped");
    // The run waiting for it says what happened; the workload stays, stopped, as stop said.
    expect(await run.exited).toBe(1);
    const stderr = await new Response(run.stderr).text();
    expect(stderr).toContain("slow-stop was stopped while it was starting");
    expect(stderr).toContain("mcpmgr start slow-stop");
    // Later tests count the workloads.
    expect(mcpmgr("rm", "slow-stop").code).toBe(0);
  }, 60_000);

  test("a closed terminal (SIGHUP) while a background run waits for its first start leaves the workload starting on", async () => {
    const marker = `slow-hangup-${process.pid}-${Date.now()}`;
    const run = Bun.spawn(
      [process.execPath, CLI_ENTRY, "run", PROBE, "--name", "slow-hangup", "--", "--slow-start", "1500", marker],
      { cwd: REPO_ROOT, env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home }, stdout: "pipe", stderr: "pipe" },
    );
    await until(() => processesWith(marker, run.pid).length > 0);
    run.kill("SIGHUP");
    expect(await run.exited).toBe(129);
    expect(await new Response(run.stderr).text()).not.toContain("the workload was not kept");
    // Its supervisor carries on: the server answers its handshake late, and the workload runs.
    await until(() => row("slow-hangup")?.status === "running", 30_000);
    expect(mcpmgr("rm", "slow-hangup").code).toBe(0);
  }, 60_000);

  test("rm returns within seconds and keeps nothing", async () => {
    const { run, marker, supervisor } = await slowRun("slow-rm");
    const before = performance.now();
    expect(mcpmgr("rm", "slow-rm").code).toBe(0);
    expect(performance.now() - before).toBeLessThan(6_000);
    // Gone once reaped: until `run` (its parent, still waiting) reaps it, an exited supervisor is a zombie.
    await until(() => !isAlive(supervisor), 5_000);
    await until(() => processesWith(marker, run.pid).length === 0, 5_000);
    expect(row("slow-rm")).toBeUndefined();
    expect(await run.exited).toBe(1);
    // Which it says depends on whether its poll saw the short "stopped" before the record went: both are true.
    expect(await new Response(run.stderr).text()).toMatch(/slow-rm was (stopped|removed) while it was starting/);
    expect(existsSync(join(home, "state/workloads/slow-rm"))).toBe(false);
  }, 60_000);

  test("restart from elsewhere while run waits leaves the new start alone: run neither fails it nor forgets the workload", async () => {
    const { run, supervisor } = await slowRun("slow-restart");
    const statusFile = join(home, "state/workloads/slow-restart/status.json");
    const status = () => JSON.parse(readFileSyncOr(statusFile) ?? "{}") as { state?: string; pid?: number };
    // The waiting run is not scheduled (a busy machine) while the restart stops its supervisor and starts
    // another: it never sees the short "stopped" between them, only the new start.
    process.kill(run.pid, "SIGSTOP");
    const restart = Bun.spawn([process.execPath, CLI_ENTRY, "restart", "slow-restart"], {
      cwd: REPO_ROOT,
      env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
      stdout: "pipe",
      stderr: "pipe",
    });
    try {
      await until(() => status().state === "starting" && status().pid !== undefined && status().pid !== supervisor);
    } finally {
      process.kill(run.pid, "SIGCONT");
    }
    const successor = status().pid as number;
    expect(await run.exited).toBe(1);
    expect(await new Response(run.stderr).text()).toContain(
      "slow-restart was restarted elsewhere while it was starting",
    );
    // The new start is left to the restart, which reports it; the workload is still recorded.
    expect(row("slow-restart")).toBeDefined();
    expect(isAlive(successor)).toBe(true);
    expect(mcpmgr("rm", "slow-restart").code).toBe(0);
    await restart.exited;
    await until(() => !isAlive(successor), 10_000);
  }, 60_000);
});

test("two restarts of one workload at once: the one whose start the other replaced waits for it, and both succeed", async () => {
  const name = "twice";
  const marker = `slow-${name}-${process.pid}-${Date.now()}`;
  // Each start of it takes 3 s to answer its handshake: long enough for the second restart to come in.
  expect(mcpmgr("run", PROBE, "--name", name, "--", "--slow-start", "3000", marker).code).toBe(0);
  const statusFile = join(home, `state/workloads/${name}/status.json`);
  const status = () => JSON.parse(readFileSyncOr(statusFile) ?? "{}") as { state?: string; pid?: number };
  const first = status().pid as number;
  const restart = () =>
    Bun.spawn([process.execPath, CLI_ENTRY, "restart", name], {
      cwd: REPO_ROOT,
      env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
      stdout: "pipe",
      stderr: "pipe",
    });
  const a = restart();
  await until(() => status().state === "starting" && status().pid !== undefined && status().pid !== first);
  const ofA = status().pid as number;
  // A is not scheduled (a busy machine) while B stops A's supervisor and starts its own.
  process.kill(a.pid, "SIGSTOP");
  const b = restart();
  try {
    await until(() => status().pid !== undefined && status().pid !== ofA && status().pid !== first);
  } finally {
    process.kill(a.pid, "SIGCONT");
  }
  const ofB = status().pid as number;
  const [codeA, errA, codeB, errB] = await Promise.all([
    a.exited,
    new Response(a.stderr).text(),
    b.exited,
    new Response(b.stderr).text(),
  ]);
  expect([codeB, errB]).toEqual([0, expect.stringContaining(`${name} is running; MCP clients connect to:`)]);
  expect([codeA, errA]).toEqual([
    0,
    `[info] ${name} was restarted elsewhere while it was starting; waiting for that start\n` +
      `[info] ${name} was started by another mcpmgr command at the same moment; MCP clients connect to:\n`,
  ]);
  expect(row(name)?.status).toBe("running");
  expect(status().pid).toBe(ofB);
  expect([isAlive(ofA), isAlive(ofB)]).toEqual([false, true]);
  expect(mcpmgr("rm", name).code).toBe(0);
}, 60_000);

function readFileSyncOr(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

test("a background run on a port another program holds says to choose another port, and nothing is kept", async () => {
  const busy = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("taken") });
  try {
    const result = mcpmgr("run", PROBE, "--name", "port-taken", "--proxy-port", String(busy.port));
    expect(result.code).toBe(1);
    // The grant summary comes first; the failure is one [error] line.
    const errors = result.stderr.split("\n").filter((line) => line.startsWith("[error]"));
    expect(errors).toHaveLength(1);
    const line = errors[0] ?? "";
    expect(line).toContain(`port ${busy.port} on 127.0.0.1 is already in use`);
    // The supervisor's own hint, as the foreground form gives it, not the generic "fix the command".
    expect(line).toContain("hint: choose another port, or leave the port option out");
    expect(line).toContain("the workload was not kept");
    expect(row("port-taken")).toBeUndefined();
  } finally {
    busy.stop(true);
  }
}, 60_000);

test("a background HTTP server that speaks only MCP 2026-07-28 (no initialize) is confirmed as answering, and runs", async () => {
  const project = await mkdtemp(join(tmpdir(), "mcpmgr-modern-only-"));
  try {
    await writeFile(
      join(project, "server.sh"),
      `#!/bin/sh\nexec ${process.execPath} ${CONFORMANCE_FIXTURE_2026} "$@"\n`,
    );
    await writeFile(
      join(project, "package.json"),
      JSON.stringify({ name: "modern-only", version: "1.0.0", bin: { "modern-only": "server.sh" } }),
    );
    const port = String(await freePort());
    const result = mcpmgr(
      "run",
      `npx://${project}`,
      "--name",
      "modern-only",
      "--transport",
      "streamable-http",
      "--target-port",
      port,
      "--",
      "http",
      "--port",
      port,
      "--modern-only",
    );
    expect(result.stderr).not.toContain("[error]");
    expect(result.code).toBe(0);
    expect(row("modern-only")?.status).toBe("running");
    const discovered = await fetch(result.stdout.trim(), {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "server/discover",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "server/discover",
        params: {
          _meta: {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
          },
        },
      }),
    });
    expect(await discovered.json()).toMatchObject({ result: { supportedVersions: ["2026-07-28"] } });
  } finally {
    mcpmgr("rm", "modern-only");
    await rm(project, { recursive: true, force: true });
  }
}, 120_000);

test("two runs at once both succeed, on different ports", async () => {
  const run = (name: string) =>
    Bun.spawn([process.execPath, CLI_ENTRY, "run", PROBE, "--name", name], {
      cwd: REPO_ROOT,
      env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
      stdout: "pipe",
      stderr: "pipe",
    });
  const [a, b] = [run("twin-a"), run("twin-b")];
  const [urlA, urlB] = await Promise.all([new Response(a.stdout).text(), new Response(b.stdout).text()]);
  expect(await a.exited).toBe(0);
  expect(await b.exited).toBe(0);
  expect(urlA.trim()).not.toBe(urlB.trim());
  expect(list().map((r) => r.status)).toEqual(["running", "running"]);
  mcpmgr("rm", "twin-a");
  mcpmgr("rm", "twin-b");
}, 60_000);

test("secret values never reach the workload's log, even when the server prints them", async () => {
  const env = {
    ...process.env,
    NO_COLOR: "1",
    MCPMGR_HOME: home,
    MCPMGR_SECRETS_PROVIDER: "environment",
    MCPMGR_SECRET_PROBE_KEY: "sup3r-secret-value",
  };
  const started = Bun.spawnSync(
    [process.execPath, CLI_ENTRY, "run", PROBE, "--name", "secretive", "--secret", "probe-key,target=PROBE_KEY"],
    { cwd: REPO_ROOT, env },
  );
  expect(started.exitCode).toBe(0);
  const client = new Client({ name: "secret-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(started.stdout.toString().trim())));
  await client.callTool({ name: "log_env", arguments: { name: "PROBE_KEY" } });
  await client.close();
  // The supervisor writes the server's output to the workload log as it comes.
  let logs = "";
  await until(() => (logs = mcpmgr("logs", "secretive").stdout).includes("PROBE_KEY="));
  expect(logs).toContain("PROBE_KEY=***");
  expect(logs).not.toContain("sup3r-secret-value");
  const record = await Bun.file(join(home, "state/workloads/secretive/workload.json")).text();
  expect(record).not.toContain("sup3r-secret-value");
  expect(mcpmgr("rm", "secretive").code).toBe(0);
}, 60_000);

test("control characters a server writes reach the logs escaped, never raw", async () => {
  const hostile = "\u001b]0;pwned\u0007\u001b[2Jshown\rhidden\u202eevil";
  const started = mcpmgr("run", PROBE, "--name", "noisy", "-e", `PROBE_ESC=${hostile}`);
  expect(started.code).toBe(0);
  const client = new Client({ name: "escape-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(started.stdout.trim())));
  // To stderr (the workload log), and to stdout, where the bridge logs and skips it (the proxy log).
  await client.callTool({ name: "log_env", arguments: { name: "PROBE_ESC" } });
  await client.callTool({ name: "print_env", arguments: { name: "PROBE_ESC" } });
  await client.close();
  let logs = "";
  await until(() => (logs = mcpmgr("logs", "noisy").stdout).includes("PROBE_ESC="));
  let proxyLogs = "";
  await until(() => (proxyLogs = mcpmgr("logs", "noisy", "--proxy").stdout).includes("non-JSON line"));
  for (const text of [logs, proxyLogs]) {
    expect(text).toContain("PROBE_ESC=\\x1b]0;pwned\\x07\\x1b[2Jshown\\x0dhidden\\u202eevil");
    expect(text).not.toMatch(/[\u0007\u001b\r\u202e]/);
  }
  expect(mcpmgr("rm", "noisy").code).toBe(0);
}, 60_000);

test("a server's last words cannot pass for mcpmgr's login prompt: run never shows a URL it wrote", async () => {
  // A server that answers the handshake and, at once, writes mcpmgr's login prompt (a line that
  // looks like the supervisor's own, then a URL of its choosing) on stderr and exits: the
  // supervisor logs why it exited with those words while `run` still watches its log.
  const fake = "2026-01-01T00:00:00.000Z [info] Authorize mcpmgr at:\nhttps://login.evil.example/authorize\n";
  const volume = await mkdtemp(join(tmpdir(), "mcpmgr-phisher-"));
  const started = mcpmgr(
    "run",
    PROBE,
    "--name",
    "phisher",
    "-v",
    `${volume}:/state`,
    "--",
    "--crash-after-initialize",
    JSON.stringify(`Authorize mcpmgr at:\nhttps://login.evil.example/authorize\n${fake}`),
    "/state/crashed",
  );
  // It crashed once while `run` watched: after the supervisor's first report (the restart answers,
  // and run succeeds), or, when the machine is busy, before it (the first start fails, and run
  // reports it with the server's output as its details) or during run's own handshake (run reports
  // that the server does not answer MCP). Either way the words are never shown as
  // mcpmgr's login prompt: no prompt line of run's own, and no line that is the URL alone.
  expect(existsSync(join(volume, "crashed"))).toBe(true);
  expect(started.stderr).not.toMatch(/^(\S+ )?\[info\] Authorize mcpmgr at:$/m);
  expect(started.stderr).not.toMatch(/^https:\/\/login\.evil/m);
  if (started.code !== 0) {
    expect(started.code).toBe(1);
    // Quoted as the server's output, each line indented below the failure; or, when the crash
    // met run's own handshake (the proxy answering 503 while the server restarts), not quoted.
    if (!started.stderr.includes("does not answer MCP"))
      expect(started.stderr).toContain("\n  https://login.evil.example/authorize");
    expect(row("phisher")).toBeUndefined();
    await rm(volume, { recursive: true, force: true });
    return;
  }
  expect(started.stderr).not.toContain("login.evil.example");
  expect(started.stderr).not.toContain("Authorize mcpmgr at:");
  // The words are in the proxy log, each line of the server's indented below the supervisor's warning.
  let proxyLogs = "";
  await until(() => (proxyLogs = mcpmgr("logs", "phisher", "--proxy").stdout).includes("login.evil.example"));
  // The crash's line says when the restart is, before the output it quotes.
  expect(proxyLogs).toMatch(
    /phisher: the MCP server exited with code \d+; restarting in [\d.]+ m?s; its last output:\n {2}sandbox-probe ready/,
  );
  expect(proxyLogs).toContain("\n  Authorize mcpmgr at:\n  https://login.evil.example/authorize\n");
  expect(proxyLogs).not.toMatch(/^https:\/\/login\.evil/m);
  expect(proxyLogs).not.toMatch(/^2026-01-01T00:00:00\.000Z/m);
  expect(mcpmgr("rm", "phisher").code).toBe(0);
  await rm(volume, { recursive: true, force: true });
}, 60_000);

test("a restart that fails is in the proxy log with the server's last output below it, as its hint says", async () => {
  const volume = await mkdtemp(join(tmpdir(), "mcpmgr-refusing-"));
  const started = mcpmgr(
    "run",
    PROBE,
    "--name",
    "refusing",
    "-v",
    `${volume}:/state`,
    "--",
    "--refuse-start-if",
    "/state/broken",
  );
  try {
    expect(started.code).toBe(0);
    const url = started.stdout.trim();
    const client = new Client({ name: "workload-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    await client.callTool({ name: "write_file", arguments: { path: "/state/broken", text: "x" } });
    await client.callTool({ name: "crash", arguments: {} }).catch(() => undefined);
    await client.close().catch(() => undefined);
    let proxyLogs = "";
    await until(() => (proxyLogs = mcpmgr("logs", "refusing", "--proxy").stdout).includes("restarting failed"));
    // The warning's hint points below it, and the server's words are there, indented as the CLI shows them.
    expect(proxyLogs).toMatch(
      /refusing: restarting failed: [^\n]*the server's last output below[^\n]*; trying again in [^\n]*\n {2}sandbox-probe: refusing to start, \/state\/broken is there\n/,
    );
    // The crash before it says when that restart was due, as the failed restart says when the next one is.
    expect(proxyLogs).toMatch(
      /refusing: the MCP server exited with code \d+; restarting in 1 s(; its last output:)?\n/,
    );
  } finally {
    mcpmgr("rm", "refusing");
    await rm(volume, { recursive: true, force: true });
  }
}, 60_000);

test("a remote URL is a workload too: detached, listed with the remote runtime, stopped and removed", async () => {
  const { startConformanceServer } = await import("../support/conformance.ts");
  const fixture = await startConformanceServer();
  try {
    const started = mcpmgr("run", fixture.url, "--name", "remote-one");
    expect(started.code).toBe(0);
    const url = started.stdout.trim();
    expect(new URL(url).pathname).toBe("/mcp");
    expect(row("remote-one")).toMatchObject({ status: "running", url });
    expect((list().find((r) => r.name === "remote-one") as Row & { runtime: string }).runtime).toBe("remote");
    const client = new Client({ name: "remote-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await client.close();
    expect(mcpmgr("stop", "remote-one").code).toBe(0);
    expect(mcpmgr("rm", "remote-one").code).toBe(0);
  } finally {
    await fixture.stop();
  }
}, 60_000);

test("a secret printed on stdout is redacted in the proxy's log too", async () => {
  const env = {
    ...process.env,
    NO_COLOR: "1",
    MCPMGR_HOME: home,
    MCPMGR_SECRETS_PROVIDER: "environment",
    MCPMGR_SECRET_PROBE_KEY: "st0ut-secret-value",
  };
  const started = Bun.spawnSync(
    [process.execPath, CLI_ENTRY, "run", PROBE, "--name", "chatty", "--secret", "probe-key,target=PROBE_KEY"],
    { cwd: REPO_ROOT, env, timeout: 60_000 },
  );
  expect(started.exitCode).toBe(0);
  const client = new Client({ name: "stdout-secret-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(started.stdout.toString().trim())));
  await client.callTool({ name: "print_env", arguments: { name: "PROBE_KEY" } });
  await client.close();
  await until(() => mcpmgr("logs", "chatty", "--proxy").stdout.includes("PROBE_KEY="));
  const proxyLog = mcpmgr("logs", "chatty", "--proxy").stdout;
  expect(proxyLog).toContain("PROBE_KEY=***");
  expect(proxyLog).not.toContain("st0ut-secret-value");
  expect(mcpmgr("rm", "chatty").code).toBe(0);
}, 60_000);

test("logs -f follows the log as it grows, and ends once the workload is removed", async () => {
  expect(mcpmgr("run", PROBE, "--name", "followed").code).toBe(0);
  const follower = followLogs(home, ["followed", "--proxy"]);
  await until(() => follower.text().includes("followed running at"));
  expect(mcpmgr("restart", "followed").code).toBe(0);
  // Written after the follower's first read: it came through the follow loop.
  await until(() => follower.text().split("followed running at").length > 2);
  expect(mcpmgr("rm", "followed").code).toBe(0);
  expect(await follower.end()).toBe(0);
  expect(await new Response(follower.stderr).text()).toContain("followed was removed");
}, 60_000);

test("a workload whose working directory was removed fails to start saying so, and list shows it failed", async () => {
  const project = join(home, "project-gone");
  await mkdir(project);
  const runFrom = (cwd: string, ...args: string[]) => {
    const result = Bun.spawnSync([process.execPath, CLI_ENTRY, ...args], {
      cwd,
      env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
      timeout: 60_000,
    });
    return { code: result.exitCode, stderr: result.stderr.toString() };
  };
  // A remote: nothing in it needs the directory, but the record keeps it like every other.
  expect(runFrom(project, "run", "http://127.0.0.1:9/mcp", "--name", "moved").code).toBe(0);
  expect(mcpmgr("stop", "moved").code).toBe(0);
  await rm(project, { recursive: true });
  const started = mcpmgr("start", "moved");
  expect(started.code).toBe(1);
  expect(started.stderr).toContain(`moved failed to start: its working directory ${project} is gone (ENOENT)`);
  // The way out is the hint, not words folded into the message after a generic hint.
  expect(started.stderr).toContain("(hint: create the directory again, or remove the workload");
  // Not "starting" for ever: nothing serves it.
  expect(row("moved")).toMatchObject({ status: "failed" });
  expect(mcpmgr("rm", "moved").code).toBe(0);
}, 60_000);

test("--from-config refuses options it would ignore", () => {
  const result = mcpmgr("run", "--from-config", join(home, "whatever.json"), "--proxy-port", "9999");
  expect(result.code).toBe(2);
  expect(result.stderr).toContain("--proxy-port would be ignored");
});

test("run --from-config runs an export on the runtime it ran on, not on what this shell would detect", async () => {
  expect(mcpmgr("run", PROBE, "--name", "replayed", "-e", "PROBE_MODE=replayed").code).toBe(0);
  const file = join(home, "replayed.json");
  expect(mcpmgr("export", "replayed", file).code).toBe(0);
  expect(((await Bun.file(file).json()) as { runtime: string }).runtime).toBe("process");
  expect(mcpmgr("rm", "replayed").code).toBe(0);
  // Another shell: a Docker engine answers (the tests need one) and MCPMGR_RUNTIME is not set there,
  // or names another runtime.
  const { MCPMGR_RUNTIME: _, ...shell } = process.env;
  const replay = (env: Record<string, string | undefined>) => {
    const result = Bun.spawnSync([process.execPath, CLI_ENTRY, "run", "--from-config", file], {
      cwd: REPO_ROOT,
      env: { ...env, NO_COLOR: "1", MCPMGR_HOME: home },
      timeout: 120_000,
    });
    return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
  };
  const conflicting = replay({ ...shell, MCPMGR_RUNTIME: "docker" });
  expect(conflicting.code).toBe(2);
  expect(conflicting.stderr).toContain("ran with the process runtime, but MCPMGR_RUNTIME=docker");
  expect(row("replayed")).toBeUndefined();
  const again = replay(shell);
  expect(again.code).toBe(0);
  expect(row("replayed") as Row & { runtime: string }).toMatchObject({ status: "running", runtime: "process" });
  expect(await echoEnv(again.stdout.trim())).toBe("replayed");
  // Its supervisor's restarts keep it there too.
  expect(mcpmgr("restart", "replayed").code).toBe(0);
  expect(row("replayed") as Row & { runtime: string }).toMatchObject({ status: "running", runtime: "process" });
  expect(mcpmgr("rm", "replayed").code).toBe(0);
}, 120_000);

test("a recorded pid that now belongs to another process is neither trusted nor signalled", async () => {
  const started = mcpmgr("run", PROBE, "--name", "reused");
  expect(started.code).toBe(0);
  expect(mcpmgr("stop", "reused").code).toBe(0);
  // As after a reboot: the status names a pid that some unrelated process now has.
  const stranger = Bun.spawn(["sleep", "30"]);
  try {
    const statusFile = join(home, "state/workloads/reused/status.json");
    const status = (await Bun.file(statusFile).json()) as Record<string, unknown>;
    await Bun.write(statusFile, JSON.stringify({ ...status, state: "running", pid: stranger.pid }));
    expect(row("reused")?.status).toBe("failed");
    expect(mcpmgr("stop", "reused").code).toBe(0);
    expect(stranger.exitCode).toBeNull();
    expect(stranger.signalCode).toBeNull();
  } finally {
    stranger.kill();
    mcpmgr("rm", "reused");
  }
}, 60_000);
