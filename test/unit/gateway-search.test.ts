/**
 * Search mode's two gateway pieces in process: the call_tool rewrite before the policies
 * (gateway/call-tool-rewrite.ts) and the index fed from the catalog's view under the names
 * clients see, with the caller's policy (gateway/search.ts).
 */
import { describe, expect, test } from "bun:test";
import { toolsPolicy } from "../../src/config/tools-policy.ts";
import { callToolRewrite } from "../../src/gateway/call-tool-rewrite.ts";
import { merge, type WorkloadLists } from "../../src/gateway/catalog.ts";
import { GatewaySearch, REINDEX_SPACING_MS } from "../../src/gateway/search.ts";
import { SearchMode } from "../../src/gateway/tool-search/search-mode.ts";
import { readRpcBody } from "../../src/middleware/rpc-body.ts";
import { compose, detachedContext } from "../../src/proxy/handler.ts";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const object = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: "object",
  properties,
  required,
});

function lists(tools: Record<string, unknown>[]): WorkloadLists {
  return { tools, prompts: [], resources: [], resourceTemplates: [] };
}

const garage = lists([
  { name: "wash_car", description: "Book a car wash.", inputSchema: object({ plate: { type: "string" } }, ["plate"]) },
  { name: "rent_car", description: "Rent a car for some days.", inputSchema: object({ days: { type: "integer" } }) },
]);
const kitchen = lists([
  { name: "bake_cake", description: "Bake a cake.", inputSchema: object({}) },
  { name: "wash_car", description: "The kitchen also washes cars.", inputSchema: object({}) },
]);

const textOf = (result: unknown) => ((result as { content: { text: string }[] }).content[0] as { text: string }).text;
const names = (result: unknown) =>
  ((result as { structuredContent: { tools: { name: string }[] } }).structuredContent.tools ?? []).map((t) => t.name);

describe("the call_tool rewrite", () => {
  const known = new Set(["garage_wash_car"]);
  async function through(body: unknown, headers: Record<string, string> = {}) {
    const search = new GatewaySearch({ mode: new SearchMode(), log: () => {} });
    let seen: { text: string; headers: Headers; marks: ReadonlyMap<unknown, string> | undefined } | undefined;
    const handler = compose(
      async (req) => {
        const parsed = await readRpcBody(req);
        seen = { text: parsed?.text ?? "", headers: req.headers, marks: search.calls.get(req) };
        return new Response("{}");
      },
      callToolRewrite((name) => known.has(name), search.calls),
    );
    await handler(
      new Request("http://127.0.0.1/mcp", {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: typeof body === "string" ? body : JSON.stringify(body),
      }),
      detachedContext(),
    );
    return seen as NonNullable<typeof seen>;
  }
  const call = (id: number | undefined, args: unknown, extra: Record<string, unknown> = {}) => ({
    jsonrpc: "2.0",
    ...(id !== undefined ? { id } : {}),
    method: "tools/call",
    params: { name: "call_tool", arguments: args, ...extra },
  });

  test("a call_tool of a known tool becomes its direct call: same id, same _meta, marked with the name written", async () => {
    const seen = await through(
      call(7, { name: "garage_wash_car", arguments: { plate: "AB" } }, { _meta: { progressToken: "p" } }),
    );
    expect(JSON.parse(seen.text)).toEqual({
      jsonrpc: "2.0",
      id: 7,
      method: "tools/call",
      params: { _meta: { progressToken: "p" }, name: "garage_wash_car", arguments: { plate: "AB" } },
    });
    expect([...(seen.marks ?? [])]).toEqual([[7, "garage_wash_car"]]);
  });

  test("the 2026-07-28 Mcp-Name header follows the rewrite", async () => {
    const seen = await through(call(1, { name: "garage_wash_car" }), {
      "mcp-method": "tools/call",
      "mcp-name": "call_tool",
    });
    expect(seen.headers.get("mcp-name")).toBe("garage_wash_car");
    expect(JSON.parse(seen.text).params).toEqual({ name: "garage_wash_car" });
  });

  test("anything else is left for the gateway (or the policies) to answer, byte for byte", async () => {
    const cases: [unknown, Record<string, string>?][] = [
      [call(1, { name: "garage_nope", arguments: {} })], // unknown: the closest names come from the gateway
      [call(1, { name: "garage_wash_car", arguments: [1] })], // arguments not an object
      [call(1, "garage_wash_car")], // call_tool's own arguments not an object
      [call(undefined, { name: "garage_wash_car" })], // no id: nothing to answer
      [call(1, { name: "garage_wash_car" }), { "mcp-name": "other" }], // headers disagree: the policies refuse it
      [{ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "garage_wash_car", arguments: {} } }],
      ['{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"call_tool"}}'],
    ];
    for (const [body, headers] of cases) {
      const text = typeof body === "string" ? body : JSON.stringify(body);
      const seen = await through(body, headers);
      expect(seen.text).toBe(text);
      expect(seen.marks).toBeUndefined();
    }
  });

  test("in a batch each call_tool is rewritten, and every other entry kept", async () => {
    const seen = await through([call(1, { name: "garage_wash_car" }), call(2, { name: "garage_nope" }), 42]);
    const batch = JSON.parse(seen.text) as unknown[];
    expect(batch.map((entry) => (entry as { params?: { name: string } }).params?.name ?? entry)).toEqual([
      "garage_wash_car",
      "call_tool",
      42,
    ]);
    expect([...(seen.marks ?? [])]).toEqual([[1, "garage_wash_car"]]);
  });
});

describe("the index at the gateway", () => {
  const view = (mode: "always" | "when-needed" = "always") =>
    merge(
      [
        { workload: "garage", lists: garage, summary: "Vehicle services." },
        { workload: "kitchen", lists: kitchen, summary: "Food." },
      ],
      mode,
    );

  test("follows the catalog per workload, and finds the duplicate names as distinct tools", async () => {
    const mode = new SearchMode();
    const upserted: string[] = [];
    const upsert = mode.upsertWorkload.bind(mode);
    mode.upsertWorkload = (name, ...rest) => {
      upserted.push(name);
      upsert(name, ...rest);
    };
    const search = new GatewaySearch({ mode, log: () => {} });
    search.update(view());
    expect(search.instructions(undefined)).toContain('kitchen "Food"');
    expect(names(await mode.find({ query: "wash car", limit: 2 })).sort()).toEqual([
      "garage_wash_car",
      "kitchen_wash_car",
    ]);
    // The same lists again: nothing is re-indexed.
    search.update(view());
    expect(upserted).toEqual(["garage", "kitchen"]);
    // One workload leaves: only it goes.
    search.update(merge([{ workload: "garage", lists: garage, summary: "Vehicle services." }], "always"));
    expect(upserted).toEqual(["garage", "kitchen"]);
    expect(names(await mode.find({ query: "bake a cake" }))).toEqual([]);
    expect(search.instructions(undefined)).not.toContain("kitchen");
    expect(search.isTool("kitchen_bake_cake")).toBe(false);
  });

  test("a workload changed again within a second is re-indexed once, a second after the last time, with its latest list", async () => {
    const mode = new SearchMode();
    const upserted: string[] = [];
    const upsert = mode.upsertWorkload.bind(mode);
    mode.upsertWorkload = (name, ...rest) => {
      upserted.push(name);
      upsert(name, ...rest);
    };
    const search = new GatewaySearch({ mode, log: () => {} });
    const garageWith = (...extra: string[]) =>
      lists([
        ...garage.tools,
        ...extra.map((name) => ({ name, description: `${name} a car.`, inputSchema: object({}) })),
      ]);
    search.update(merge([{ workload: "garage", lists: garage, summary: "Vehicle services." }], "always"));
    const indexedAt = Date.now();
    // Two changes in a row (a workload that changes its list without pause), and a workload that joins.
    search.update(
      merge([{ workload: "garage", lists: garageWith("park_car"), summary: "Vehicle services." }], "always"),
    );
    search.update(
      merge(
        [
          { workload: "garage", lists: garageWith("park_car", "tow_car"), summary: "Vehicle services." },
          { workload: "kitchen", lists: kitchen, summary: "Food" },
        ],
        "always",
      ),
    );
    // The newcomer at once; the changed workload not yet.
    expect(upserted).toEqual(["garage", "kitchen"]);
    expect(names(await mode.find({ query: "tow car" }))).not.toContain("garage_tow_car");
    while (upserted.length < 3 && Date.now() - indexedAt < 5_000) await Bun.sleep(20);
    expect(Date.now() - indexedAt).toBeGreaterThanOrEqual(REINDEX_SPACING_MS - 50);
    expect(upserted).toEqual(["garage", "kitchen", "garage"]);
    expect(names(await mode.find({ query: "tow car" }))).toContain("garage_tow_car");
  });

  test("a re-index put off to the end of the second that fails is logged, never thrown where nothing catches it", async () => {
    const mode = new SearchMode();
    const upsert = mode.upsertWorkload.bind(mode);
    let calls = 0;
    mode.upsertWorkload = (name, ...rest) => {
      calls += 1;
      if (calls === 2) throw new RangeError("the list is more than the index can take");
      upsert(name, ...rest);
    };
    const logged: string[] = [];
    const search = new GatewaySearch({ mode, log: (_level, text) => logged.push(text) });
    const garageWith = (name: string) =>
      lists([...garage.tools, { name, description: `${name} a car.`, inputSchema: object({}) }]);
    search.update(merge([{ workload: "garage", lists: garage, summary: "Vehicle services." }], "always"));
    search.update(
      merge([{ workload: "garage", lists: garageWith("park_car"), summary: "Vehicle services." }], "always"),
    );
    const since = Date.now();
    while (logged.length === 0 && Date.now() - since < 5_000) await Bun.sleep(20);
    expect(logged).toEqual([
      "tool search: the index was not brought up to date: the list is more than the index can take",
    ]);
    // The next change is indexed as usual.
    search.update(
      merge([{ workload: "garage", lists: garageWith("tow_car"), summary: "Vehicle services." }], "always"),
    );
    expect(names(await mode.find({ query: "tow car" }))).toContain("garage_tow_car");
  });

  test("indexes the names the gateway gives (--name-prefix when-needed)", async () => {
    const mode = new SearchMode();
    const search = new GatewaySearch({ mode, log: () => {} });
    search.update(view("when-needed"));
    expect(names(await mode.find({ query: "bake a cake", limit: 1 }))).toEqual(["bake_cake"]);
    expect(search.isTool("bake_cake")).toBe(true);
    expect(search.isTool("garage_wash_car")).toBe(true);
  });

  test("shows tools as --tools and --tools-override show them; Cedar is asked with the real name", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mcpmgr-gateway-search-"));
    try {
      const overrides = join(dir, "overrides.json");
      writeFileSync(
        overrides,
        JSON.stringify({
          toolsOverride: { garage_rent_car: { name: "hire_vehicle", description: "Hire a vehicle." } },
        }),
      );
      const asked: string[] = [];
      const mode = new SearchMode();
      const search = new GatewaySearch({
        mode,
        tools: toolsPolicy(["garage_rent_car", "garage_wash_car", "kitchen_bake_cake"], overrides),
        mayCall: (_req, tool) => {
          asked.push(tool);
          return tool !== "kitchen_bake_cake";
        },
        log: () => {},
      });
      search.update(view());
      const req = new Request("http://127.0.0.1/mcp");
      const found = await search.answer(
        { name: "find_tool", arguments: { query: "hire a vehicle", limit: 1 } },
        req,
        1,
      );
      expect(names(found)).toEqual(["hire_vehicle"]);
      expect(textOf(found)).toContain("Hire a vehicle.");
      expect(asked).toContain("garage_rent_car");
      expect(search.isTool("hire_vehicle")).toBe(true);
      expect(search.isTool("garage_rent_car")).toBe(false);
      // Hidden by --tools (kitchen_wash_car) or by Cedar (kitchen_bake_cake): not found, not suggested.
      expect(names(await search.answer({ name: "find_tool", arguments: { query: "bake cake wash" } }, req, 2))).toEqual(
        ["garage_wash_car"],
      );
      expect(search.instructions(req)).not.toContain("kitchen");
      const unknown = await search.answer({ name: "call_tool", arguments: { name: "kitchen_bake_cake" } }, req, 3);
      expect(textOf(unknown)).toStartWith('No tool named "kitchen_bake_cake".');
      expect(textOf(unknown)).not.toContain("Closest names: kitchen");
      // Without the request there is no caller to decide for: nothing is found.
      expect(names(await search.answer({ name: "find_tool", arguments: { query: "wash car" } }, undefined, 4))).toEqual(
        [],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("checks a rewritten call's arguments against the real inputSchema, worded with the name written", async () => {
    const search = new GatewaySearch({ mode: new SearchMode(), log: () => {} });
    search.update(view());
    const req = new Request("http://127.0.0.1/mcp");
    search.calls.set(req, new Map([[9, "garage_wash_car"]]));
    const wrong = await search.answer({ name: "garage_wash_car", arguments: { plate: 1 } }, req, 9);
    expect(textOf(wrong)).toBe(
      'Arguments do not match the inputSchema of garage_wash_car: "plate" must be of type string, not number.',
    );
    expect(await search.answer({ name: "garage_wash_car", arguments: { plate: "AB" } }, req, 9)).toBeUndefined();
    // A direct call (not rewritten) is the workload's to judge.
    expect(await search.answer({ name: "garage_wash_car", arguments: { plate: 1 } }, req, 10)).toBeUndefined();
  });

  test("a group tool named like a search tool is left out, with a warning", async () => {
    const warnings: string[] = [];
    const mode = new SearchMode();
    const search = new GatewaySearch({ mode, log: (_level, text) => warnings.push(text) });
    search.update(merge([{ workload: "find", lists: lists([{ name: "tool", inputSchema: object({}) }]) }], "always"));
    expect(search.isTool("find_tool")).toBe(false);
    expect(mode.index.toolCount).toBe(0);
    expect(warnings.join("\n")).toContain("find_tool");
  });
});
