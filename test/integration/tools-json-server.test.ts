/**
 * The tools.json workload fixture (test/fixtures/tools-json-server.ts) through the SDK client, over
 * stdio (one server) and over HTTP (every server of the file, one path each): it lists a server's tools
 * exactly as the file has them and echoes calls. A file of our own here; the bench runs it on
 * LiveMCPBench's tools.json.
 */
import { afterEach, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { spawnUntil } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const fixture = resolve(import.meta.dir, "../fixtures/tools-json-server.ts");
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const schema = {
  type: "object",
  properties: { query: { type: "string", description: "搜索关键词" } },
  required: ["query"],
  $schema: "http://json-schema.org/draft-07/schema#",
};

function toolsJson(): string {
  const dir = mkdtempSync(join(tmpdir(), "mcpmgr-tools-json-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, "tools.json");
  writeFileSync(
    file,
    JSON.stringify([
      {
        name: "Other",
        description: "x",
        tools: { other: { tools: [{ name: "nope", inputSchema: { type: "object" } }] } },
      },
      {
        name: "Search Server",
        description: "Searches the web.",
        tools: { "web-search": { tools: [{ name: "search", description: "搜索网页", inputSchema: schema }] } },
      },
    ]),
  );
  return file;
}

test("serves every server of the file over HTTP, one path each", async () => {
  const server = await spawnUntil([process.execPath, fixture, toolsJson(), "--http"], /^READY (\S+)$/m);
  cleanups.push(() => void server.stop());
  const base = server.match[1] as string;
  const client = new Client({ name: "tools-json-http", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/s/web-search/mcp`)));
  cleanups.push(() => client.close());
  expect(client.getServerVersion()?.name).toBe("web-search");
  expect((await client.listTools()).tools as unknown[]).toEqual([
    { name: "search", description: "搜索网页", inputSchema: schema },
  ]);
  expect((await client.callTool({ name: "search", arguments: { query: "q" } })).content).toEqual([
    { type: "text", text: JSON.stringify({ server: "web-search", tool: "search", arguments: { query: "q" } }) },
  ]);
  expect((await fetch(`${base}/s/missing/mcp`, { method: "POST" })).status).toBe(404);
});

test("serves one server's tools from a tools.json file unchanged and echoes calls", async () => {
  const file = toolsJson();
  const client = new Client({ name: "tools-json-test", version: "1.0.0" });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [fixture, file, "web-search"] }));
  cleanups.push(() => client.close());

  expect(client.getServerVersion()?.name).toBe("web-search");
  expect(client.getInstructions()).toBe("Searches the web.");
  const { tools } = await client.listTools();
  expect(tools as unknown[]).toEqual([{ name: "search", description: "搜索网页", inputSchema: schema }]);
  const result = await client.callTool({ name: "search", arguments: { query: "mcp" } });
  expect(result.content).toEqual([
    { type: "text", text: JSON.stringify({ server: "web-search", tool: "search", arguments: { query: "mcp" } }) },
  ]);
  const unknown = await client.callTool({ name: "nope", arguments: {} });
  expect(unknown.isError).toBe(true);
});
