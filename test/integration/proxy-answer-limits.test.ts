/**
 * What the proxies hold of a server's answers is bounded by MCPMGR_MAX_MESSAGE_BYTES (review 9 F1):
 *  - the transparent proxy (`mcpmgr proxy`, a workload's proxy in front of an HTTP server) still
 *    streams an SSE event past the limit to its client whole, but stops watching the stream for
 *    answers (sse-answers.ts), and says so once;
 *  - `mcpmgr proxy stdio` parses what it relays: a JSON answer or an SSE event past the limit
 *    fails its request with an error naming the limit, and the relay goes on;
 *  - the policies that read answers hold no more: the tool filter (and Cedar, through the same
 *    rewriter) answers such a request with the limit's error instead of passing it on unfiltered,
 *    and audit passes it on unchanged and records the call without its answer.
 * Real processes: a hostile member (test/support/hostile-member.ts) behind `mcpmgr proxy`,
 * `mcpmgr proxy stdio` and `mcpmgr run --foreground` with a 1 MiB limit; the answers are 3 MiB.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { until } from "../support/gateway-group.ts";
import { type HostileMember, startHostileMember } from "../support/hostile-member.ts";
import { CLI_ENTRY, REPO_ROOT, spawnUntil, startProxy } from "../support/processes.ts";
import { openRawSession } from "../support/raw-session.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

const LIMIT = 1024 * 1024;
const LIMIT_ENV = { MCPMGR_MAX_MESSAGE_BYTES: String(LIMIT) };

let member: HostileMember;
let proxy: Awaited<ReturnType<typeof startProxy>>;
let home: string;

beforeAll(async () => {
  member = startHostileMember();
  proxy = await startProxy(member.url, [], { env: LIMIT_ENV });
  home = await mkdtemp(join(tmpdir(), "mcpmgr-answer-limits-"));
}, 60_000);

afterAll(async () => {
  await proxy?.stop();
  member?.stop();
  await rm(home, { recursive: true, force: true });
});

test("the transparent proxy streams an event past the limit whole, and stops watching it for answers (one line)", async () => {
  const session = await openRawSession(proxy.url, "2025-11-25", "limits");
  const call = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "bigevent", arguments: { kib: 3072 } } };
  const response = await session.post(JSON.stringify(call));
  const text = await response.text();
  // Relayed as the server sent it: the whole answer reached the client.
  const data = text.split("\n").find((line) => line.startsWith("data:")) as string;
  const answer = JSON.parse(data.slice(5)) as { id: number; result: { content: { text: string }[] } };
  expect(answer.id).toBe(1);
  expect(answer.result.content[0]?.text).toHaveLength(3072 * 1024);
  expect(await until(() => /larger than 1048576 bytes \(MCPMGR_MAX_MESSAGE_BYTES\)/.test(proxy.output()))).toBe(true);
  expect(proxy.output().match(/MCPMGR_MAX_MESSAGE_BYTES/g)).toHaveLength(1);
});

async function stdioRelay(limitEnv: Record<string, string> = LIMIT_ENV) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI_ENTRY, "proxy", "stdio", member.url],
    cwd: REPO_ROOT,
    env: { ...(process.env as Record<string, string>), NO_COLOR: "1", MCPMGR_HOME: home, ...limitEnv },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: "answer-limits", version: "1.0.0" });
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

test("proxy stdio fails a request whose JSON answer or SSE event is past the limit, names the limit, and goes on", async () => {
  const { client, stderr } = await stdioRelay();
  try {
    for (const name of ["hugejson", "declaredjson", "giant"]) {
      const failed = await client.callTool({ name, arguments: { kib: 3072 } }).then(
        () => "answered",
        (err: Error) => err.message,
      );
      expect(failed).toContain("-32603");
      expect(failed).toContain("larger than mcpmgr accepts");
      expect(failed).toContain("MCPMGR_MAX_MESSAGE_BYTES");
    }
    expect(await client.callTool({ name: "ok", arguments: {} })).toMatchObject({
      content: [{ type: "text", text: "fine" }],
    });
    const small = (await client.callTool({ name: "bigevent", arguments: { kib: 512 } })) as {
      content: { text: string }[];
    };
    expect(small.content[0]?.text).toHaveLength(512 * 1024);
    // One line per answer cut.
    expect(stderr().match(/remote: the MCP server's answer \(over 1048576 bytes\)/g)).toHaveLength(3);
  } finally {
    await client.close();
  }
});

test("proxy stdio passes on the events written in one piece with an event past the limit, then fails its request", async () => {
  // Review 11 O3: the whole chunk holding the oversized event was held back, the log line before it
  // too. The smallest limit (1 KiB) puts the log line and the point where the answer passes it in one
  // chunk, as a server's single write arrives.
  const { client, stderr } = await stdioRelay({ MCPMGR_MAX_MESSAGE_BYTES: "1024" });
  const logged: unknown[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    logged.push(notification.params.data);
  });
  try {
    const failed = await client.callTool({ name: "noisybig", arguments: { kib: 3 } }).then(
      () => "answered",
      (err: Error) => err.message,
    );
    expect(failed).toContain("-32603");
    expect(failed).toContain("MCPMGR_MAX_MESSAGE_BYTES");
    expect(logged).toEqual(["before"]);
    expect(stderr().match(/remote: the MCP server's answer \(over 1024 bytes\)/g)).toHaveLength(1);
  } finally {
    await client.close();
  }
});

/** `mcpmgr run URL --foreground` in front of the member, with the 1 MiB limit and the given policies. */
async function runForeground(...policies: string[]) {
  const running = await spawnUntil(
    [process.execPath, CLI_ENTRY, "run", member.url, "--name", "limited", "--foreground", ...policies],
    /^(http:\/\/\S+)$/m,
    { env: { MCPMGR_HOME: home, ...LIMIT_ENV }, timeoutMs: 30_000 },
  );
  return { ...running, url: running.match[1] as string };
}

test("the tool filter fails a JSON answer or SSE event past the limit instead of passing it on unread", async () => {
  const filtered = await runForeground("--tools", "ok,hugejson,giant,bigevent");
  try {
    const session = await openRawSession(filtered.url, "2025-11-25", "limits");
    for (const [id, name] of [
      [1, "hugejson"],
      [2, "giant"],
    ] as const) {
      const call = { jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: { kib: 3072 } } };
      const text = await (await session.post(JSON.stringify(call))).text();
      const data = text.startsWith("{") ? text : (text.split("\n").find((line) => line.startsWith("data: {")) ?? "");
      const answer = JSON.parse(data.replace(/^data: /, "")) as {
        id: number;
        error?: { code: number; message: string };
      };
      expect(answer.id).toBe(id);
      expect(answer.error?.code).toBe(-32603);
      expect(answer.error?.message).toContain("MCPMGR_MAX_MESSAGE_BYTES");
    }
    const small = {
      jsonrpc: "2.0",
      id: 3,
      method: "tools/call",
      params: { name: "bigevent", arguments: { kib: 512 } },
    };
    const text = await (await session.post(JSON.stringify(small))).text();
    expect(text).toContain("C".repeat(512 * 1024));
  } finally {
    await filtered.stop();
  }
});

test("audit passes an answer past the limit on unchanged and records its call without it", async () => {
  const config = join(home, "audit.json");
  const log = join(home, "audit.log");
  await writeFile(config, JSON.stringify({ includeResponseData: true, logFile: log }));
  const audited = await runForeground("--audit-config", config);
  try {
    const session = await openRawSession(audited.url, "2025-11-25", "limits");
    const call = (id: number, kib: number) =>
      session.post(
        JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "hugejson", arguments: { kib } } }),
      );
    const big = (await (await call(7, 3072)).json()) as { result: { content: { text: string }[] } };
    expect(big.result.content[0]?.text).toHaveLength(3072 * 1024);
    await (await call(8, 1)).json();
    const toolCalls = async () =>
      (await readFile(log, "utf8").catch(() => ""))
        .split("\n")
        .filter((line) => line.includes('"mcp_tool_call"'))
        .map((line) => JSON.parse(line) as { response?: string });
    expect(await until(async () => (await toolCalls()).length === 2)).toBe(true);
    const [recordedBig, recordedSmall] = await toolCalls();
    // The big answer was not held to be read; the small one was.
    expect(recordedBig?.response).toBeUndefined();
    expect(recordedSmall?.response).toContain("BBB");
  } finally {
    await audited.stop();
  }
});
