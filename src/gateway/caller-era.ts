/**
 * What a relayed tools/call (relayed-call.ts) does differently by its caller's revision: how the
 * member's result and error become the caller's answer, what else the member sends on the call's
 * stream goes where, how the member hears a cancellation, whether its stream is resumed, and how the
 * answer is framed. A 2025-era session's (`SESSION_ERA`) is here; a 2026-07-28 caller's is
 * modern-answers.ts.
 */
import { isCallToolResult } from "@modelcontextprotocol/server";
import { JsonRpcCode } from "../proxy/jsonrpc.ts";
import { isObject } from "../objects.ts";

type Json = Record<string, unknown>;

/** A JSON-RPC error as the member sent it (code and message checked by the caller's era). */
export interface MemberError {
  readonly code: unknown;
  readonly message: unknown;
  readonly data?: unknown;
}

/** The caller's answer, without its id: a result or a JSON-RPC error. */
export type CallerAnswer = { readonly result: Json } | { readonly error: Json };

/** What differs by the caller's revision: how the member's answer becomes the caller's, and what else it hears. */
export interface CallerEra {
  /** The caller's answer to the member's result (an object). */
  result(result: Json): CallerAnswer;
  /** The caller's answer to the member's JSON-RPC error. */
  error(error: MemberError): CallerAnswer;
  /** The HTTP status of an answer sent as JSON. */
  status(answer: CallerAnswer): number;
  /**
   * A message on the member's stream that is neither the answer nor the call's progress: true when
   * this era took it (sent it to the caller with `send`, or dropped it); false hands it to the
   * upstream's SDK client, as for a 2025-era session.
   */
  memberMessage(message: Json, send: (text: string) => void): boolean;
  /** The member hears a cancellation as notifications/cancelled (a 2025-era member), not only its stream closing. */
  readonly notifiesCancellation: boolean;
  /** A member's 400 with a JSON-RPC error for the call is its answer (a 2026-07-28 member), not a failure. */
  readonly errorInBadRequest: boolean;
  /** A member's stream that ends early after an event id is resumed (2025-era members). */
  readonly resumes: boolean;
  /**
   * The caller's answer is JSON unless a message for it comes first (progress, a log line), whatever
   * the member's framing, as the SDK's per-request transport answers (and its -32021 can be a 400);
   * else the answer is framed as the member framed it.
   */
  readonly streamsOnlyWhenNeeded: boolean;
}

/** A 2025-era session's era: the member's answer as the SDK server answered it, errors as they are. */
export const SESSION_ERA: CallerEra = {
  result(result) {
    if (plainToolResult(result)) return { result };
    // What the SDK server did to a tool result: one without content gets an empty one, and one that is
    // no CallToolResult is refused.
    const filled = result.content === undefined ? { ...result, content: [] } : result;
    if (!isCallToolResult(filled))
      return { error: { code: JsonRpcCode.invalidParams, message: "Invalid tools/call result: not a CallToolResult" } };
    return { result: filled };
  },
  error: (error) => ({ error: plainError(error) }),
  status: () => 200,
  memberMessage: () => false,
  notifiesCancellation: true,
  errorInBadRequest: false,
  resumes: true,
  streamsOnlyWhenNeeded: false,
};

/** A member's error with its code (an integer, else internal error) and message (a string) as JSON-RPC wants them. */
export function plainError({ code, message, data }: MemberError): Json {
  return {
    code: Number.isSafeInteger(code) ? code : JsonRpcCode.internalError,
    message: typeof message === "string" ? message : String(message),
    ...(data !== undefined ? { data } : {}),
  };
}

/** The common shape of a tool result (text blocks), checked without a schema library. */
function plainToolResult(result: Json): boolean {
  const content = result.content;
  if (!Array.isArray(content)) return false;
  for (const block of content)
    if (!isObject(block) || block.type !== "text" || typeof block.text !== "string") return false;
  return (
    (result.isError === undefined || typeof result.isError === "boolean") &&
    (result.structuredContent === undefined || isObject(result.structuredContent))
  );
}
