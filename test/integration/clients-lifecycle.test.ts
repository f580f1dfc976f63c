/**
 * AI clients following a group's workloads through their whole lifecycle, as a user drives it:
 * two real stdio servers (the bridge probe fixture as an npx package) run as workloads of one
 * group, in subprocesses with a temporary HOME (where Cursor, VS Code, Claude Code and Codex
 * keep their files) and MCPMGR_HOME. The files follow run, stop, start, a supervisor's restart
 * after a crash, rm, a foreground run, a killed supervisor, `client register`/`remove` and
 * `group rm --with-workloads`; a background gateway is listed, registered with --gateway (one
 * entry, through which a real SDK client calls a tool of each workload), stopped, exported,
 * removed and recreated.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { PROBE_FIXTURE, until } from "../support/gateway-group.ts";
import { CLI_ENTRY, spawnUntil, untilZombie } from "../support/processes.ts";
import { cliEnv, runCli, runCliOk } from "../support/cli-home.ts";
import { installClients } from "../support/client-home.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let home: string;
let mcpmgrHome: string;
let packageDir: string;
let probe: string;
const urls: Record<string, string> = {};

function env(): Record<string, string> {
  return cliEnv(home, mcpmgrHome);
}

/** The foreground run of the probe, `fg` in group `team`, the tests below start. */
function foregroundRun(): string[] {
  return [
    process.execPath,
    CLI_ENTRY,
    "run",
    probe,
    "--foreground",
    "--name",
    "fg",
    "--group",
    "team",
    "--permission-profile",
    "none",
  ];
}

function mcpmgr(...args: string[]) {
  return runCli(env(), args);
}

function ok(...args: string[]) {
  return runCliOk(env(), args);
}

function run(name: string): string {
  const url = ok("run", probe, "--name", name, "--group", "team", "--permission-profile", "none").stdout.trim();
  urls[name] = url;
  return url;
}

const cursorFile = () => join(home, ".cursor", "mcp.json");
const vscodeFile = () => join(home, ".config", "Code", "User", "mcp.json");
const claudeCodeFile = () => join(home, ".claude.json");
const readJson = (path: string) => JSON.parse(readFileSync(path, "utf8")) as Record<string, Record<string, unknown>>;
const cursor = () => readJson(cursorFile()).mcpServers ?? {};
const vscode = () => readJson(vscodeFile()).servers ?? {};
const claudeCode = () => readJson(claudeCodeFile()).mcpServers ?? {};

interface Row {
  name: string;
  status: string;
  url: string;
  group: string;
  runtime: string;
  source: string;
  restarts: number;
}
const list = () => JSON.parse(ok("list", "--format", "json").stdout) as Row[];
const row = (name: string) => list().find((r) => r.name === name);

async function connect(url: string): Promise<Client> {
  const client = new Client({ name: "clients-lifecycle", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

function text(result: unknown): string {
  return ((result as CallToolResult).content[0] as { text: string }).text;
}

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-clients-lifecycle-"));
  mcpmgrHome = join(home, ".mcpmgr");
  packageDir = await mkdtemp(join(tmpdir(), "mcpmgr-clients-lifecycle-pkg-"));
  await writeFile(join(packageDir, "server.sh"), `#!/bin/sh\nexec ${process.execPath} ${PROBE_FIXTURE} "$@"\n`);
  await writeFile(
    join(packageDir, "package.json"),
    JSON.stringify({ name: "lifecycle-fixture", version: "1.0.0", bin: { "lifecycle-fixture": "server.sh" } }),
  );
  probe = `npx://${packageDir}`;
  installClients(home, env(), ["cursor", "vscode", "claude-code", "codex"]);
  ok("group", "create", "team");
});

afterAll(() => {
  for (const r of JSON.parse(mcpmgr("list", "--format", "json").stdout || "[]") as Row[]) mcpmgr("rm", r.name);
  rmSync(home, { recursive: true, force: true });
  rmSync(packageDir, { recursive: true, force: true });
});

describe("registration files follow the workloads of the group", () => {
  test("clients registered before anything runs get each workload as run starts it, with its URL and transport", () => {
    for (const client of ["cursor", "vscode", "claude-code"]) ok("client", "register", client, "--group", "team");
    const started = mcpmgr("run", probe, "--name", "alpha", "--group", "team", "--permission-profile", "none");
    expect({ code: started.code, stderr: started.stderr }).toMatchObject({ code: 0 }); // (shows stderr if not)
    urls.alpha = started.stdout.trim();
    expect(started.stderr).toContain(`alpha is in the AI clients following group team: cursor (${cursorFile()})`);
    run("beta");
    expect(cursor()).toEqual({ alpha: { url: urls.alpha }, beta: { url: urls.beta } });
    expect(vscode()).toEqual({
      alpha: { type: "http", url: urls.alpha },
      beta: { type: "http", url: urls.beta },
    });
    expect(claudeCode()).toEqual({
      alpha: { type: "http", url: urls.alpha },
      beta: { type: "http", url: urls.beta },
    });
  }, 120_000);

  test("stop takes the entry out of every client, and says so; start puts it back with the same URL", () => {
    // The supervisor takes the entries out as it stops; stop says which went, as rm does.
    expect(ok("stop", "alpha").stderr).toContain(`removed alpha from cursor (${cursorFile()}), `);
    expect(cursor()).toEqual({ beta: { url: urls.beta } });
    expect(Object.keys(vscode())).toEqual(["beta"]);
    expect(Object.keys(claudeCode())).toEqual(["beta"]);
    expect(ok("start", "alpha").stdout.trim()).toBe(urls.alpha as string);
    expect(cursor()).toEqual({ beta: { url: urls.beta }, alpha: { url: urls.alpha } });
    expect(vscode().alpha).toEqual({ type: "http", url: urls.alpha });
  }, 60_000);

  test("restart keeps the entry and its URL", () => {
    expect(ok("restart", "alpha").stdout.trim()).toBe(urls.alpha as string);
    expect(cursor().alpha).toEqual({ url: urls.alpha });
  }, 60_000);

  test("stop names only the clients that lost the entry: not one whose entry was changed by hand, nor one whose entry was gone", () => {
    // Cursor's entry changed by hand (mcpmgr leaves it there), VS Code's taken out by hand: neither loses anything.
    const file = readJson(cursorFile());
    Object.assign(file.mcpServers?.alpha as object, { url: "http://127.0.0.1:1/mine" });
    writeFileSync(cursorFile(), JSON.stringify(file, null, 2));
    const code = readJson(vscodeFile());
    delete code.servers?.alpha;
    writeFileSync(vscodeFile(), JSON.stringify(code, null, 2));
    const stopped = ok("stop", "alpha").stderr;
    expect(cursor().alpha).toEqual({ url: "http://127.0.0.1:1/mine" });
    expect(stopped).toContain(`removed alpha from claude-code (${claudeCodeFile()})`);
    expect(stopped).not.toContain(`removed alpha from cursor`);
    expect(stopped).not.toContain(`removed alpha from vscode`);
    expect(stopped).not.toMatch(/removed alpha from [^\n]*cursor \(/);
    expect(stopped).not.toMatch(/removed alpha from [^\n]*vscode \(/);
    // Back as the other tests expect it.
    const back = readJson(cursorFile());
    delete back.mcpServers?.alpha;
    writeFileSync(cursorFile(), JSON.stringify(back, null, 2));
    expect(ok("start", "alpha").stdout.trim()).toBe(urls.alpha as string);
    expect(cursor().alpha).toEqual({ url: urls.alpha });
    expect(vscode().alpha).toEqual({ type: "http", url: urls.alpha });
  }, 60_000);

  test("keys the user added to an entry come back after stop and start of the same workload", () => {
    const file = readJson(cursorFile());
    Object.assign(file.mcpServers?.alpha as object, { autoApprove: ["echo"], timeout: 120 });
    writeFileSync(cursorFile(), JSON.stringify(file, null, 2));
    ok("stop", "alpha");
    expect(cursor().alpha).toBeUndefined();
    ok("start", "alpha");
    expect(cursor().alpha).toEqual({ url: urls.alpha, autoApprove: ["echo"], timeout: 120 });
    // Back as the other tests expect it: only what mcpmgr wrote.
    const back = readJson(cursorFile());
    back.mcpServers = { ...back.mcpServers, alpha: { url: urls.alpha } };
    writeFileSync(cursorFile(), JSON.stringify(back, null, 2));
  }, 60_000);

  test("what was kept of a stopped workload's entry (a header with a token) goes when the workload is removed", () => {
    run("gamma");
    const file = readJson(cursorFile());
    Object.assign(file.mcpServers?.gamma as object, { headers: { "X-Token": "kept-token-123" } });
    writeFileSync(cursorFile(), JSON.stringify(file, null, 2));
    const registrations = () => readFileSync(join(mcpmgrHome, "state", "client-registrations.json"), "utf8");
    ok("stop", "gamma");
    expect(cursor().gamma).toBeUndefined();
    expect(registrations()).toContain("kept-token-123");
    ok("rm", "gamma");
    expect(registrations()).not.toContain("kept-token-123");
    // A workload run again under the name is another server: a fresh entry.
    expect(run("gamma")).toBeString();
    expect(cursor().gamma).toEqual({ url: urls.gamma });
    ok("rm", "gamma");
  }, 60_000);

  test("the supervisor writes the entry again when it restarts a crashed server", async () => {
    // Taken out by hand first, so that only the supervisor's write after the restart can bring it back.
    const file = readJson(cursorFile());
    delete file.mcpServers?.alpha;
    writeFileSync(cursorFile(), JSON.stringify(file));
    const client = await connect(urls.alpha as string);
    await client
      .callTool({ name: "exit", arguments: { code: 1, delayMs: 50 } }, undefined, { timeout: 2_000 })
      .catch(() => {});
    await client.close().catch(() => {});
    expect(await until(() => (row("alpha")?.restarts ?? 0) >= 1 && row("alpha")?.status === "running", 30_000)).toBe(
      true,
    );
    expect(await until(() => cursor().alpha !== undefined)).toBe(true);
    expect(cursor().alpha).toEqual({ url: urls.alpha });
    // Logged by the supervisor once it has written every client's file: polled too.
    expect(
      await until(() =>
        ok("logs", "alpha", "--proxy").stdout.includes("alpha is in the AI clients following group team"),
      ),
    ).toBe(true);
  }, 60_000);

  test("registering a client adds the running workloads at once; removing it takes them out", () => {
    const registered = ok("client", "register", "codex", "--group", "team");
    expect(registered.stderr).toContain("added alpha in Codex CLI");
    const toml = () => readFileSync(join(home, ".codex", "config.toml"), "utf8");
    expect(toml()).toContain(`[mcp_servers.alpha]\nurl = "${urls.alpha}"`);
    expect(toml()).toContain(`[mcp_servers.beta]\nurl = "${urls.beta}"`);
    ok("client", "remove", "codex");
    expect(toml()).not.toContain("alpha");
    expect(toml()).not.toContain("beta");
  }, 60_000);

  test("a foreground run is written while it runs and taken out when it ends", async () => {
    const foreground = await spawnUntil(foregroundRun(), /^(http:\/\/\S+)$/m, { env: env(), timeoutMs: 60_000 });
    try {
      const url = foreground.match[1] as string;
      // The run prints its URL before it writes the clients' files, one after the other: wait for each.
      expect(await until(() => cursor().fg !== undefined && vscode().fg !== undefined)).toBe(true);
      expect(cursor().fg).toEqual({ url });
      expect(vscode().fg).toEqual({ type: "http", url });
    } finally {
      expect(await foreground.stop("SIGINT")).toBe(0);
    }
    expect(cursor().fg).toBeUndefined();
    expect(vscode().fg).toBeUndefined();
  }, 90_000);

  test("a foreground run killed with SIGKILL leaves an entry that the next list takes out", async () => {
    const foreground = await spawnUntil(foregroundRun(), /^(http:\/\/\S+)$/m, { env: env(), timeoutMs: 60_000 });
    expect(await until(() => cursor().fg !== undefined)).toBe(true);
    await foreground.stop("SIGKILL");
    expect(cursor().fg).toBeDefined();
    const listed = mcpmgr("list");
    expect(listed.stderr).toContain(`removed fg from cursor (${cursorFile()}): it no longer runs`);
    expect(cursor().fg).toBeUndefined();
    expect(Object.keys(cursor()).sort()).toEqual(["alpha", "beta"]);
  }, 90_000);

  test("a foreground run that ended as a zombie (its parent never collected it) is taken out by the next list", async () => {
    // The parent starts the run, prints its pid, then becomes a `sleep` that never waits for it.
    const parent = await spawnUntil(
      ["sh", "-c", '"$@" & echo "child $!"; exec sleep 300', "sh", ...foregroundRun()],
      /^child (\d+)$[\s\S]*^(http:\/\/\S+)$/m,
      { env: env(), timeoutMs: 60_000 },
    );
    try {
      const pid = Number(parent.match[1]);
      expect(await until(() => cursor().fg !== undefined)).toBe(true);
      process.kill(pid, "SIGKILL");
      await untilZombie(pid);
      expect(cursor().fg).toBeDefined();
      const listed = mcpmgr("list");
      expect(listed.stderr).toContain(`removed fg from cursor (${cursorFile()}): it no longer runs`);
      expect(cursor().fg).toBeUndefined();
    } finally {
      await parent.stop("SIGKILL");
    }
  }, 90_000);

  test("a supervisor killed with SIGKILL leaves an entry that the next list takes out; start brings it back", async () => {
    const status = JSON.parse(readFileSync(join(mcpmgrHome, "state/workloads/beta/status.json"), "utf8")) as {
      pid: number;
    };
    process.kill(status.pid, "SIGKILL");
    expect(await until(() => row("beta")?.status === "failed")).toBe(true);
    // That list took the stale entry out on its way.
    expect(cursor().beta).toBeUndefined();
    expect(vscode().beta).toBeUndefined();
    expect(ok("start", "beta").stdout.trim()).toBe(urls.beta as string);
    expect(cursor().beta).toEqual({ url: urls.beta });
  }, 60_000);
});

test("a supervisor stopped by a signal (the machine shutting down) takes its entries out itself", async () => {
  const status = JSON.parse(readFileSync(join(mcpmgrHome, "state/workloads/beta/status.json"), "utf8")) as {
    pid: number;
  };
  process.kill(status.pid, "SIGTERM");
  // No mcpmgr command runs meanwhile: only the supervisor can take the entry out.
  expect(await until(() => cursor().beta === undefined && claudeCode().beta === undefined)).toBe(true);
  expect(ok("start", "beta").stdout.trim()).toBe(urls.beta as string);
  expect(cursor().beta).toEqual({ url: urls.beta });
}, 60_000);

/** Exit code, nothing on stdout, one stderr line with a hint and no stack. */
function failure(result: ReturnType<typeof mcpmgr>, code: number): string {
  expect(result.stdout).toBe("");
  const lines = result.stderr.split("\n").filter((line) => line.trim() !== "");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toContain("hint:");
  expect(result.code).toBe(code);
  return lines[0] as string;
}

describe("a background gateway", () => {
  let gatewayUrl: string;

  test("bad requests are one line with a hint, and change nothing", () => {
    expect(failure(mcpmgr("client", "register", "cursor", "--group", "team", "--gateway"), 1)).toContain(
      "no background gateway of group team is running",
    );
    expect(Object.keys(cursor()).sort()).toEqual(["alpha", "beta"]);
    expect(failure(mcpmgr("gateway", "team", "--name", "gw"), 2)).toContain("--name names a background gateway");
    expect(failure(mcpmgr("gateway", "nowhere", "--detach"), 1)).toContain("no group named nowhere");
    expect(failure(mcpmgr("gateway", "team", "--detach", "--name", "Not_A_Name"), 2)).toContain(
      "is not a valid workload name",
    );
    expect(list().map((r) => r.name)).toEqual(["alpha", "beta"]);
  }, 60_000);

  test("gateway --detach runs it as a workload of the group: listed, with its URL; per-workload clients do not get it", async () => {
    const started = mcpmgr("gateway", "team", "--detach");
    expect(started.code).toBe(0);
    gatewayUrl = started.stdout.trim();
    expect(gatewayUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(started.stderr).toContain("gateway gateway-team for group 'team' is running in the background");
    expect(row("gateway-team")).toMatchObject({
      status: "running",
      url: gatewayUrl,
      group: "team",
      runtime: "gateway",
      source: "team",
    });
    expect(Object.keys(cursor()).sort()).toEqual(["alpha", "beta"]);
    // The supervisor logs this after it reported the gateway running (which `--detach` waits for).
    expect(await until(() => ok("logs", "gateway-team").stdout.includes(`gateway-team running at ${gatewayUrl}`))).toBe(
      true,
    );
  }, 60_000);

  test("client register --gateway writes one entry, the gateway's, through which a client reaches each workload", async () => {
    const registered = ok("client", "register", "cursor", "--group", "team", "--gateway");
    expect(registered.stderr).toContain("removed alpha in Cursor");
    expect(registered.stderr).toContain("added gateway-team in Cursor");
    expect(cursor()).toEqual({ "gateway-team": { url: gatewayUrl } });
    // The other clients stay per workload.
    expect(Object.keys(vscode()).sort()).toEqual(["alpha", "beta"]);
    const status = JSON.parse(ok("client", "status", "--format", "json").stdout) as {
      id: string;
      groups: string[];
      viaGateway: string[];
    }[];
    expect(status.find((r) => r.id === "cursor")).toMatchObject({ groups: ["team"], viaGateway: ["team"] });
    expect(status.find((r) => r.id === "vscode")).toMatchObject({ groups: ["team"], viaGateway: [] });
    expect(ok("client", "status").stdout).toMatch(/\ncursor\s+yes\s+team \(gateway\)\s/);

    const client = await connect((cursor()["gateway-team"] as { url: string }).url);
    try {
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      expect(names).toContain("alpha_echo");
      expect(names).toContain("beta_echo");
      // Never itself: only the two workloads' tools.
      expect(names.filter((name) => !name.startsWith("alpha_") && !name.startsWith("beta_"))).toEqual([]);
      expect(
        JSON.parse(text(await client.callTool({ name: "alpha_echo", arguments: { text: "to alpha" } }))).text,
      ).toBe("to alpha");
      expect(JSON.parse(text(await client.callTool({ name: "beta_echo", arguments: { text: "to beta" } }))).text).toBe(
        "to beta",
      );
    } finally {
      await client.close();
    }
    // Workloads of the group that start now are the gateway's business, not entries of their own.
    ok("restart", "beta");
    expect(cursor()).toEqual({ "gateway-team": { url: gatewayUrl } });
  }, 60_000);

  test("stop and start of the gateway take its entry out and put it back", () => {
    expect(ok("stop", "gateway-team").stderr).toContain(`removed gateway-team from cursor (${cursorFile()})`);
    expect(cursor()).toEqual({});
    expect(row("gateway-team")?.status).toBe("stopped");
    expect(ok("start", "gateway-team").stdout.trim()).toBe(gatewayUrl);
    expect(cursor()).toEqual({ "gateway-team": { url: gatewayUrl } });
  }, 60_000);

  test("a second gateway of the group is skipped while the client has one, and takes its place when that one stops", () => {
    const second = ok("gateway", "team", "--detach", "--name", "gw-two");
    const secondUrl = second.stdout.trim();
    expect(second.stderr).toContain("it reaches group team through the gateway gateway-team already");
    expect(cursor()).toEqual({ "gateway-team": { url: gatewayUrl } });
    // The client follows whichever runs: the one that runs now, not only the next one to start.
    ok("stop", "gateway-team");
    expect(cursor()).toEqual({ "gw-two": { url: secondUrl } });
    ok("start", "gateway-team");
    expect(cursor()).toEqual({ "gw-two": { url: secondUrl } });
    ok("rm", "gw-two");
    expect(cursor()).toEqual({ "gateway-team": { url: gatewayUrl } });
  }, 90_000);

  test("export, rm and run --from-config recreate it, entry included", () => {
    const file = join(home, "gateway-export.json");
    ok("export", "gateway-team", file);
    expect(JSON.parse(readFileSync(file, "utf8"))).toMatchObject({
      name: "gateway-team",
      group: "team",
      source: { kind: "gateway", ref: "team" },
      runtime: "gateway",
    });
    expect(failure(mcpmgr("run", "--from-config", file, "--foreground"), 2)).toContain(
      "holds the background gateway gateway-team",
    );
    // Like rm of any workload, rm of a gateway says which clients lost its entry (walk 7).
    expect(ok("rm", "gateway-team").stderr).toContain(`removed gateway-team from cursor (${cursorFile()})`);
    expect(cursor()).toEqual({});
    expect(row("gateway-team")).toBeUndefined();
    expect(ok("run", "--from-config", file).stdout.trim()).toBe(gatewayUrl);
    expect(row("gateway-team")?.status).toBe("running");
    expect(cursor()).toEqual({ "gateway-team": { url: gatewayUrl } });
  }, 60_000);

  test("registering without --gateway switches the client back to one entry per workload", () => {
    ok("client", "register", "cursor", "--group", "team");
    expect(cursor()).toEqual({ alpha: { url: urls.alpha }, beta: { url: urls.beta } });
  }, 60_000);

  test("group rm --with-workloads removes the workloads, the gateway and every entry", () => {
    ok("group", "rm", "team", "--with-workloads");
    expect(list()).toEqual([]);
    expect(cursor()).toEqual({});
    expect(vscode()).toEqual({});
    expect(claudeCode()).toEqual({});
    expect(JSON.parse(ok("client", "list-registered-clients", "--format", "json").stdout)).toEqual([]);
  }, 90_000);
});
