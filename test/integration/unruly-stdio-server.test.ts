/**
 * `mcpmgr run --foreground` in front of a real stdio server that misbehaves outside the protocol:
 * it floods its stderr without ever ending a line, closes its stdout and goes on running, or stops
 * reading its stdin.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CLI_ENTRY, spawnUntil } from "../support/processes.ts";

setDefaultTimeout(60_000);

const UNRULY = "npx://./test/fixtures/unruly-stdio";

function rssBytes(pid: number): number {
  const line = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(line?.[1]) * 1024;
}

/** `run --foreground` of the unruly server in `mode`, once it prints its URL. */
function runUnruly(mode: string, env: Record<string, string> = {}) {
  return spawnUntil([process.execPath, CLI_ENTRY, "run", "--foreground", UNRULY, "--", mode], /^(http:\/\/\S+)$/m, {
    timeoutMs: 30_000,
    env,
  });
}

const JSON_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

/** A 2025-era session opened with plain requests (no SDK client: its requests are sent as they are); its headers. */
async function openSession(url: string): Promise<Record<string, string>> {
  const init = await fetch(url, {
    method: "POST",
    headers: JSON_HEADERS,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "unruly-test", version: "1" } },
    }),
  });
  await init.text();
  return {
    ...JSON_HEADERS,
    "mcp-session-id": init.headers.get("mcp-session-id") as string,
    "mcp-protocol-version": "2025-06-18",
  };
}

/** The text of the answer to a call of the server's one tool, with `padding` to make the request large. */
async function callWritten(url: string, session: Record<string, string>, id: number, padding: string): Promise<string> {
  const body = { jsonrpc: "2.0", id, method: "tools/call", params: { name: "written", arguments: { padding } } };
  const res = await fetch(url, { method: "POST", headers: session, body: JSON.stringify(body) });
  return res.text();
}

test("a server that writes to stderr without ending a line: memory stays bounded and calls are answered at once", async () => {
  const run = await runUnruly("stderr-without-newlines");
  const client = new Client({ name: "unruly-test", version: "1.0.0" });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(run.match[1] as string)));
    let written = 0;
    let slowest = 0;
    while (written < 256 * 1024 * 1024) {
      const started = performance.now();
      const result = (await client.callTool({ name: "written", arguments: {} }, undefined, { timeout: 10_000 })) as {
        content: { text: string }[];
      };
      slowest = Math.max(slowest, performance.now() - started);
      written = Number(result.content[0]?.text);
    }
    // Before, the partial line was held whole and searched again for every chunk: the process grew
    // by every byte written and spent its time searching, so calls waited for seconds.
    expect(rssBytes(run.proc.pid)).toBeLessThan(200 * 1024 * 1024);
    expect(slowest).toBeLessThan(2_000);
  } finally {
    await client.close();
    expect(await run.stop("SIGINT")).toBe(0);
  }
});

test("a server that closes its stdout but goes on running is stopped, and the foreground run ends saying why", async () => {
  const run = await runUnruly("closes-stdout");
  try {
    const ended = await Promise.race([run.proc.exited.then(() => true), Bun.sleep(20_000).then(() => false)]);
    expect(ended).toBe(true);
    expect(run.output()).toContain("the MCP server closed its stdout but kept running: stopping it");
  } finally {
    await run.stop();
  }
});

test("a server that closes its stdout as it is stopped is stopped as usual, with no warning", async () => {
  const run = await runUnruly("slow-to-stop");
  try {
    // Its stdin ends and it closes its stdout, then waits for the stop's SIGTERM 2.5 s later: before,
    // 2 s in it was taken for a server gone deaf, warned about, and its stop cut short.
    expect(await run.stop("SIGINT")).toBe(0);
    expect(run.output()).toContain("SIGINT: stopped unruly-stdio");
    expect(run.output()).not.toContain("closed its stdout but kept running");
  } finally {
    await run.stop();
  }
});

test("a server that stops reading its input: requests past the backlog fail at once, and its exit leaves one line", async () => {
  const run = await runUnruly("stops-reading");
  try {
    const url = run.match[1] as string;
    const session = await openSession(url);
    // 20 requests of 7 MB: before, every byte waited in mcpmgr for a server that never took it.
    const padding = "z".repeat(7_000_000);
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => callWritten(url, session, i + 1, padding)));
    const refused = answers.filter((text) => text.includes("the MCP server is not reading its input"));
    expect(refused.length).toBeGreaterThan(5);
    expect(JSON.parse(refused[0] as string).error.code).toBe(-32603);
    // The writes still waiting fail as the server exits: the run says so in one line, no EPIPE dump.
    expect(await run.proc.exited).toBe(1);
    await run.stop();
    expect(run.output()).toContain("the MCP server exited with code 3");
    expect(run.output()).not.toContain("EPIPE");
  } finally {
    await run.stop();
  }
});

test("a server that reads its input slowly is not refused: what waits for it is bounded, not what it was ever sent", async () => {
  const run = await runUnruly("reads-slowly", { MCPMGR_MAX_MESSAGE_BYTES: String(4 * 1024 * 1024) });
  try {
    const url = run.match[1] as string;
    // Four sessions, each with one 512 KB call at a time: at most 2 MB ever waits for the server,
    // half the limit, while 60 MB go through it without its input ever being empty.
    const padding = "z".repeat(512 * 1024);
    const answers = (
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          const session = await openSession(url);
          const texts: string[] = [];
          for (let i = 1; i <= 30; i += 1) texts.push(await callWritten(url, session, i, padding));
          return texts;
        }),
      )
    ).flat();
    expect(answers.filter((text) => text.includes("not reading its input"))).toEqual([]);
    expect(answers.every((text) => text.includes('"result"'))).toBe(true);
  } finally {
    expect(await run.stop("SIGINT")).toBe(0);
  }
});
