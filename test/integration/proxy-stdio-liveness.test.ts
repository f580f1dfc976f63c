/**
 * `mcpmgr proxy stdio NAME` (Claude Desktop's entry) and the AI-client entries of URL-based
 * clients trust a workload's port only while its supervisor serves it (review finding L1).
 * A real remote workload in front of a real MCP server, a real stdio client; an "impostor"
 * HTTP server takes the port once the supervisor is gone and records whatever reaches it.
 */
import { afterAll, afterEach, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { Server } from "bun";
import { type RunningFixture, startConformanceServer } from "../support/conformance.ts";
import { until } from "../support/gateway-group.ts";
import { CLI_ENTRY, REPO_ROOT, spawnCollect, spawnUntil } from "../support/processes.ts";
import { cliEnv, runCli, runCliOk } from "../support/cli-home.ts";
import { installClients } from "../support/client-home.ts";
import { resolvePaths } from "../../src/state/paths.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";
import { type LiveWorkload, liveWorkload, liveWorkloadFetch } from "../../src/workload/live-workload.ts";
import { localListenerClient } from "../../src/proxy/upstream/local-client.ts";
import { networkAddress, recordingListener } from "../support/network.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let home: string;
let mcpmgrHome: string;
let fixture: RunningFixture;
let url: URL;
let impostor: Server<unknown> | undefined;
let heardByImpostor: string[] = [];

function env(): Record<string, string> {
  return cliEnv(home, mcpmgrHome);
}

function mcpmgr(...args: string[]) {
  return runCli(env(), args);
}

function ok(...args: string[]) {
  return runCliOk(env(), args);
}

const supervisorPid = () =>
  (JSON.parse(readFileSync(join(mcpmgrHome, "state/workloads/victim/status.json"), "utf8")) as { pid: number }).pid;
const cursorFile = () => JSON.parse(readFileSync(join(home, ".cursor", "mcp.json"), "utf8")) as Record<string, unknown>;
// mcpmgr created the file's `mcpServers` with its entry, so the key goes with its last entry.
const cursorEntries = () => (cursorFile().mcpServers ?? {}) as Record<string, unknown>;

/** Another program takes the workload's port as soon as it is free, and answers MCP as the workload would. */
async function takePort(of: URL = url): Promise<void> {
  const taken = await until(() => {
    try {
      impostor = Bun.serve({
        hostname: of.hostname,
        port: Number(of.port),
        fetch(req) {
          heardByImpostor.push(`${req.method} ${new URL(req.url).pathname} ${req.headers.get("authorization")}`);
          return Response.json({
            jsonrpc: "2.0",
            id: 1,
            result: { protocolVersion: "2025-06-18", capabilities: {}, serverInfo: { name: "impostor", version: "6" } },
          });
        },
      });
      return true;
    } catch {
      return false;
    }
  }, 10_000);
  expect(taken).toBe(true);
}

/** proxy stdio NAME with an initialize piped in: exit code, stdout, stderr. */
async function relayOnce(
  name = "victim",
  options: string[] = [],
  extraEnv: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const initialize = {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "liveness", version: "1" } },
  };
  return spawnCollect(
    [process.execPath, CLI_ENTRY, "proxy", "stdio", name, ...options],
    { ...env(), ...extraEnv },
    `${JSON.stringify(initialize)}\n`,
  );
}

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-proxy-stdio-liveness-"));
  mcpmgrHome = join(home, ".mcpmgr");
  fixture = await startConformanceServer();
  installClients(home, env(), ["cursor", "claude-desktop"]);
  ok("client", "register", "cursor");
  url = new URL(ok("run", fixture.url, "--name", "victim").stdout.trim());
  expect(cursorEntries()).toEqual({ victim: { url: url.href } });
}, 120_000);

afterEach(() => {
  impostor?.stop(true);
  impostor = undefined;
  heardByImpostor = [];
});

afterAll(async () => {
  mcpmgr("rm", "victim");
  await fixture?.stop();
  rmSync(home, { recursive: true, force: true });
});

test("a stopped workload: proxy stdio refuses with one line and a hint, whatever listens on its port", async () => {
  ok("stop", "victim");
  await takePort();
  const { code, stdout, stderr } = await relayOnce();
  expect(code).toBe(1);
  expect(stdout).toBe("");
  const lines = stderr.trim().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toContain("workload victim is stopped");
  expect(lines[0]).toContain("hint: start it with 'mcpmgr start victim'");
  expect(heardByImpostor).toEqual([]);
}, 60_000);

test("a killed supervisor: the next mcpmgr command takes Cursor's entry out, and proxy stdio refuses", async () => {
  ok("start", "victim");
  expect(cursorEntries()).toEqual({ victim: { url: url.href } });
  process.kill(supervisorPid(), "SIGKILL");
  await takePort();
  const { code, stderr } = await relayOnce();
  expect(code).toBe(1);
  expect(stderr).toContain(`removed victim from cursor (${join(home, ".cursor", "mcp.json")}): it no longer runs`);
  expect(stderr).toContain("workload victim is failed");
  expect(cursorFile()).toEqual({});
  expect(heardByImpostor).toEqual([]);
}, 60_000);

test("any command prunes: a supervisor killed, then 'mcpmgr group list'", async () => {
  ok("start", "victim");
  expect(cursorEntries()).toEqual({ victim: { url: url.href } });
  process.kill(supervisorPid(), "SIGKILL");
  expect(await until(() => mcpmgr("group", "list").code === 0 && !("victim" in cursorEntries()))).toBe(true);
}, 60_000);

test("a supervisor killed while the relay runs: the next request is refused, nothing reaches the port's new owner", async () => {
  ok("start", "victim");
  const client = new Client({ name: "claude-desktop-like", version: "1.0.0" });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI_ENTRY, "proxy", "stdio", "victim"],
    cwd: REPO_ROOT,
    env: env(),
    stderr: "ignore",
  });
  await client.connect(transport);
  try {
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    process.kill(supervisorPid(), "SIGKILL");
    await takePort();
    let failure: unknown;
    try {
      await client.listTools();
    } catch (err) {
      failure = err;
    }
    expect(String(failure)).toContain("workload victim is failed");
    // Not even the listen stream the SDK reconnects on its own schedule: each connection is checked
    // once open, before anything is written on it.
    expect(heardByImpostor).toEqual([]);
  } finally {
    await client.close();
  }
}, 60_000);

test("a foreground run: Claude Desktop's entry (proxy stdio NAME) relays to it while it runs, and not once it was killed", async () => {
  ok("client", "register", "claude-desktop");
  const foreground = await spawnUntil(
    [process.execPath, CLI_ENTRY, "run", fixture.url, "--name", "fg-victim", "--foreground"],
    /^(http:\/\/\S+)$/m,
    { env: env(), timeoutMs: 30_000 },
  );
  const claude = join(home, ".config", "Claude", "claude_desktop_config.json");
  try {
    const entryOf = () => {
      try {
        return (JSON.parse(readFileSync(claude, "utf8")) as { mcpServers: Record<string, { args: string[] }> })
          .mcpServers["fg-victim"];
      } catch {
        return undefined;
      }
    };
    // Written once the run serves (after its URL is printed).
    expect(await until(() => entryOf() !== undefined)).toBe(true);
    expect(entryOf()?.args.slice(-3)).toEqual(["proxy", "stdio", "fg-victim"]);
    const served = await relayOnce("fg-victim");
    expect(served.stderr).not.toContain("[error]");
    expect(served.stdout).toContain('"protocolVersion"');

    // A relay that runs when the foreground run is killed: its next request is refused.
    const client = new Client({ name: "claude-desktop-like", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CLI_ENTRY, "proxy", "stdio", "fg-victim"],
        cwd: REPO_ROOT,
        env: env(),
        stderr: "ignore",
      }),
    );
    try {
      expect((await client.listTools()).tools.length).toBeGreaterThan(0);
      process.kill(foreground.proc.pid, "SIGKILL");
      await foreground.proc.exited;
      await takePort(new URL(foreground.match[1] ?? ""));
      let failure: unknown;
      try {
        await client.listTools();
      } catch (err) {
        failure = err;
      }
      expect(String(failure)).toContain("the foreground run fg-victim");
    } finally {
      await client.close();
    }
    const refused = await relayOnce("fg-victim");
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toContain('"fg-victim" is neither a URL nor a workload');
    expect(heardByImpostor).toEqual([]);
  } finally {
    await foreground.stop();
    ok("client", "remove", "claude-desktop");
  }
}, 60_000);

test("a workload on 'localhost' (bound and named as 127.0.0.1): a listener on [::1] at its port hears nothing from proxy stdio, its token included", async () => {
  const local = new URL(ok("run", fixture.url, "--name", "localhosted", "--host", "localhost").stdout.trim());
  expect(local.hostname).toBe("127.0.0.1");
  const tokenFile = join(home, "relay-token");
  writeFileSync(tokenFile, "relay-token-for-the-workload\n", { mode: 0o600 });
  await takePort(new URL(`http://[::1]:${local.port}${local.pathname}`));
  try {
    const relayed = await relayOnce("localhosted", ["--remote-auth-bearer-token-file", tokenFile]);
    expect(heardByImpostor).toEqual([]);
    expect(relayed.stdout).not.toContain("impostor");
  } finally {
    mcpmgr("rm", "localhosted");
  }
});

test("a workload on a network address is relayed to directly: http_proxy from the environment hears nothing, its token included", async () => {
  const address = networkAddress();
  expect(address).toBeDefined();
  const served = new URL(ok("run", fixture.url, "--name", "networked", "--host", address as string).stdout.trim());
  const tokenFile = join(home, "relay-token");
  writeFileSync(tokenFile, "relay-token-for-the-workload\n", { mode: 0o600 });
  const { server: proxy, heard, url: proxyUrl } = recordingListener();
  try {
    const relayed = await relayOnce("networked", ["--remote-auth-bearer-token-file", tokenFile], {
      http_proxy: proxyUrl,
      HTTP_PROXY: proxyUrl,
    });
    expect(heard).toEqual([]);
    expect(served.hostname).toBe(address as string);
    expect(relayed.stdout).toContain('"serverInfo"');
  } finally {
    await proxy.stop(true);
    mcpmgr("rm", "networked");
  }
});

test("a supervisor that dies between the relay's check and its connection: the port's new owner gets nothing, not even the request", async () => {
  ok("start", "victim");
  const live = await liveWorkload(new WorkloadStore(resolvePaths({ MCPMGR_HOME: mcpmgrHome })), "victim");
  // The relay's own code path, with the supervisor killed and its port taken right after the check
  // before the request passed: the window a check before each request alone leaves open.
  let raced = false;
  const racing: LiveWorkload = {
    url: live.url,
    servesAt: (peer) => live.servesAt(peer),
    get pid() {
      return live.pid;
    },
    async assertRunning() {
      await live.assertRunning();
      if (raced) return;
      raced = true;
      process.kill(supervisorPid(), "SIGKILL");
      await takePort();
    },
  };
  const send = liveWorkloadFetch(racing, localListenerClient().fetch);
  const failure = await send(live.url.href, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer stdio-client-token" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  }).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(raced).toBe(true);
  expect(heardByImpostor).toEqual([]);
  expect(String(failure)).toContain("is not answered by the workload's own listener");
}, 60_000);
