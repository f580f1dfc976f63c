/**
 * The transparent forwarder never cuts an answer without a word: `mcpmgr proxy` in front of
 * server-everything (streamable HTTP), used by the SDK client, whose tool call streams
 * progress while it runs. SIGTERM lets calls that end within the graceful-stop bound end
 * normally and ends the others with a JSON-RPC error; an upstream that dies mid-answer gives
 * the caller a JSON-RPC error at once. Without these the SDK client waits for its own timeout.
 * A 2026-07-28 client leaving before its answer cancels the request at a 2026-07-28 upstream
 * the way that revision says for HTTP: its request's stream closes (no notifications/cancelled).
 */
import { afterEach, expect, test, setDefaultTimeout } from "bun:test";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startModernServer } from "../fixtures/modern-server.ts";
import { CLI_ENTRY, spawnUntil, startEverything, startProxy } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.allSettled(cleanups.splice(0).map((cleanup) => cleanup()));
});

async function connected(url: string) {
  const client = new Client({ name: "streams-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  cleanups.push(() => client.close());
  return client;
}

/** A long-running call that reports progress; resolves with its outcome and when it came. */
function longCall(client: Client, seconds: number, onProgress: () => void) {
  const started = performance.now();
  return client
    .callTool(
      { name: "trigger-long-running-operation", arguments: { duration: seconds, steps: seconds * 4 } },
      undefined,
      {
        onprogress: onProgress,
        timeout: 60_000,
      },
    )
    .then(
      (result) => ({ ok: true as const, text: JSON.stringify(result), ms: performance.now() - started }),
      (err: unknown) => ({ ok: false as const, text: String(err), ms: performance.now() - started }),
    );
}

const until = async (check: () => boolean, what: string) => {
  for (let i = 0; i < 600 && !check(); i++) await Bun.sleep(25);
  if (!check()) throw new Error(`timed out waiting for ${what}`);
};

test("SIGTERM: a call that ends within the bound gets its result, a longer one a JSON-RPC error", async () => {
  const everything = await startEverything("streamableHttp");
  cleanups.push(() => everything.stop());
  const proxy = await startProxy(everything.url);
  cleanups.push(() => proxy.stop());
  const client = await connected(proxy.url);
  let progressed = 0;
  const short = longCall(client, 3, () => progressed++);
  const long = longCall(client, 40, () => progressed++);
  await until(() => progressed >= 2, "progress from the running calls");
  const stopped = performance.now();
  proxy.proc.kill("SIGTERM");
  const [shortOutcome, longOutcome] = await Promise.all([short, long]);
  expect(shortOutcome.ok).toBe(true);
  expect(shortOutcome.text).toContain("Long running operation completed");
  expect(longOutcome.ok).toBe(false);
  expect(longOutcome.text).toContain("shutting down");
  // Within the graceful-stop bound (10 s), not at the client's own 60 s timeout.
  expect(performance.now() - stopped).toBeLessThan(20_000);
  expect(await proxy.proc.exited).toBe(0);
}, 60_000);

test("the upstream dying mid-answer: the caller gets a JSON-RPC error at once", async () => {
  const everything = await startEverything("streamableHttp");
  cleanups.push(() => everything.stop());
  const proxy = await startProxy(everything.url);
  cleanups.push(() => proxy.stop());
  const client = await connected(proxy.url);
  let progressed = 0;
  const call = longCall(client, 40, () => progressed++);
  await until(() => progressed >= 1, "progress from the running call");
  const killed = performance.now();
  everything.proc.kill("SIGKILL");
  const outcome = await call;
  expect(outcome.ok).toBe(false);
  expect(outcome.text).toContain("broke");
  expect(performance.now() - killed).toBeLessThan(5_000);
}, 60_000);

test("a 2026-07-28 client that leaves before its answer: the upstream's request closes at once", async () => {
  const modern = startModernServer();
  cleanups.push(async () => modern.stop());
  const proxy = await startProxy(modern.url);
  cleanups.push(() => proxy.stop());
  // And through policies that watch and rewrite answers (audit, the tool filter): the close must pass them.
  const run = await spawnUntil(
    [process.execPath, CLI_ENTRY, "run", "--foreground", modern.url, "--name", "cancel-run"].concat([
      "--tools",
      "slow,where",
      "--enable-audit",
    ]),
    /^(http:\/\/\S+)$/m,
    { timeoutMs: 30_000 },
  );
  cleanups.push(() => run.stop());
  for (const url of [proxy.url, run.match[1] as string])
    for (const accept of ["application/json, text/event-stream", "text/event-stream, application/json"]) {
      modern.cancelled.length = 0;
      modern.seen.length = 0;
      const client = new ModernClient(
        { name: "cancel-test", version: "1.0.0" },
        { versionNegotiation: { mode: "auto" } },
      );
      await client.connect(new ModernTransport(new URL(url), { requestInit: { headers: { accept } } }));
      cleanups.push(() => client.close());
      expect(client.getProtocolEra()).toBe("modern");
      const controller = new AbortController();
      const call = client.callTool({ name: "slow", arguments: {} }, { signal: controller.signal });
      await until(() => modern.seen.some((r) => r.mcpName === "slow"), "the call to reach the upstream");
      const left = performance.now();
      controller.abort();
      await expect(call).rejects.toThrow();
      await until(() => modern.cancelled.length > 0, `the upstream to see its request closed (${url}, ${accept})`);
      expect(modern.cancelled).toEqual(["slow"]);
      expect(performance.now() - left).toBeLessThan(5_000);
      // Over HTTP the closed stream is the cancellation: no notifications/cancelled is sent (2026-07-28).
      expect(modern.seen.filter((r) => r.mcpMethod === "notifications/cancelled")).toEqual([]);
    }
}, 60_000);

test("a 2026-07-28 request with an Mcp-Session-Id: the header goes no further, the upstream answers it as one", async () => {
  const modern = startModernServer();
  cleanups.push(async () => modern.stop());
  const proxy = await startProxy(modern.url);
  cleanups.push(() => proxy.stop());
  const response = await fetch(proxy.url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "tools/list",
      "mcp-session-id": "left-over-from-2025",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/list",
      params: {
        _meta: {
          "io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {},
        },
      },
    }),
  });
  expect(response.status).toBe(200);
  expect(response.headers.get("mcp-session-id")).toBeNull();
  expect(await response.json()).toMatchObject({ id: 1, result: { resultType: "complete" } });
  expect(modern.seen.filter((r) => r.mcpMethod === "tools/list").map((r) => r.sessionId)).toEqual([null]);
});
