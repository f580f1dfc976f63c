/**
 * JSON text as the bridge reads it, from clients and from the server: parsed once, with
 * two guards. Nesting is bounded before parsing (a 200 KB body nested 100,000 levels deep
 * must be refused with a clear answer, not overflow the stack later, half-way through
 * handling it); and integers beyond 2^53 keep their exact digits (as raw JSON), so the
 * message the bridge re-serialises after rewriting its id carries the values it received.
 * A client whose body fails either guard gets one answer from both front ends (`refusedBody`).
 */
import { JsonRpcCode, jsonRpcError } from "../jsonrpc.ts";

/** Deeper than any real MCP message; far below what overflows the stack. */
export const maxJsonDepth = 256;

/** A run of digits JSON.parse may not hold exactly; cheap to test, rare in MCP traffic. */
const longDigits = /\d{16}/;
const jsonWithRaw = JSON as typeof JSON & { rawJSON(text: string): unknown };

function exactIntegers(_key: string, value: unknown, context?: { source?: string }): unknown {
  if (typeof value !== "number" || Number.isSafeInteger(value) || context?.source === undefined) return value;
  return /^-?\d+$/.test(context.source) ? jsonWithRaw.rawJSON(context.source) : value;
}

/** Whether the text may hold an integer JSON.parse cannot hold exactly (then parseExactJson keeps it as raw JSON). */
export function mayHoldLongIntegers(text: string): boolean {
  return longDigits.test(text);
}

/**
 * JSON.parse with integers beyond 2^53 kept exact (throws on text that is not JSON); also the chain's
 * (middleware/rpc-body.ts) and the gateway's relay for a member's answer (gateway/relayed-call.ts).
 */
export function parseExactJson(text: string): unknown {
  return longDigits.test(text) ? JSON.parse(text, exactIntegers as never) : JSON.parse(text);
}

/**
 * Whether arrays and objects nest deeper than `max` (strings are skipped; linear, no allocation). On every message
 * the bridge and the policy chain read, so it stays a bare loop over character codes. The AI clients' settings files
 * have their own (clients/formats/json-editor.ts `deeperThan`), on jsonc-parser's scanner: comments and strings that
 * end at a line break are JSONC's reading, not JSON.parse's, and each check must read the text as its parser does.
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  // Fewer characters than twice the depth cannot nest that deep.
  if (text.length <= max * 2) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

export type ParsedJson = { readonly value: unknown } | { readonly error: "too-deep" | "not-json" };

export function parseJsonText(text: string, maxDepth = maxJsonDepth): ParsedJson {
  if (nestsDeeperThan(text, maxDepth)) return { error: "too-deep" };
  try {
    return { value: parseExactJson(text) };
  } catch {
    return { error: "not-json" };
  }
}

/** The answer to a client's POST body parseJsonText refused (streamable-http.ts, legacy-sse.ts). */
export function refusedBody(error: "too-deep" | "not-json"): Response {
  return error === "too-deep"
    ? jsonRpcError(400, JsonRpcCode.invalidRequest, `Invalid Request: JSON nested deeper than ${maxJsonDepth} levels`)
    : jsonRpcError(400, JsonRpcCode.parseError, "Parse error: the body is not JSON");
}
