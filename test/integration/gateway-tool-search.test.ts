/**
 * Search mode end to end (`mcpmgr gateway GROUP --tool-search`): real stdio workloads started by
 * `mcpmgr run` (the tools.json fixture: a weather server, a Chinese-described search server whose tool
 * shares its name with the weather server's, a notebook, later a calendar; and the bridge probe for
 * progress, cancellation, sampling and list changes), the SDK clients through the gateway's endpoint.
 * What the model sees, call_tool as a direct call, and the index following the group; the policies
 * and embeddings are in gateway-tool-search-policies.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { CreateMessageRequestSchema, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { PROBE_FIXTURE, type TestGroup, until } from "../support/gateway-group.ts";
import {
  callTool,
  createSearchGroup,
  echoed,
  find,
  SEARCH_GROUP,
  type SearchGroup,
  textOf,
} from "../support/tool-search-group.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let search: SearchGroup;
let gateway: Awaited<ReturnType<TestGroup["gateway"]>>;
const clients: { close(): Promise<void> }[] = [];
const connect = (capabilities?: Record<string, object>) => search.connect(gateway.url, undefined, capabilities);

beforeAll(async () => {
  search = await createSearchGroup(["weather", "baidu-search", "notes"]);
  search.group.run(await search.group.packageOf(PROBE_FIXTURE), "probe", SEARCH_GROUP);
  gateway = await search.group.gateway(SEARCH_GROUP, "--tool-search");
}, 180_000);

afterAll(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
  await search?.cleanup();
});

describe("what the model sees", () => {
  test("tools/list holds only find_tool and call_tool; the instructions say how, and what the group holds", async () => {
    const client = await connect();
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["find_tool", "call_tool"]);
    const instructions = client.getInstructions() ?? "";
    expect(instructions.split(/(?<=\.)\s+(?=[A-Z])/)).toHaveLength(2);
    expect(instructions).toContain("find_tool");
    expect(instructions).toContain("call_tool");
    expect(instructions).toContain('weather "Weather forecasts and severe weather alerts for cities worldwide"');
    expect(instructions).toContain('baidu-search "百度网页搜索服务"');
  });

  test("find_tool finds a tool by a paraphrase of its description, with its full inputSchema", async () => {
    const client = await connect();
    const result = await client.callTool({
      name: "find_tool",
      arguments: { query: "remove one of my notes for good", limit: 1 },
    });
    expect(await find(client, "remove one of my notes for good", 1)).toEqual(["notes_delete_note"]);
    expect(textOf(result)).toContain("1. notes_delete_note\nDelete a note permanently, given its id.");
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
  });

  test("progress, cancellation and sampling work through call_tool as through a direct call", async () => {
    const client = await connect({ sampling: {} });
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
    const probeStats = async () =>
      JSON.parse(textOf(await client.callTool({ name: "probe_stats", arguments: {} }))) as {
        aborted: unknown[];
        sleeping: number;
      };
    // Cancelled once it has reached the workload (before that, there is nothing upstream to cancel).
    expect(await until(async () => (await probeStats()).sleeping === 1)).toBe(true);
    abort.abort();
    await expect(call).rejects.toThrow();
    expect(await until(async () => (await probeStats()).aborted.length === 1)).toBe(true);
  });

  test("a 2026-07-28 client (stateless, Mcp-Name header) finds and calls through the search tools", async () => {
    const client = new ModernClient(
      { name: "modern", version: "1.0.0" },
      { versionNegotiation: { mode: { pin: "2026-07-28" } } },
    );
    await client.connect(new ModernTransport(new URL(gateway.url)));
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

describe("the index follows the group", () => {
  test("a workload that joins becomes findable, and callable through call_tool", async () => {
    const client = await connect();
    expect(await find(client, "add an event to my calendar", 20)).not.toContain("calendar_add_event");
    await search.run("calendar");
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
    const client = await connect();
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
    expect(search.group.mcpmgr("stop", "calendar").code).toBe(0);
    expect(
      await until(async () => !(await find(client, "add an event to my calendar", 20)).includes("calendar_add_event")),
    ).toBe(true);
  }, 60_000);
});
