/**
 * Names that are also keys of every JavaScript object (`constructor`, `prototype`, `__proto__`),
 * chosen by users for tools, variables and labels. valibot's record left them out at every read
 * without a word: a tool override of such a tool was dropped, a workload's variable or label of
 * that name was gone at its next start. Real files through the real readers.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as v from "valibot";
import { namedRecord } from "../../src/config/named-record.ts";
import { toolsPolicy } from "../../src/config/tools-policy.ts";
import { serverJsonSchema, serverJsonToEntry } from "../../src/registry/server-json.ts";
import { resolvePaths } from "../../src/state/paths.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "mcpmgr-named-record-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test("a tools override of tools named constructor and prototype is kept", () => {
  const file = join(dir, "override.json");
  writeFileSync(
    file,
    JSON.stringify({
      toolsOverride: { constructor: { name: "build" }, prototype: { description: "a draft" }, echo: { name: "say" } },
    }),
  );
  const policy = toolsPolicy([], file);
  expect([...(policy?.overrides.keys() ?? [])]).toEqual(["constructor", "prototype", "echo"]);
  expect(policy?.realNames.get("build")).toBe("constructor");
});

test("a workload's variables and labels named constructor and prototype are read back from its record", async () => {
  const paths = resolvePaths({ MCPMGR_HOME: dir });
  await new WorkloadStore(paths).create({
    name: "everything",
    source: { kind: "package", ref: "npx://@modelcontextprotocol/server-everything" },
    transport: "stdio",
    proxyPort: 40_100,
    runtime: "process",
    env: { constructor: "1", prototype: "2", DEBUG: "3" },
    labels: { constructor: "a", team: "b" },
  });
  const read = await new WorkloadStore(paths).get("everything");
  expect({ ...read?.env }).toEqual({ constructor: "1", prototype: "2", DEBUG: "3" });
  expect({ ...read?.labels }).toEqual({ constructor: "a", team: "b" });
  expect(Object.isFrozen(read?.env)).toBe(true);
});

test("a registry entry's argument variable named constructor fills its placeholder", () => {
  const doc = v.parse(serverJsonSchema, {
    name: "io.github.example/server",
    description: "an example",
    packages: [
      {
        registryType: "npm",
        identifier: "example-server",
        version: "1.0.0",
        transport: { type: "stdio" },
        packageArguments: [
          { type: "positional", value: "--mode={constructor}", variables: { constructor: { default: "fast" } } },
        ],
      },
    ],
  });
  expect(serverJsonToEntry(doc).args).toEqual(["--mode=fast"]);
});

test("issues keep valibot's paths, and every key is kept, __proto__ too, in an object without a prototype", () => {
  const schema = v.object({ tools: namedRecord(v.pipe(v.string(), v.regex(/^[a-z_]+$/, "bad name")), v.number()) });
  const parsed = v.parse(schema, JSON.parse('{"tools": {"__proto__": 1, "constructor": 2, "x": 3}}'));
  expect(Object.getPrototypeOf(parsed.tools)).toBeNull();
  expect(Object.keys(parsed.tools)).toEqual(["__proto__", "constructor", "x"]);
  const bad = v.safeParse(schema, { tools: { prototype: "one", "B C": 2 } });
  expect(bad.issues?.map((issue) => `${v.getDotPath(issue)}: ${issue.message}`)).toEqual([
    expect.stringMatching(/^tools\.prototype: Invalid type/),
    "tools.B C: bad name",
  ]);
});
