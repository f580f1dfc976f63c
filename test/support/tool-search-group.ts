/**
 * A group for the gateway's search-mode tests: workloads of the tools.json fixture
 * (test/fixtures/tool-search-tools.json: weather, a Chinese-described search server whose tool shares
 * its name with the weather server's, notes, a calendar, a car rental), started by `mcpmgr run`, and
 * helpers that call the search tools the way a model would.
 */
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { createTestGroup, type TestGroup } from "./gateway-group.ts";
import { REPO_ROOT } from "./processes.ts";

export const TOOLS_JSON = join(REPO_ROOT, "test/fixtures/tool-search-tools.json");
const TOOLS_FIXTURE = join(REPO_ROOT, "test/fixtures/tools-json-server.ts");
export const SEARCH_GROUP = "finders";

export interface SearchGroup {
  readonly group: TestGroup;
  /** Starts one more server of the fixture file as a workload of the group. */
  run(key: string): Promise<void>;
  connect(url: string, init?: RequestInit, capabilities?: Record<string, object>): Promise<Client>;
  cleanup(): Promise<void>;
}

export async function createSearchGroup(keys: readonly string[]): Promise<SearchGroup> {
  const group = await createTestGroup();
  const clients: Client[] = [];
  const run = async (key: string) => {
    group.run(await group.packageOf(TOOLS_FIXTURE), key, SEARCH_GROUP, TOOLS_JSON, key);
  };
  for (const key of keys) await run(key);
  return {
    group,
    run,
    async connect(url, init, capabilities = {}) {
      const client = new Client({ name: "tool-search-test", version: "1.0.0" }, { capabilities });
      await client.connect(new StreamableHTTPClientTransport(new URL(url), init ? { requestInit: init } : {}));
      clients.push(client);
      return client;
    },
    async cleanup() {
      await Promise.allSettled(clients.map((c) => c.close()));
      await group.cleanup();
    },
  };
}

export const textOf = (result: unknown) => ((result as CallToolResult).content[0] as { text: string }).text;

/** What the fixture echoes for a call: which server got it, under its own tool name, with which arguments. */
export const echoed = (result: unknown) =>
  JSON.parse(textOf(result)) as { server: string; tool: string; arguments: Record<string, unknown> };

/** The names find_tool returns, best first. */
export async function find(client: Client, query: string, limit?: number): Promise<string[]> {
  const result = await client.callTool({ name: "find_tool", arguments: { query, ...(limit ? { limit } : {}) } });
  return ((result.structuredContent as { tools: { name: string }[] }).tools ?? []).map((tool) => tool.name);
}

/** A call's outcome as text: its result's text (marked when isError), or the error the client got. */
export async function outcome(client: Client, name: string, args: Record<string, unknown>): Promise<string> {
  return client.callTool({ name, arguments: args }).then(
    (result) => `${result.isError ? "isError: " : ""}${textOf(result)}`,
    (err: unknown) => `error: ${err instanceof Error ? err.message : String(err)}`,
  );
}

/** The outcome of call_tool for `name` with `args`. */
export const callTool = (client: Client, name: string, args?: Record<string, unknown>) =>
  outcome(client, "call_tool", { name, ...(args ? { arguments: args } : {}) });
