/**
 * `x-mcp-header` (MCP 2026-07-28, Streamable HTTP "custom headers from tool parameters"): a
 * tool's input schema may ask for some arguments to be mirrored into `Mcp-Param-{Name}`
 * headers. Both sides of mcpmgr read the declarations here: as the HTTP client, `proxy stdio`
 * learns them from the `tools/list` results it relays, mirrors them on `tools/call`, and — as
 * the revision requires of an HTTP client — leaves out of the list any tool whose declarations
 * break the rules (a warning says which and why), so the stdio client never calls a tool the
 * remote could not check; as an HTTP server, the headers of each call are checked against
 * them (checkParamHeaders) by the bridge in front of a stdio server (stdio-bridge/param-headers.ts)
 * and by the group gateway's front end (gateway/param-headers.ts).
 */
import { isObject } from "../objects.ts";

export interface HeaderDeclaration {
  /** The chain of `properties` keys leading to the annotated property. */
  readonly path: readonly string[];
  /** The name part of `Mcp-Param-{Name}`. */
  readonly header: string;
  /** The property's JSON type: integers are compared by value, everything else as text. */
  readonly type: "string" | "integer" | "boolean";
}

export type HeaderScan =
  | { readonly valid: true; readonly declarations: readonly HeaderDeclaration[] }
  | { readonly valid: false; readonly reason: string };

/** RFC 9110 field-name token (1*tchar): no spaces, delimiters, control or non-ASCII characters. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const PRIMITIVE = new Set(["string", "integer", "boolean"]);
/** Keywords whose subschemas are not reachable through `properties` alone: a declaration under them is invalid. */
const UNREACHABLE = [
  "items",
  "prefixItems",
  "contains",
  "additionalProperties",
  "unevaluatedProperties",
  "unevaluatedItems",
  "propertyNames",
  "patternProperties",
  "dependentSchemas",
  "oneOf",
  "anyOf",
  "allOf",
  "not",
  "if",
  "then",
  "else",
  "$defs",
  "definitions",
];
const MAPS = new Set(["patternProperties", "dependentSchemas", "$defs", "definitions"]);

/**
 * A primitive argument as header text (strings as they are, integers in decimal, booleans
 * lowercase); undefined: no header — also for an integer outside the range the revision
 * allows (JavaScript's safe integers).
 */
export function argumentText(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "number" && Number.isFinite(value) && !(Number.isInteger(value) && !Number.isSafeInteger(value)))
    return String(value);
  return undefined;
}

/** The argument at a declaration's path (undefined when a step is missing). */
export function argumentAt(args: unknown, path: readonly string[]): unknown {
  let node = args;
  for (const key of path) node = isObject(node) ? node[key] : undefined;
  return node;
}

export function scanToolHeaders(inputSchema: unknown): HeaderScan {
  const declarations: HeaderDeclaration[] = [];
  const seen = new Map<string, string>();
  const where = (path: readonly string[]) => (path.length === 0 ? "the schema root" : path.join("."));
  const visit = (node: unknown, path: string[], reachable: boolean): string | undefined => {
    if (!isObject(node)) return undefined;
    if ("x-mcp-header" in node) {
      const header = node["x-mcp-header"];
      if (!reachable || path.length === 0)
        return `${where(path)}: x-mcp-header is allowed only on properties reached through 'properties' alone`;
      if (typeof header !== "string" || header === "") return `${where(path)}: x-mcp-header is empty`;
      if (!TOKEN.test(header))
        return `${where(path)}: x-mcp-header ${JSON.stringify(header)} is not a header name token`;
      const type = node.type;
      if (typeof type !== "string" || !PRIMITIVE.has(type))
        return `${where(path)}: x-mcp-header is allowed on string, integer and boolean properties only (not ${JSON.stringify(type ?? "untyped")})`;
      const prior = seen.get(header.toLowerCase());
      if (prior !== undefined) return `x-mcp-header ${JSON.stringify(header)} repeats ${JSON.stringify(prior)}`;
      seen.set(header.toLowerCase(), header);
      declarations.push({ path: [...path], header, type: type as HeaderDeclaration["type"] });
    }
    if (isObject(node.properties))
      for (const [key, child] of Object.entries(node.properties)) {
        const fault = visit(child, [...path, key], reachable);
        if (fault) return fault;
      }
    for (const keyword of UNREACHABLE) {
      const sub = node[keyword];
      if (sub === undefined) continue;
      const branches = Array.isArray(sub) ? sub : MAPS.has(keyword) && isObject(sub) ? Object.values(sub) : [sub];
      for (const branch of branches) {
        const fault = visit(branch, [...path, `<${keyword}>`], false);
        if (fault) return fault;
      }
    }
    return undefined;
  };
  const fault = visit(inputSchema, [], true);
  return fault === undefined ? { valid: true, declarations } : { valid: false, reason: fault };
}

/** What the relay learned from `tools/list`: per tool, the arguments to mirror. */
export class ToolHeaderRegistry {
  readonly #declarations = new Map<string, readonly HeaderDeclaration[]>();
  /** Every tool a list named, those left out included. */
  readonly #listed = new Set<string>();

  /**
   * Learns a `tools/list` result and leaves out the tools with invalid declarations; returns
   * the result to relay and one warning per tool left out. Results of another shape pass as they are.
   */
  learn(result: unknown): { result: unknown; excluded: string[] } {
    if (!isObject(result) || !Array.isArray(result.tools)) return { result, excluded: [] };
    const excluded: string[] = [];
    const tools = result.tools.filter((tool: unknown) => {
      if (!isObject(tool) || typeof tool.name !== "string") return true;
      this.#listed.add(tool.name);
      const scan = scanToolHeaders(tool.inputSchema);
      if (scan.valid) {
        this.#declarations.set(tool.name, scan.declarations);
        return true;
      }
      this.#declarations.delete(tool.name);
      excluded.push(`tool ${JSON.stringify(tool.name)} left out of tools/list: ${scan.reason}`);
      return false;
    });
    return excluded.length === 0 ? { result, excluded } : { result: { ...result, tools }, excluded };
  }

  /** Whether a tools/list named this tool (so its declarations, if any, are known). */
  knows(tool: unknown): boolean {
    return typeof tool === "string" && this.#listed.has(tool);
  }

  declarationsOf(tool: unknown): readonly HeaderDeclaration[] {
    return typeof tool === "string" ? (this.#declarations.get(tool) ?? []) : [];
  }
}

/** -32020 HeaderMismatch (MCP 2026-07-28): what a server answers, with HTTP 400, to headers that disagree with the body. */
export const HEADER_MISMATCH = -32020;

/** Why a call's `Mcp-Param-*` headers are refused: an HTTP status with a JSON-RPC error. */
export interface ParamHeaderRefusal {
  readonly status: number;
  readonly code: number;
  readonly message: string;
}

const SENTINEL_PREFIX = "=?base64?";
const SENTINEL_SUFFIX = "?=";
/** Base64 as the revision's encoding produces it: the standard alphabet, padded. */
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** What a header value may carry as it is: visible ASCII, space and tab (RFC 9110 field values). */
const PLAIN_VALUE = /^[\x20-\x7e\t]*$/;
/** An integer as text, `42.0` included: the revision compares integers by value. */
const DECIMAL_INTEGER = /^-?\d+(?:\.0+)?$/;

/**
 * A header's value as the client meant it (`Mcp-Param-*`, `Mcp-Name`): the Base64 sentinel form decoded
 * (canonical Base64 of UTF-8 only), else the value as it is when it is plain; undefined when it is malformed.
 */
export function decodeHeaderValue(value: string): string | undefined {
  if (value.length >= SENTINEL_PREFIX.length + SENTINEL_SUFFIX.length) {
    if (value.startsWith(SENTINEL_PREFIX) && value.endsWith(SENTINEL_SUFFIX)) {
      const encoded = value.slice(SENTINEL_PREFIX.length, -SENTINEL_SUFFIX.length);
      if (!CANONICAL_BASE64.test(encoded)) return undefined;
      try {
        return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.from(encoded, "base64"));
      } catch {
        return undefined;
      }
    }
  }
  return PLAIN_VALUE.test(value) ? value : undefined;
}

/**
 * The revision's table: an argument with a value needs its header, equal after decoding; a
 * null or absent argument needs none (a header sent anyway is ignored, as is any header no
 * declaration names).
 */
export function checkParamHeaders(
  headers: Headers,
  args: unknown,
  declarations: readonly HeaderDeclaration[],
): ParamHeaderRefusal | undefined {
  for (const declaration of declarations) {
    const name = `Mcp-Param-${declaration.header}`;
    const where = `arguments.${declaration.path.join(".")}`;
    const value = argumentAt(args, declaration.path);
    if (value === undefined || value === null) continue;
    const text = argumentText(value);
    if (text === undefined) continue; // not a primitive: the server's own schema check refuses it
    const raw = headers.get(name);
    if (raw === null) return mismatch(`the ${name} header is required: the body carries ${where}`);
    const decoded = decodeHeaderValue(raw);
    if (decoded === undefined) return mismatch(`the ${name} header is not valid (plain visible ASCII or =?base64?…?=)`);
    const equal =
      declaration.type === "integer" && typeof value === "number" && DECIMAL_INTEGER.test(decoded)
        ? Number(decoded) === value
        : decoded === text;
    if (!equal) return mismatch(`the ${name} header does not match the body's ${where}`);
  }
  return undefined;
}

function mismatch(why: string): ParamHeaderRefusal {
  return { status: 400, code: HEADER_MISMATCH, message: `Header mismatch: ${why}` };
}
