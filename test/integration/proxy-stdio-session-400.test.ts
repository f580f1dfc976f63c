/**
 * `proxy stdio URL` in front of a remote that answers a forgotten session with 400, not the 404 MCP names:
 * server-everything's own streamable HTTP mode ("Bad Request: No valid session ID provided"). When it restarts,
 * the relay opens a new session for its stdio client as it does on a 404, and the client's next call works.
 * (Which 400s count, and which do not, is test/unit/relay-failures.test.ts.)
 * Real parts: server-everything (its streamableHttp transport, under node), the relay as Claude Desktop
 * starts it, the SDK client.
 */
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { until } from "../support/gateway-group.ts";
import { freePort, REPO_ROOT, type Running, spawnUntil } from "../support/processes.ts";
import { relayTransport } from "../support/stdio-relay-process.ts";

setDefaultTimeout(60_000);

const EVERYTHING = join(REPO_ROOT, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const stops: (() => Promise<unknown>)[] = [];

afterAll(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => {});
});

function startEverything(port: number): Promise<Running> {
  return spawnUntil(["node", EVERYTHING, "streamableHttp"], /listening on port/, { env: { PORT: String(port) } });
}

/** The SDK client on `proxy stdio URL` as Claude Desktop starts it; what the relay writes on stderr, kept. */
async function relayed(port: number): Promise<{ client: Client; stderr: () => string }> {
  const home = await mkdtemp(join(tmpdir(), "mcpmgr-relay-400-"));
  stops.push(() => rm(home, { recursive: true, force: true }));
  const { transport, stderr } = relayTransport(`http://127.0.0.1:${port}/mcp`, { MCPMGR_HOME: home });
  const client = new Client({ name: "claude-ai", version: "0.1.0" });
  await client.connect(transport);
  stops.push(() => client.close());
  return { client, stderr };
}

test("a remote that answers its forgotten session with 400 (server-everything) is given a new session", async () => {
  const port = await freePort();
  let server = await startEverything(port);
  stops.push(() => server.stop());
  const { client, stderr } = await relayed(port);
  const echo = (message: string) =>
    client.callTool({ name: "echo", arguments: { message } }).then(
      (result) => (result.content as { text: string }[])[0]?.text ?? "",
      (err: Error) => `failed: ${err.message}`,
    );
  expect(await echo("before")).toContain("before");

  // Restarted on its port: every session forgotten, and answered 400.
  await server.stop();
  server = await startEverything(port);
  expect(await echo("after")).toContain("after");
  expect(stderr()).toContain(
    "the remote ended the MCP session (it restarted): mcpmgr opened a new one for this client",
  );
});

test("a client that only listens is given a new session too: the event stream's 400 has the relay ask the session", async () => {
  const port = await freePort();
  let server = await startEverything(port);
  stops.push(() => server.stop());
  const { client, stderr } = await relayed(port);
  expect((await client.listTools()).tools.length).toBeGreaterThan(0);
  await server.stop();
  server = await startEverything(port);
  // Nothing sent by the client: the event stream, opened again, meets the 400 (its body is not kept).
  expect(await until(() => stderr().includes("opened a new one for this client"))).toBe(true);
});
