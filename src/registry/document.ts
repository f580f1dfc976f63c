/**
 * A custom registry document (already JSON-parsed) → validated entries. Accepted shapes:
 *   {"servers": [entry, ...]}          our compact form (entries as in schema.ts)
 *   {"servers": [{"server": {...}}]}   an MCP registry API listing (server.json wrapped, with _meta)
 *   [server.json, ...]                 a list of server.json documents (wrapped or not)
 *   {server.json}                      a single server.json document
 *   {"any-key": server.json, ...}      an object whose values are server.json documents
 * Compact entries and server.json documents may be mixed; an item is a compact entry when it
 * has `source` or `transport` at its top level (server.json keeps transport inside packages).
 * Every error names the document and the field: `servers[3].transport: must be one of ...`.
 */
import * as v from "valibot";
import { McpmgrError } from "../errors.ts";
import { describeIssues } from "./issues.ts";
import { registryEntrySchema, type RegistryEntry } from "./schema.ts";
import { serverJsonSchema, serverJsonToEntry, UnrunnableServerError } from "./server-json.ts";
import { isObject } from "../objects.ts";

export interface DocumentContext {
  /** Names the document in errors: a file path or URL. */
  readonly origin: string;
  /** What to do about an invalid document (where it was configured, how to stop using it). */
  readonly hint: string;
}

interface Item {
  readonly value: unknown;
  readonly path: string;
}

const OFFICIAL_META = "io.modelcontextprotocol.registry/official";

export function parseRegistryDocument(doc: unknown, context: DocumentContext): RegistryEntry[] {
  const fail = (detail: string): never => {
    throw new McpmgrError("REGISTRY_INVALID", `invalid registry ${context.origin}: ${detail}`, {
      hint: context.hint,
      exitCode: 2,
    });
  };

  const entries: RegistryEntry[] = [];
  const definedAt = new Map<string, string>();
  for (const item of _items(doc, fail)) {
    const unwrapped = _unwrap(item);
    if (unwrapped === undefined) continue;
    const entry = _parseItem(unwrapped, fail);
    const previous = definedAt.get(entry.name);
    if (previous !== undefined) {
      fail(
        `${_join(unwrapped.path, "name")}: "${entry.name}" is already defined by ${previous === "" ? "the document" : previous}`,
      );
    }
    definedAt.set(entry.name, unwrapped.path);
    entries.push(entry);
  }
  return entries;
}

function _items(doc: unknown, fail: (detail: string) => never): Item[] {
  if (Array.isArray(doc)) return doc.map((value, index) => ({ value, path: `[${index}]` }));
  if (!isObject(doc))
    return fail(`(top level): must be {"servers": [...]}, a server.json document, or a list of server.json documents`);
  if ("servers" in doc) {
    const servers = doc.servers;
    if (!Array.isArray(servers)) return fail("servers: must be a list of servers");
    return servers.map((value, index) => ({ value, path: `servers[${index}]` }));
  }
  if (typeof doc.name === "string" || isObject(doc.server)) return [{ value: doc, path: "" }];
  const values = Object.entries(doc);
  if (values.length === 0) return fail(`(top level): has no servers (expected {"servers": [...]})`);
  return values.map(([key, value]) => ({
    value,
    path: /^[A-Za-z_$][\w$]*$/.test(key) ? key : `[${JSON.stringify(key)}]`,
  }));
}

/** Registry API items wrap the document: {"server": {...}, "_meta": {...}}; superseded versions are skipped. */
function _unwrap(item: Item): Item | undefined {
  const value = item.value;
  if (!isObject(value) || "name" in value || !isObject(value.server)) return item;
  const meta = isObject(value._meta) ? value._meta[OFFICIAL_META] : undefined;
  if (isObject(meta) && meta.isLatest === false) return undefined;
  return { value: value.server, path: _join(item.path, "server") };
}

function _parseItem(item: Item, fail: (detail: string) => never): RegistryEntry {
  const value = item.value;
  if (!isObject(value)) return fail(`${item.path || "(top level)"}: must be an object describing a server`);

  if ("source" in value || "transport" in value) {
    const result = v.safeParse(registryEntrySchema, value);
    return result.success ? result.output : fail(describeIssues(result.issues, item.path));
  }

  const parsed = v.safeParse(serverJsonSchema, value);
  if (!parsed.success) return fail(describeIssues(parsed.issues, item.path));
  let converted: unknown;
  try {
    converted = serverJsonToEntry(parsed.output);
  } catch (err) {
    if (err instanceof UnrunnableServerError) return fail(`${_join(item.path, err.path)}: ${err.message}`);
    throw err;
  }
  const result = v.safeParse(registryEntrySchema, converted);
  if (result.success) return result.output;
  return fail(
    `${describeIssues(result.issues, item.path === "" ? "" : item.path)} (in the entry converted from server.json ${parsed.output.name})`,
  );
}

function _join(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
}
