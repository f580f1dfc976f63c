/**
 * --remote-insecure-allow-http: the deliberate way to send mcpmgr's credentials to a plain http://
 * remote beyond loopback (a sidecar on a private or container network). A real MCP server on this
 * machine's own network address (not loopback) stands for such a remote and records the Authorization
 * it gets: with the flag, `run` (background, then `restart` and `export` + `run --from-config` from its
 * record), `proxy` and `proxy stdio` deliver the bearer token, and each says once at its start that the
 * token goes in clear text to that origin, never quoting the token. Without it they refuse
 * (plain-http-credentials-cli.test.ts).
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { PLAIN_HTTP_MARKER } from "../../src/config/outgoing-auth-spec.ts";
import { startMemberServer, type MemberServer } from "../fixtures/member-server.ts";
import { cliEnv } from "../support/cli-home.ts";
import { CLI_ENTRY, REPO_ROOT, spawnCollect, startProxy } from "../support/processes.ts";
import { networkAddress } from "../support/network.ts";

setDefaultTimeout(60_000);

const TOKEN = "plain-http-allowed-token";
const ALLOW = "--remote-insecure-allow-http";
let remote: MemberServer;
let home: string;
let env: Record<string, string>;
let tokenFile: string;
let bearer: string[];

beforeAll(async () => {
  // This machine's own address on its network: reached without loopback, as a remote elsewhere is.
  const address = networkAddress();
  expect(address).toBeDefined();
  remote = startMemberServer({ name: "remote", tools: ["hello"], hostname: address });
  home = await mkdtemp(join(tmpdir(), "mcpmgr-plain-http-allowed-"));
  env = cliEnv(home);
  tokenFile = join(home, "token");
  await writeFile(tokenFile, `${TOKEN}\n`);
  bearer = ["--remote-auth-bearer-token-file", tokenFile];
});

afterAll(async () => {
  await cli(["rm", "allowed"]);
  await remote?.stop();
  await rm(home, { recursive: true, force: true });
});

/** One mcpmgr command, without blocking this process (the remote lives in it). */
function cli(args: readonly string[]) {
  return spawnCollect([process.execPath, CLI_ENTRY, ...args], env);
}

async function cliOk(args: readonly string[]) {
  const result = await cli(args);
  if (result.code !== 0) throw new Error(`mcpmgr ${args.join(" ")} exited ${result.code}:\n${result.stderr}`);
  return result;
}

/** The warning as mcpmgr says it: the credential by its option, the remote's origin, the flag. */
function warningLines(text: string): string[] {
  const origin = new URL(remote.url).origin;
  return text
    .split("\n")
    .filter((line) => line.includes(PLAIN_HTTP_MARKER))
    .map((line) => {
      expect(line).toContain("[warn]");
      expect(line).toContain(`the bearer token (--remote-auth-bearer-token-file) to ${origin} over plain http://`);
      return line;
    });
}

/** Lists the remote's tools through `transport`; the remote must have got the token. */
async function listThrough(transport: StdioClientTransport | StreamableHTTPClientTransport): Promise<void> {
  const client = new Client({ name: "plain-http-allowed", version: "1.0.0" });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toContain("hello");
    expect(remote.lastAuthorization).toBe(`Bearer ${TOKEN}`);
  } finally {
    await client.close();
  }
}

async function listAt(url: string): Promise<void> {
  await listThrough(new StreamableHTTPClientTransport(new URL(url)));
}

test("run in the background with the flag: the token reaches the remote, the warning is said at each start, the token nowhere", async () => {
  const run = await cliOk(["run", remote.url, "--name", "allowed", ...bearer, ALLOW]);
  expect(warningLines(run.stderr)).toHaveLength(1);
  const url = run.stdout.trim();
  expect(url).toStartWith("http://127.0.0.1:");
  await listAt(url);

  // The record keeps the flag: restart parses it again, and says so again.
  const restart = await cliOk(["restart", "allowed"]);
  expect(warningLines(restart.stderr)).toHaveLength(1);
  await listAt(url);

  const logs = await cliOk(["logs", "allowed", "--proxy"]);
  expect(warningLines(logs.stdout + logs.stderr)).toHaveLength(2);
  for (const text of [run.stdout, run.stderr, restart.stderr, logs.stdout, logs.stderr])
    expect(text).not.toContain(TOKEN);
});

test("export keeps the flag, and run --from-config runs the exported workload with it", async () => {
  const file = join(home, "allowed.json");
  await cliOk(["export", "allowed", file]);
  const exported = JSON.parse(await readFile(file, "utf8")) as { runOptions: string[] };
  expect(exported.runOptions).toContain(ALLOW);
  expect(JSON.stringify(exported)).not.toContain(TOKEN);
  await cliOk(["rm", "allowed"]);
  const run = await cliOk(["run", "--from-config", file]);
  expect(warningLines(run.stderr)).toHaveLength(1);
  await listAt(run.stdout.trim());
});

test("proxy and proxy stdio with the flag: the token reaches the remote, one warning at the start", async () => {
  const proxy = await startProxy(remote.url, [...bearer, ALLOW], { env });
  try {
    await listAt(proxy.url);
  } finally {
    await proxy.stop();
  }
  expect(warningLines(proxy.output())).toHaveLength(1);
  expect(proxy.output()).not.toContain(TOKEN);

  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI_ENTRY, "proxy", "stdio", remote.url, ...bearer, ALLOW],
    cwd: REPO_ROOT,
    env,
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  await listThrough(transport);
  expect(warningLines(stderr)).toHaveLength(1);
  expect(stderr).not.toContain(TOKEN);
});
