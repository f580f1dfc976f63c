/**
 * registry.list() order: case-insensitive, then by code point, the same on every machine
 * (it used to be localeCompare, which follows the user's locale).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadRegistry } from "../../src/registry/loader.ts";

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "mcpmgr-registry-order-"));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

test("custom entries sort among the embedded ones by lower-cased name, then exactly", async () => {
  const names = ["zz-last", "Zz-Last", "AAA-first", "aaa_first", "aaa-first", "aaa9"];
  const file = join(scratch, "registry.json");
  const entry = (name: string) => ({
    name,
    description: "order test",
    transport: "stdio",
    source: { uvx: "mcp-server-time" },
    permissions: "none",
    tools: ["get_current_time"],
  });
  await writeFile(file, JSON.stringify({ servers: names.map(entry) }));
  const registry = await loadRegistry({ env: { MCPMGR_REGISTRY: file } });
  const listed = registry
    .list()
    .map((e) => e.name)
    .filter((name) => names.includes(name));
  expect(listed).toEqual(["AAA-first", "aaa-first", "aaa9", "aaa_first", "Zz-Last", "zz-last"]);
  const all = registry.list().map((e) => e.name.toLowerCase());
  expect(all).toEqual([...all].sort());
});
