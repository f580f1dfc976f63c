/** Tool search: SearchMode, the object the gateway plugs in (index, tools, instructions, find, call). */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { EmbeddingsClient } from "../../src/gateway/tool-search/embeddings.ts";
import { SearchMode } from "../../src/gateway/tool-search/search-mode.ts";
import { type EmbeddingServer, startEmbeddingServer } from "../fixtures/embedding-server.ts";

let server: EmbeddingServer;
beforeAll(() => {
  server = startEmbeddingServer();
});
afterAll(async () => {
  await server.stop();
});

const textOf = (result: { content: unknown }) => (result.content as { text: string }[])[0]?.text ?? "";

function garage(mode: SearchMode): SearchMode {
  mode.upsertWorkload("garage", "Vehicle services.", [
    { name: "rent_car", description: "Rent a car for some days.", inputSchema: { type: "object" } },
    {
      name: "wash_car",
      description: "Book a car wash.",
      inputSchema: { type: "object", properties: { plate: { type: "string" } }, required: ["plate"] },
    },
  ]);
  return mode;
}

test("lists the two tools, answers find_tool and call_tool for a caller's policy, follows the workloads", async () => {
  const mode = garage(new SearchMode());
  expect(mode.tools().map((tool) => tool.name)).toEqual(["find_tool", "call_tool"]);
  expect(mode.instructions()).toContain('garage "Vehicle services"');

  const found = await mode.find({ query: "wash my car", limit: 1 });
  expect(textOf(found)).toContain("1. garage_wash_car");
  const filtered = await mode.find({ query: "wash my car", limit: 1 }, (name) => name !== "garage_wash_car");
  expect(textOf(filtered)).toContain("1. garage_rent_car");
  expect((await mode.find({})).isError).toBe(true);

  const call = mode.prepareCall({ name: "garage_wash_car", arguments: { plate: "AB-123" } });
  expect(call.ok && call.target.tool.name).toBe("wash_car");
  const bad = mode.prepareCall({ name: "garage_wash_car", arguments: {} });
  expect(bad.ok ? "" : textOf(bad.result)).toContain('missing required argument "plate"');

  mode.removeWorkload("garage");
  expect(textOf(await mode.find({ query: "wash my car" }))).toStartWith("No tool matches");
  expect(mode.instructions()).toContain("no running workloads");
});

test("with embeddings, find_tool uses the blend", async () => {
  const keywordOnly = garage(new SearchMode());
  const blended = garage(
    new SearchMode({ embeddings: { client: new EmbeddingsClient({ url: server.url, model: "m" }) } }),
  );
  expect(textOf(await keywordOnly.find({ query: "automobile hire" }))).toStartWith("No tool matches");
  expect(textOf(await blended.find({ query: "automobile hire", limit: 1 }))).toContain("1. garage_rent_car");
});
