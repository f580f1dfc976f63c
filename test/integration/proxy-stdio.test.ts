/**
 * `mcpmgr proxy stdio`: a remote MCP endpoint as a stdio server, driven by the SDK's stdio
 * client — plain, with a bearer token (a 2026-only remote too, translated for), after an
 * OAuth login, and for a workload by name.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CALLBACK_PORTS,
  CLIENTS,
  completeLogin,
  JWT_RESOURCE,
  startAuthServer,
  type AuthServer,
} from "../support/auth-server.ts";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { CONFORMANCE_FIXTURE_2026, startConformanceServer, type RunningFixture } from "../support/conformance.ts";
import { eventually } from "../support/raw-http.ts";
import { CLI_ENTRY, REPO_ROOT, spawnCollect, startProxy } from "../support/processes.ts";
import type { OptionTable } from "../../src/config/option-spec.ts";
import { proxyStdioOptions } from "../../src/config/proxy-stdio-options.ts";
import { resolvePaths } from "../../src/state/paths.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";
import { expectOneLineError } from "../support/cli-home.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const LOCAL_DEV = ["--oidc-insecure-allow-http", "--jwks-allow-private-ip"];
let auth: AuthServer;
let fixture: RunningFixture;
let remote: Awaited<ReturnType<typeof startProxy>>;
let modernOnly: RunningFixture;
let modernRemote: Awaited<ReturnType<typeof startProxy>>;
let home: string;

beforeAll(async () => {
  auth = await startAuthServer();
  fixture = await startConformanceServer();
  remote = await startProxy(fixture.url, ["--oidc-issuer", auth.issuer, "--oidc-audience", JWT_RESOURCE, ...LOCAL_DEV]);
  modernOnly = await startConformanceServer({ fixture: CONFORMANCE_FIXTURE_2026, args: ["--modern-only"] });
  modernRemote = await startProxy(modernOnly.url, [
    "--oidc-issuer",
    auth.issuer,
    "--oidc-audience",
    JWT_RESOURCE,
    ...LOCAL_DEV,
  ]);
  home = await mkdtemp(join(tmpdir(), "mcpmgr-proxy-stdio-"));
}, 60_000);

afterAll(async () => {
  await remote?.stop();
  await fixture?.stop();
  await modernRemote?.stop();
  await modernOnly?.stop();
  await auth?.stop();
  await rm(home, { recursive: true, force: true });
});

function stdioClient(args: string[]) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI_ENTRY, "proxy", "stdio", ...args],
    cwd: REPO_ROOT,
    env: { ...(process.env as Record<string, string>), NO_COLOR: "1", MCPMGR_HOME: home },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: "proxy-stdio-test", version: "1.0.0" });
  return { client, transport, stderr: () => stderr };
}

test("relays a plain remote: tools listed and called over stdio", async () => {
  const { client, transport } = stdioClient([fixture.url]);
  await client.connect(transport);
  const { tools } = await client.listTools();
  expect(tools.map((t) => t.name)).toContain("test_simple_text");
  const result = (await client.callTool({ name: "test_simple_text", arguments: {} })) as {
    content: { type: string; text: string }[];
  };
  expect(result.content[0]?.type).toBe("text");
  await client.close();
}, 60_000);

test("authenticates to a protected remote with a bearer token", async () => {
  const { client, transport } = stdioClient([remote.url, "--remote-auth-bearer-token", await auth.token()]);
  await client.connect(transport);
  expect((await client.listTools()).tools.length).toBeGreaterThan(0);
  await client.close();
}, 60_000);

test("a protected remote that speaks only 2026-07-28: the translated session's every POST carries the token", async () => {
  const { client, transport } = stdioClient([modernRemote.url, "--remote-auth-bearer-token", await auth.token()]);
  let toolsChanged = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void toolsChanged++);
  await client.connect(transport);
  expect(client.getServerVersion()?.name).toBe("mcpmgr-conformance-fixture-2026");
  expect((await client.callTool({ name: "test_simple_text", arguments: {} })).content).toEqual([
    { type: "text", text: "This is a simple text response for testing." },
  ]);
  // The list-change stream is a POST of its own, authenticated like the rest.
  await client.callTool({ name: "test_trigger_tool_change", arguments: {} });
  await eventually(() => toolsChanged === 1, 5_000, "tools/list_changed");
  await client.close();
}, 60_000);

test("a protected remote without credentials: the client gets an error, not a hang", async () => {
  const { client, transport } = stdioClient([remote.url]);
  let failure: unknown;
  try {
    await client.connect(transport);
  } catch (err) {
    failure = err;
  }
  expect(String(failure)).toContain("a bearer token is required");
  await client.close().catch(() => {});
}, 60_000);

test("logs in with OAuth (URL on stderr), then relays", async () => {
  const { client, transport, stderr } = stdioClient([
    remote.url,
    "--remote-auth",
    "--remote-auth-issuer",
    auth.issuer,
    "--remote-auth-client-id",
    CLIENTS.mcpmgrPublic.client_id,
    "--remote-auth-resource",
    JWT_RESOURCE,
    "--remote-auth-callback-port",
    String(CALLBACK_PORTS[1]),
    "--remote-auth-skip-browser",
  ]);
  const connected = client.connect(transport);
  const deadline = Date.now() + 30_000;
  let login: string | undefined;
  while (login === undefined && Date.now() < deadline) {
    login = /^(http:\/\/127\.0\.0\.1:\d+\/auth\?\S+)$/m.exec(stderr())?.[1];
    await Bun.sleep(50);
  }
  expect(login).toBeDefined();
  expect(await completeLogin(login as string)).toBe(200);
  await connected;
  expect((await client.listTools()).tools.map((t) => t.name)).toContain("test_simple_text");
  await client.close();
}, 60_000);

/** `mcpmgr proxy stdio ARGS` in this file's home with nothing on stdin, run to its exit. */
function proxyStdioOf(...args: string[]): { code: number; stdout: string; stderr: string } {
  const result = Bun.spawnSync([process.execPath, CLI_ENTRY, "proxy", "stdio", ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
    stdin: "ignore",
  });
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

test("usage errors are one line with a hint", () => {
  for (const [args, text] of [
    [[], "missing URL_OR_WORKLOAD"],
    [["no-such-workload"], "neither a URL nor a workload"],
    [["http://[bad"], "is not a valid URL"],
    [["http://127.0.0.1:1/mcp", "--token-exchange-url", "https://sts.example"], "a stdio client has none"],
  ] as const) {
    const result = Bun.spawnSync([process.execPath, CLI_ENTRY, "proxy", "stdio", ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
    });
    expect(result.exitCode).not.toBe(0);
    const lines = result.stderr.toString().trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(text);
    expect(lines[0]).toContain("hint:");
  }
});

test("help: 'proxy stdio --help' shows proxy stdio's own argument and options; 'proxy --help' names the subcommand", () => {
  const help = (...args: string[]) =>
    Bun.spawnSync([process.execPath, CLI_ENTRY, ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
    });
  for (const flag of ["--help", "-h"]) {
    const result = help("proxy", "stdio", flag);
    expect(result.exitCode).toBe(0);
    const text = result.stdout.toString();
    expect(text).toContain("USAGE mcpmgr proxy stdio [OPTIONS] <URL_OR_WORKLOAD>");
    for (const [option, spec] of Object.entries(proxyStdioOptions as OptionTable))
      if (!spec.hidden) expect(text).toContain(`--${option}`);
    // What plain `proxy` takes and `proxy stdio` refuses.
    // (And the token exchange it refuses: a stdio client has no token to exchange.)
    for (const absent of ["SERVER_NAME", "--target-uri", "--oidc-", "--port", "--token-exchange-"])
      expect(text).not.toContain(absent);
  }
  const proxy = help("proxy", "--help");
  expect(proxy.exitCode).toBe(0);
  expect(proxy.stdout.toString()).toMatch(/^COMMANDS$[\s\S]*^ +mcpmgr proxy stdio +\S/m);
  expect(proxy.stdout.toString()).not.toContain("<SERVER_NAME> stdio");
});

test("input piped in and closed: every request is still answered before the relay exits", async () => {
  const lines = [
    {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "pipe", version: "1" } },
    },
    { jsonrpc: "2.0", method: "notifications/initialized" },
    { jsonrpc: "2.0", id: 2, method: "tools/list" },
  ]
    .map((m) => JSON.stringify(m))
    .join("\n");
  const proc = Bun.spawn([process.execPath, CLI_ENTRY, "proxy", "stdio", fixture.url], {
    cwd: REPO_ROOT,
    env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
    stdin: new Blob([`${lines}\n`]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stdout] = await Promise.all([proc.exited, new Response(proc.stdout).text()]);
  expect(code).toBe(0);
  const ids = stdout
    .trim()
    .split("\n")
    .map((line) => (JSON.parse(line) as { id?: number }).id);
  expect(ids).toEqual([1, 2]);
}, 60_000);

test("lines that are not JSON-RPC messages are skipped with one warning line each; the next request is answered", async () => {
  const initialize = {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "pipe", version: "1" } },
  };
  const { code, stdout, stderr } = await spawnCollect(
    [process.execPath, CLI_ENTRY, "proxy", "stdio", fixture.url],
    { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
    `not json\n[]\n{"jsonrpc":"2.0","id":{}}\n${JSON.stringify(initialize)}\n`,
  );
  expect(code).toBe(0);
  expect((JSON.parse(stdout.trim()) as { id?: number }).id).toBe(1);
  const warnings = stderr.split("\n").filter((line) => line.includes("stdin:"));
  expect(warnings).toEqual([
    expect.stringContaining("stdin: skipped a line that is not JSON: JSON Parse error"),
    "[warn] stdin: skipped a line that is not a JSON-RPC message",
    "[warn] stdin: skipped a line that is not a JSON-RPC message",
  ]);
  // Every line of stderr is a line of mcpmgr's: nothing of a schema library's issue dump.
  for (const line of stderr.trim().split("\n")) expect(line).toMatch(/^\[(info|warn)\] /);
}, 60_000);

test("a standard input that cannot be read at all (a directory) is refused in one line, not an unexpected error", () => {
  const shell = Bun.spawnSync(
    ["sh", "-c", 'exec "$0" "$1" proxy stdio "$2" < "$3"', process.execPath, CLI_ENTRY, fixture.url, home],
    { cwd: REPO_ROOT, env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home } },
  );
  const stderr = shell.stderr.toString();
  expect(`${shell.exitCode} ${stderr}`).toStartWith("2 [error] standard input cannot be read: EISDIR");
  expect(stderr.trim().split("\n")).toHaveLength(1);
  expect(stderr).not.toContain("report it");
});

test("a workload served over the deprecated HTTP+SSE transport is refused in one line, not relayed into errors", async () => {
  // Recorded as `run npx://… --proxy-mode sse` records it; the refusal comes before any connection.
  await new WorkloadStore(resolvePaths({ MCPMGR_HOME: home })).create({
    name: "legacy-sse",
    source: { kind: "package", ref: "npx://@modelcontextprotocol/server-everything" },
    transport: "stdio",
    proxyMode: "sse",
    proxyPort: 41_333,
    proxyPath: "/sse",
    runtime: "process",
    runOptions: ["npx://@modelcontextprotocol/server-everything", "--name", "legacy-sse", "--proxy-mode", "sse", "--"],
  });
  const line = expectOneLineError(proxyStdioOf("legacy-sse"), 2);
  expect(line).toContain("workload legacy-sse serves the deprecated HTTP+SSE transport (http://127.0.0.1:41333/sse)");
});

test("a mistyped workload name is refused with the nearest workload's name", async () => {
  await new WorkloadStore(resolvePaths({ MCPMGR_HOME: home })).create({
    name: "team-notes",
    source: { kind: "package", ref: "npx://@modelcontextprotocol/server-everything" },
    transport: "stdio",
    proxyMode: "streamable-http",
    proxyPort: 41_334,
    proxyPath: "/mcp",
    runtime: "process",
    runOptions: ["npx://@modelcontextprotocol/server-everything", "--name", "team-notes", "--"],
  });
  const line = expectOneLineError(proxyStdioOf("team-note"), 1);
  expect(line).toContain('"team-note" is neither a URL nor a workload (hint: did you mean team-notes? ');
});
