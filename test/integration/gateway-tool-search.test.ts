/**
 * Search mode end to end (`mcpmgr gateway GROUP --tool-search`): real stdio workloads started by
 * `mcpmgr run` (the tools.json fixture serving a weather server, a Chinese-described search server
 * whose tool shares its name with the weather server's, a notebook, later a calendar; and the bridge
 * probe for progress, cancellation and sampling), the SDK client through the gateway's endpoint.
 * The gateway has `--tools` (weather_get_alerts hidden), a Cedar policy (notes_delete_note forbidden)
 * and an audit log; a second gateway adds OIDC, so Cedar decides per caller; a third blends in an
 * embeddings endpoint (our fixture) whose key comes from a secret.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  type CallToolResult,
  CreateMessageRequestSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { startEmbeddingServer } from "../fixtures/embedding-server.ts";
import { JWT_RESOURCE, startAuthServer, type AuthServer } from "../support/auth-server.ts";
import { createTestGroup, PROBE_FIXTURE, type TestGroup, until } from "../support/gateway-group.ts";
import { REPO_ROOT } from "../support/processes.ts";

const TOOLS_JSON = join(REPO_ROOT, "test/fixtures/tool-search-tools.json");
const TOOLS_FIXTURE = join(REPO_ROOT, "test/fixtures/tools-json-server.ts");

let group: TestGroup;
let auth: AuthServer;
let dir: string;
let logFile: string;
let tools: string;
let gateway: Awaited<ReturnType<TestGroup["gateway"]>>;
/** Search mode without policies (Cedar does not let 2026-07-28's server/discover through yet). */
let plain: Awaited<ReturnType<TestGroup["gateway"]>>;
const clients: { close(): Promise<void> }[] = [];

async function connect(url = gateway.url, init?: RequestInit, capabilities: Record<string, object> = {}) {
  const client = new Client({ name: "tool-search-test", version: "1.0.0" }, { capabilities });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), init ? { requestInit: init } : {}));
  clients.push(client);
  return client;
}

const textOf = (result: unknown) => ((result as CallToolResult).content[0] as { text: string }).text;
const echoed = (result: unknown) =>
  JSON.parse(textOf(result)) as { server: string; tool: string; arguments: Record<string, unknown> };

async function find(client: Client, query: string, limit?: number): Promise<string[]> {
  const result = await client.callTool({ name: "find_tool", arguments: { query, ...(limit ? { limit } : {}) } });
  return ((result.structuredContent as { tools: { name: string }[] }).tools ?? []).map((tool) => tool.name);
}

/** A call's outcome as text: its result's text, or the JSON-RPC error a direct call would get. */
async function outcome(client: Client, name: string, args: Record<string, unknown>): Promise<string> {
  return client.callTool({ name, arguments: args }).then(
    (result) => `${result.isError ? "isError: " : ""}${textOf(result)}`,
    (err: unknown) => `error: ${err instanceof Error ? err.message : String(err)}`,
  );
}

const callTool = (client: Client, name: string, args?: Record<string, unknown>) =>
  outcome(client, "call_tool", { name, ...(args ? { arguments: args } : {}) });

interface AuditLine {
  type: string;
  target: { tool?: string };
  outcome: string;
  request?: string;
  subject: { sub: string };
}

async function auditLines(): Promise<AuditLine[]> {
  return (await readFile(logFile, "utf8").catch(() => ""))
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as AuditLine);
}

async function policyFile(name: string, policies: string[]): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, JSON.stringify({ version: "1.0", type: "cedarv1", cedar: { policies, entities_json: "[]" } }));
  return path;
}

beforeAll(async () => {
  group = await createTestGroup();
  auth = await startAuthServer();
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-tool-search-"));
  tools = await group.packageOf(TOOLS_FIXTURE);
  for (const key of ["weather", "baidu-search", "notes", "car-rental"])
    group.run(tools, key, "finders", TOOLS_JSON, key);
  group.run(await group.packageOf(PROBE_FIXTURE), "probe", "finders");
  logFile = join(dir, "audit.jsonl");
  const audit = join(dir, "audit.json");
  await writeFile(audit, JSON.stringify({ logFile, eventTypes: ["mcp_tool_call"], includeRequestData: true }));
  const authz = await policyFile("authz.json", [
    "permit(principal, action, resource);",
    'forbid(principal, action == Action::"call_tool", resource == Tool::"notes_delete_note");',
  ]);
  const allowed = [
    "weather_get_forecast",
    "weather_search",
    "baidu-search_search",
    "notes_create_note",
    "notes_delete_note",
    "calendar_add_event",
    "probe_progress",
    "probe_sleep",
    "probe_sample",
    "probe_stats",
  ];
  gateway = await group.gateway(
    "finders",
    "--tool-search",
    "--tools",
    allowed.join(","),
    "--authz-config",
    authz,
    "--audit-config",
    audit,
  );
  plain = await group.gateway("finders", "--tool-search");
}, 180_000);

afterAll(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
  await group?.cleanup();
  await auth?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("what the model sees", () => {
  test("tools/list holds only find_tool and call_tool; the instructions say how, and what the group holds", async () => {
    const client = await connect();
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["find_tool", "call_tool"]);
    const instructions = client.getInstructions() ?? "";
    expect(instructions.split(/(?<=\.)\s+(?=[A-Z])/)).toHaveLength(2);
    expect(instructions).toContain("find_tool");
    expect(instructions).toContain("call_tool");
    expect(instructions).toContain("weather (Weather forecasts and severe weather alerts for cities worldwide)");
    expect(instructions).toContain("baidu-search (百度网页搜索服务)");
  });

  test("find_tool finds a tool by a paraphrase of its description, with its full inputSchema", async () => {
    const client = await connect();
    const result = await client.callTool({
      name: "find_tool",
      arguments: { query: "remove one of my notes for good", limit: 1 },
    });
    // notes_delete_note is forbidden by Cedar: the best match the caller may call comes instead.
    expect(await find(client, "remove one of my notes for good", 1)).toEqual(["notes_create_note"]);
    expect(textOf(result)).toContain("1. notes_create_note");
    const forecast = await client.callTool({
      name: "find_tool",
      arguments: { query: "will it rain in Lisbon over the next few days?", limit: 1 },
    });
    expect((forecast.structuredContent as { tools: unknown[] }).tools).toEqual([
      {
        name: "weather_get_forecast",
        description: "Get the weather forecast (temperature, rain, wind) for a city for the coming days.",
        inputSchema: {
          type: "object",
          properties: {
            city: { type: "string", description: "City name" },
            days: { type: "integer", minimum: 1, maximum: 7, description: "How many days ahead" },
          },
          required: ["city"],
        },
      },
    ]);
    expect(textOf(forecast)).toContain('inputSchema: {"type":"object","properties":{"city"');
  });

  test("a Chinese description is found by a Chinese query; the two `search` tools stay distinct", async () => {
    const client = await connect();
    expect((await find(client, "搜索网页"))[0]).toBe("baidu-search_search");
    const both = await find(client, "search", 10);
    expect(both).toContain("baidu-search_search");
    expect(both).toContain("weather_search");
  });
});

describe("call_tool", () => {
  test("valid arguments reach the right workload, as a direct call does", async () => {
    const client = await connect();
    const viaSearch = echoed(
      await client.callTool({
        name: "call_tool",
        arguments: { name: "baidu-search_search", arguments: { query: "mcp" } },
      }),
    );
    expect(viaSearch).toEqual({ server: "baidu-search", tool: "search", arguments: { query: "mcp" } });
    expect(
      echoed(
        await client.callTool({ name: "call_tool", arguments: { name: "weather_search", arguments: { query: "x" } } }),
      ).server,
    ).toBe("weather");
    // A client that remembers names calls directly, in search mode too.
    expect(echoed(await client.callTool({ name: "weather_get_forecast", arguments: { city: "Oslo" } }))).toEqual({
      server: "weather",
      tool: "get_forecast",
      arguments: { city: "Oslo" },
    });
  });

  test("invalid arguments are refused before the workload, saying what is wrong", async () => {
    const client = await connect();
    const answer = await callTool(client, "weather_get_forecast", { days: "three" });
    expect(answer).toStartWith("isError: Arguments do not match the inputSchema of weather_get_forecast");
    expect(answer).toContain('missing required argument "city"');
    expect(answer).toContain('"days" must be of type integer, not string');
    expect(await callTool(client, "notes_create_note", { title: "t", body: "b", tags: ["a", 2] })).toContain(
      '"tags[1]" must be of type string, not number',
    );
  });

  test("an unknown name lists the closest names the caller may call", async () => {
    const client = await connect();
    const answer = await callTool(client, "get_forecast", { city: "Oslo" });
    expect(answer).toStartWith('isError: No tool named "get_forecast".');
    expect(answer).toContain("Closest names: weather_get_forecast");
    expect(answer).not.toContain("weather_get_alerts");
  });

  test("progress, cancellation and sampling work through call_tool as through a direct call", async () => {
    const client = await connect(gateway.url, undefined, { sampling: {} });
    client.setRequestHandler(CreateMessageRequestSchema, async () => ({
      role: "assistant",
      content: { type: "text", text: "sampled through call_tool" },
      model: "test-model",
    }));
    const messages: string[] = [];
    await client.callTool(
      { name: "call_tool", arguments: { name: "probe_progress", arguments: { steps: 3, delayMs: 5, tag: "s" } } },
      undefined,
      { onprogress: (progress) => messages.push(String(progress.message)) },
    );
    expect(messages).toEqual(["s:1", "s:2", "s:3"]);

    const sampled = JSON.parse(
      textOf(
        await client.callTool({ name: "call_tool", arguments: { name: "probe_sample", arguments: { prompt: "hi" } } }),
      ),
    ) as { answer: string };
    expect(sampled.answer).toBe("sampled through call_tool");

    const abort = new AbortController();
    const call = client.callTool(
      { name: "call_tool", arguments: { name: "probe_sleep", arguments: { ms: 60_000 } } },
      undefined,
      {
        signal: abort.signal,
      },
    );
    await Bun.sleep(300);
    abort.abort();
    await expect(call).rejects.toThrow();
    expect(
      await until(async () => {
        const stats = JSON.parse(textOf(await client.callTool({ name: "probe_stats", arguments: {} }))) as {
          aborted: unknown[];
        };
        return stats.aborted.length === 1;
      }),
    ).toBe(true);
  });

  test("a 2026-07-28 client (stateless, Mcp-Name header) finds and calls through the search tools", async () => {
    const client = new ModernClient(
      { name: "modern", version: "1.0.0" },
      { versionNegotiation: { mode: { pin: "2026-07-28" } } },
    );
    await client.connect(new ModernTransport(new URL(plain.url)));
    clients.push(client);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["find_tool", "call_tool"]);
    const found = await client.callTool({ name: "find_tool", arguments: { query: "weather forecast", limit: 1 } });
    expect(textOf(found)).toContain("1. weather_get_forecast");
    const called = await client.callTool({
      name: "call_tool",
      arguments: { name: "weather_get_forecast", arguments: { city: "Rome" } },
    });
    expect(echoed(called)).toEqual({ server: "weather", tool: "get_forecast", arguments: { city: "Rome" } });
  });
});

describe("policies are not bypassed", () => {
  test("a tool hidden by --tools is neither found nor callable, whatever the way", async () => {
    const client = await connect();
    expect(await find(client, "severe weather alerts storms floods", 20)).not.toContain("weather_get_alerts");
    expect(await callTool(client, "weather_get_alerts", { region: "north" })).toStartWith(
      'isError: No tool named "weather_get_alerts".',
    );
    expect(await outcome(client, "weather_get_alerts", { region: "north" })).toMatch(
      /Unknown tool: weather_get_alerts/,
    );
  });

  test("a tool Cedar forbids is not found, and call_tool is refused exactly as the direct call", async () => {
    const client = await connect();
    expect(await find(client, "delete a note", 20)).not.toContain("notes_delete_note");
    // The refusal as the client reads it, without the request id (which differs between calls).
    const refusal = async (answer: Promise<string>) => (await answer).replace(/"id":\d+/, '"id":…');
    const direct = await refusal(outcome(client, "notes_delete_note", { id: "1" }));
    expect(direct).toContain(String.raw`Forbidden: call_tool on Tool::\"notes_delete_note\" is not permitted`);
    expect(await refusal(callTool(client, "notes_delete_note", { id: "1" }))).toBe(direct);
    // Its schema stays unknown too: invalid arguments get the same refusal, not a schema error.
    expect(await refusal(callTool(client, "notes_delete_note", {}))).toBe(direct);
  });

  test("audit records the real tool and arguments of a call_tool, and find_tool as itself", async () => {
    const client = await connect();
    await callTool(client, "weather_get_forecast", { city: "audited-city" });
    await callTool(client, "notes_delete_note", { id: "audited-id" });
    await client.callTool({ name: "find_tool", arguments: { query: "audited query" } });
    // Lines are flushed every 200 ms.
    expect(await until(async () => (await auditLines()).some((l) => l.request?.includes("audited query")))).toBe(true);
    const lines = await auditLines();
    const forecast = lines.find((l) => l.request?.includes("audited-city"));
    expect(forecast).toMatchObject({
      type: "mcp_tool_call",
      target: { tool: "weather_get_forecast" },
      outcome: "success",
    });
    expect(JSON.parse(forecast?.request ?? "{}")).toMatchObject({
      name: "weather_get_forecast",
      arguments: { city: "audited-city" },
    });
    expect(lines.find((l) => l.request?.includes("audited-id"))).toMatchObject({
      target: { tool: "notes_delete_note" },
      outcome: "denied",
    });
    expect(lines.find((l) => l.request?.includes("audited query"))?.target.tool).toBe("find_tool");
    expect(lines.some((l) => l.target.tool === "call_tool" && l.request?.includes("audited"))).toBe(false);
  });

  test("with OIDC, Cedar decides per caller what find_tool shows and what call_tool runs", async () => {
    const authz = await policyFile("per-caller.json", [
      'permit(principal, action == Action::"call_tool", resource) when { context.claim_scope like "*mcp:write*" };',
      'permit(principal, action == Action::"call_tool", resource == Tool::"weather_get_forecast");',
    ]);
    const protectedGateway = await group.gateway(
      "finders",
      "--tool-search",
      "--authz-config",
      authz,
      "--oidc-issuer",
      auth.issuer,
      "--oidc-audience",
      JWT_RESOURCE,
      "--oidc-insecure-allow-http",
      "--jwks-allow-private-ip",
    );
    const as = async (scope: string) =>
      connect(protectedGateway.url, { headers: { authorization: `Bearer ${await auth.token({ scope })}` } });
    const reader = await as("mcp:read");
    const writer = await as("mcp:write");
    expect(await find(reader, "write a new note", 20)).toEqual([]);
    expect(await find(writer, "write a new note", 1)).toEqual(["notes_create_note"]);
    expect(await find(reader, "weather forecast", 5)).toEqual(["weather_get_forecast"]);
    // The instructions name only the workloads a caller can use.
    expect(reader.getInstructions()).toContain("weather (");
    expect(reader.getInstructions()).not.toContain("notes (");
    expect(writer.getInstructions()).toContain("notes (");
    expect(await callTool(reader, "notes_create_note", { title: "t", body: "b" })).toContain("Forbidden");
    expect(
      echoed(
        await writer.callTool({
          name: "call_tool",
          arguments: { name: "notes_create_note", arguments: { title: "t", body: "b" } },
        }),
      ).server,
    ).toBe("notes");
  });
});

describe("the index follows the group", () => {
  test("a workload that joins becomes findable, and callable through call_tool", async () => {
    const client = await connect();
    expect(await find(client, "add an event to my calendar", 20)).not.toContain("calendar_add_event");
    group.run(tools, "calendar", "finders", TOOLS_JSON, "calendar");
    expect(
      await until(async () => (await find(client, "add an event to my calendar", 1))[0] === "calendar_add_event"),
    ).toBe(true);
    expect(
      echoed(
        await client.callTool({
          name: "call_tool",
          arguments: { name: "calendar_add_event", arguments: { title: "t", date: "2026-01-01" } },
        }),
      ).server,
    ).toBe("calendar");
  }, 60_000);

  test("a workload that changes its tools (list_changed) is re-indexed; clients are not told to re-list", async () => {
    const client = await connect(plain.url);
    let listChanges = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      listChanges++;
    });
    expect(await find(client, "juggle torches", 20)).not.toContain("probe_juggle_torches");
    await client.callTool({
      name: "call_tool",
      arguments: { name: "probe_notify_list_changed", arguments: { add: "juggle_torches" } },
    });
    expect(await until(async () => (await find(client, "juggle torches", 1))[0] === "probe_juggle_torches")).toBe(true);
    // tools/list is find_tool and call_tool whatever the group holds: nothing to re-list.
    await client.ping();
    expect(listChanges).toBe(0);
  }, 60_000);

  test("a workload that stops is no longer found", async () => {
    const client = await connect();
    expect(await find(client, "add an event to my calendar", 1)).toEqual(["calendar_add_event"]);
    expect(group.mcpmgr("stop", "calendar").code).toBe(0);
    expect(
      await until(async () => !(await find(client, "add an event to my calendar", 20)).includes("calendar_add_event")),
    ).toBe(true);
  }, 60_000);
});

describe("with embeddings", () => {
  test("--tool-search-embeddings blends the endpoint in, with the key from --tool-search-embeddings-key-secret", async () => {
    const key = "embeddings-key-value";
    const embeddings = startEmbeddingServer({ apiKey: key });
    try {
      const blended = await group.gatewayWithEnv(
        { MCPMGR_SECRETS_PROVIDER: "environment", MCPMGR_SECRET_EMBEDDINGS_KEY: key },
        "finders",
        "--tool-search",
        "--tool-search-embeddings",
        embeddings.url,
        "--tool-search-embeddings-model",
        "fixture-model",
        "--tool-search-embeddings-key-secret",
        "embeddings-key",
      );
      const client = await connect(blended.url);
      // No word of the query is in the tool's text: only the embeddings can find it.
      expect(await find(client, "automobile hire", 1)).toEqual(["car-rental_rent_car"]);
      expect(embeddings.requests.length).toBeGreaterThan(0);
      expect(embeddings.requests.every((r) => r.authorization === `Bearer ${key}` && r.model === "fixture-model")).toBe(
        true,
      );
      // The endpoint failing: find_tool answers from the keywords alone, and the log says so without the key.
      embeddings.failing = true;
      expect(await find(client, "rent a car for a few days", 1)).toEqual(["car-rental_rent_car"]);
      expect(await until(() => blended.output().includes("find_tool answers from keywords alone"))).toBe(true);
      expect(blended.output()).not.toContain(key);
    } finally {
      await embeddings.stop();
    }
  });

  test("a key secret that does not exist stops the start with a clear error", async () => {
    const started = group
      .gatewayWithEnv(
        { MCPMGR_SECRETS_PROVIDER: "environment" },
        "finders",
        "--tool-search",
        "--tool-search-embeddings",
        "http://127.0.0.1:9/v1/embeddings",
        "--tool-search-embeddings-model",
        "m",
        "--tool-search-embeddings-key-secret",
        "no-such-key",
      )
      .then(
        () => "started",
        (err: unknown) => String(err),
      );
    const failure = await started;
    expect(failure).toContain("exited with 1 before it was ready");
    expect(failure).toContain("no-such-key");
    expect(failure).not.toContain("    at ");
  });
});
