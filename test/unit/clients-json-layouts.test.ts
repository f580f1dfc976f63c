/**
 * JSON and JSONC client files in layouts people (and formatters) leave behind: trailing commas on one
 * line, comments between any two tokens, CRLF, objects split oddly across lines. Two workloads' entries
 * are added, one follows its workload to another port, both go in either order: the file must read the
 * same as before with the entries in it at every step, and be byte for byte what it was at the end.
 * Found by the generator below (review clientred73): a one-line object with a trailing comma kept a
 * space where mcpmgr's entry had been (`{"x": 1,}` came back `{"x": 1, }`), and the last entry on the
 * line of a comment left the object on new lines. Real files in a temporary HOME, through the sync.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { type ParseError, parse } from "jsonc-parser";
import { clientById } from "../../src/clients/catalog.ts";
import type { ClientConfigSync } from "../../src/clients/sync.ts";
import { type ClientHome, clientSyncPerTest, localEndpoint } from "../support/client-home.ts";

setDefaultTimeout(60_000);

let h: ClientHome;
let sync: ClientConfigSync;
clientSyncPerTest((fresh) => ({ h, sync } = fresh));

const fetch41001 = localEndpoint("fetch", 41001);
const docs41003 = localEndpoint("docs", 41003);

function read(path: string): { servers: Record<string, unknown>; rest: Record<string, unknown> } {
  const errors: ParseError[] = [];
  const { mcpServers = {}, ...rest } = parse(readFileSync(path, "utf8"), errors, { allowTrailingComma: true }) ?? {};
  expect(errors).toEqual([]);
  return { servers: mcpServers, rest };
}

/** Adds both entries, moves fetch, removes them in `order`; every step checked. */
async function roundTrip(seed: string, order: readonly string[]): Promise<void> {
  const path = clientById("cursor").configPath(h.ctx);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, seed);
  const errors: ParseError[] = [];
  const { mcpServers: before = {}, ...rest } = parse(seed, errors, { allowTrailingComma: true }) ?? {};
  await sync.registerClient("cursor", "default", [fetch41001, docs41003]);
  expect(read(path)).toEqual({
    servers: { ...before, fetch: { url: fetch41001.url }, docs: { url: docs41003.url } },
    rest,
  });
  await sync.onWorkloadStarted(localEndpoint("fetch", 41002));
  expect(read(path).servers.fetch).toEqual({ url: "http://127.0.0.1:41002/mcp" });
  await sync.onWorkloadStopped({ name: order[0] as string });
  expect(Object.keys(read(path).servers)).not.toContain(order[0]);
  await sync.onWorkloadStopped({ name: order[1] as string });
  expect(readFileSync(path, "utf8")).toBe(seed);
  expect(h.warnings).toEqual([]);
}

describe("found by the generator", () => {
  test.each([
    ["a one-line object with a trailing comma", '{\t// c\n"x":1,  }\n'],
    ["its closing brace after a trailing comma on the value's line", '\r\n{"x"\t\n    :  1,} // trailing\n\r\n\n'],
    [
      "servers after a trailing comma, on one line",
      '{"mcpServers": {"a": {"command": "x"},\t\n    }, "theme": "dark"}\n',
    ],
    ["an empty servers object holding comments", '{"mcpServers"\r\n\n    :\t{  /* multi\n line *//* b */}\r\n}\n'],
  ])("%s", async (_name, seed) => {
    await roundTrip(seed, ["fetch", "docs"]);
  });
});

test("generated layouts: comments, line breaks and trailing commas between any two tokens", async () => {
  let state = 20261127;
  const random = () => {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    return state / 0x7fffffff;
  };
  const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)] as T;
  const gaps = [" ", "\t", "\n", "\r\n", "\n    ", "// c\n", "/* b */", "/* two\n lines */", " // trailing\n"];
  const gap = () => Array.from({ length: Math.floor(random() * 3) }, () => pick(gaps)).join("");
  const comma = (count: number) => (count > 0 && random() < 0.3 ? "," : "");
  const render = (value: unknown): string => {
    if (Array.isArray(value))
      return `[${gap()}${value.map(render).join(`${gap()},${gap()}`)}${comma(value.length)}${gap()}]`;
    if (typeof value !== "object" || value === null) return JSON.stringify(value);
    const pairs = Object.entries(value).map(([key, item]) => `${JSON.stringify(key)}${gap()}:${gap()}${render(item)}`);
    return `{${gap()}${pairs.join(`${gap()},${gap()}`)}${comma(pairs.length)}${gap()}}`;
  };
  const shapes = [
    { mcpServers: { a: { command: "x" } }, theme: "dark" },
    { mcpServers: {} },
    { other: [1, 2], mcpServers: { a: { url: "u" }, b: { command: "y", args: ["1"] } } },
    { x: 1 },
  ];
  for (let round = 0; round < 120; round++) {
    const seed = `${gap()}${render(pick(shapes))}${gap()}${random() < 0.7 ? "\n" : ""}`;
    await roundTrip(seed, random() < 0.5 ? ["fetch", "docs"] : ["docs", "fetch"]);
    await sync.removeClient("cursor");
  }
});
