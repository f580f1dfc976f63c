/**
 * The canonical reading of a POSTed body that every policy and audit share: a message the
 * server could read differently from how mcpmgr reads it is refused before any policy
 * decides on it (docs/security.md, "Policies see the message the server sees"):
 *   - a duplicate key anywhere (JSON.parse keeps the last; servers keep the last or the first);
 *   - at the JSON-RPC level and in `params`, a key that differs from a protocol key only by
 *     case or Unicode folding ("Method", "PARAMS", "paramſ", "nAme"), or two keys that differ
 *     only so (Go's encoding/json reads either into the same field, the last one winning);
 *   - the same for the keys of tool arguments, at any depth, when a policy inspects them
 *     (Cedar reads `context.arg_*`, webhooks see all params);
 *   - strings with a lone surrogate (Go reads U+FFFD, JavaScript keeps it, Rust refuses) and
 *     numbers too large for a double (JSON.parse reads Infinity);
 *   - anything that is not a request, a notification or a response: a message without a
 *     method is a response only with an id and a result or an error, a message with both a
 *     method and a result is neither; a request that names a tool, prompt or resource names
 *     it with a string.
 */
import { JsonRpcCode, type JsonRpcId } from "../proxy/jsonrpc.ts";
import type { JsonRpcMessage } from "../proxy/mcp-message.ts";
import { foldKey } from "./strict-json.ts";
import { isObject } from "../objects.ts";

export interface MessageProblem {
  readonly code: number;
  /** What is wrong, for the client and the audit line. */
  readonly message: string;
  /** The id of the message at fault, when it has a usable one. */
  readonly id: JsonRpcId;
}

export interface MessageCheckOptions {
  /** Check the keys of tool arguments too (a policy inspects them). */
  readonly arguments: boolean;
}

/** The keys of a JSON-RPC message. */
const envelopeKeys = ["jsonrpc", "id", "method", "params", "result", "error"];
/** Every key of a request's or notification's params in the MCP schema (2024-11-05 to 2026-07-28). */
const paramsKeys = [
  "_meta",
  "argument",
  "arguments",
  "capabilities",
  "clientInfo",
  "context",
  "createdAt",
  "cursor",
  "data",
  "elicitationId",
  "includeContext",
  "inputResponses",
  "lastUpdatedAt",
  "level",
  "logger",
  "maxTokens",
  "message",
  "messages",
  "metadata",
  "modelPreferences",
  "name",
  "notifications",
  "pollInterval",
  "progress",
  "progressToken",
  "protocolVersion",
  "reason",
  "ref",
  "requestId",
  "requestState",
  "requestedSchema",
  "status",
  "statusMessage",
  "stopSequences",
  "systemPrompt",
  "task",
  "taskId",
  "temperature",
  "toolChoice",
  "tools",
  "total",
  "ttl",
  "uri",
];
const byFold = (keys: readonly string[]) => new Map(keys.map((key) => [foldKey(key), key]));
const envelopeFolds = byFold(envelopeKeys);
const paramsFolds = byFold(paramsKeys);

/** Methods that name their target, and the parameter that names it (as proxy/mcp-message.ts reads it). */
const targetKeys: ReadonlyMap<string, string> = new Map([
  ["tools/call", "name"],
  ["prompts/get", "name"],
  ["resources/read", "uri"],
  ["resources/subscribe", "uri"],
  ["resources/unsubscribe", "uri"],
]);

const jsonWithRaw = JSON as typeof JSON & { isRawJSON?(value: unknown): boolean };

function isRecord(value: unknown): value is Record<string, unknown> {
  return isObject(value) && !jsonWithRaw.isRawJSON?.(value);
}

function isRequestId(value: unknown): boolean {
  return typeof value === "string" || typeof value === "number" || jsonWithRaw.isRawJSON?.(value) === true;
}

/**
 * Keys of one object that the server could read as another: two that fold to the same name,
 * or one that folds to a protocol key without being spelled as it is.
 */
function keyProblem(
  object: Record<string, unknown>,
  where: string,
  protocol?: ReadonlyMap<string, string>,
): string | undefined {
  const keys = Object.keys(object);
  // One key cannot collide with another (most objects in arguments are small).
  if (protocol === undefined && keys.length < 2) return undefined;
  const seen = new Map<string, string>();
  for (const key of keys) {
    const folded = foldKey(key);
    const canonical = protocol?.get(folded);
    if (canonical !== undefined && canonical !== key)
      return `the key ${JSON.stringify(key)} ${where} differs from ${JSON.stringify(canonical)} only by case`;
    const other = seen.get(folded);
    if (other !== undefined)
      return `the keys ${JSON.stringify(other)} and ${JSON.stringify(key)} ${where} differ only by case`;
    seen.set(folded, key);
  }
  return undefined;
}

/** Sibling keys that differ only by case, at any depth of tool arguments. */
function argumentKeyProblem(value: unknown, depth = 0): string | undefined {
  if (typeof value !== "object" || value === null || depth > 256) return undefined;
  if (Array.isArray(value)) {
    for (const item of value) {
      const problem = argumentKeyProblem(item, depth + 1);
      if (problem) return problem;
    }
    return undefined;
  }
  const object = value as Record<string, unknown>;
  const problem = keyProblem(object, "in the arguments");
  if (problem) return problem;
  for (const key in object) {
    const inner = argumentKeyProblem(object[key], depth + 1);
    if (inner) return inner;
  }
  return undefined;
}

/** The problem of one message, or undefined when it reads the same everywhere. */
function problemOf(value: unknown, options: MessageCheckOptions): MessageProblem | undefined {
  const invalid = (message: string, id: unknown = null): MessageProblem => ({
    code: JsonRpcCode.invalidRequest,
    message: `Invalid Request: ${message}`,
    id: isRequestId(id) ? (id as JsonRpcId) : null,
  });
  if (!isRecord(value)) return invalid("not a JSON-RPC message object");
  const message = value as JsonRpcMessage & Record<string, unknown>;
  const envelope = keyProblem(message, "of the message", envelopeFolds);
  if (envelope) return invalid(envelope, message.id);
  if (message.jsonrpc !== "2.0") return invalid('not a JSON-RPC 2.0 message ("jsonrpc": "2.0")', message.id);
  const hasAnswer = "result" in message || "error" in message;
  if (!("method" in message)) {
    const oneAnswer = "result" in message !== "error" in message;
    if ("id" in message && (isRequestId(message.id) || message.id === null) && oneAnswer && !("params" in message))
      return undefined;
    return invalid("a message without a method must be a response: an id and a result or an error", message.id);
  }
  if (typeof message.method !== "string") return invalid("the method must be a string", message.id);
  if (hasAnswer) return invalid("a message is a request or a response, not both", message.id);
  if ("id" in message && !isRequestId(message.id))
    return invalid("a request's id must be a string or a number", message.id);
  if (!("params" in message)) return undefined;
  const params = message.params;
  if (!isRecord(params)) return invalid("params must be an object", message.id);
  const inParams = keyProblem(params, "in params", paramsFolds);
  if (inParams) return invalid(inParams, message.id);
  const targetKey = targetKeys.get(message.method);
  if (targetKey !== undefined && typeof params[targetKey] !== "string")
    return {
      code: JsonRpcCode.invalidParams,
      message: `Invalid params: ${message.method} names its target with a string ${targetKey}`,
      id: (message.id ?? null) as JsonRpcId,
    };
  if (options.arguments && "arguments" in params) {
    const inArguments = argumentKeyProblem(params.arguments);
    if (inArguments) return invalid(inArguments, message.id);
  }
  return undefined;
}

/**
 * The protocol keys of a message as a case-insensitive, last-key-wins reader (Go's
 * encoding/json) reads them: for a refused message, what the server would have acted on,
 * which audit records.
 */
export function caseInsensitiveReading(message: unknown): JsonRpcMessage | undefined {
  if (!isRecord(message)) return undefined;
  const pick = (object: Record<string, unknown>, folds: ReadonlyMap<string, string>) => {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(object)) {
      const canonical = folds.get(foldKey(key));
      if (canonical !== undefined) out[canonical] = value;
    }
    return out;
  };
  const envelope = pick(message, envelopeFolds);
  if (isRecord(envelope.params)) envelope.params = pick(envelope.params, paramsFolds);
  return envelope as unknown as JsonRpcMessage;
}

/** A string or key with a lone surrogate, or a number JSON.parse read as Infinity, anywhere in `value`. */
export function unreadableValue(value: unknown, depth = 0): string | undefined {
  if (typeof value === "string") return value.isWellFormed() ? undefined : "a string holds a lone surrogate";
  if (typeof value === "number") return Number.isFinite(value) ? undefined : "a number is too large for a double";
  if (typeof value !== "object" || value === null || depth > 256) return undefined;
  for (const key in value) {
    if (!key.isWellFormed()) return "a key holds a lone surrogate";
    const inner = unreadableValue((value as Record<string, unknown>)[key], depth + 1);
    if (inner) return inner;
  }
  return undefined;
}

/** The first problem of a body's messages (a batch is refused as a whole), or undefined. */
export function bodyProblem(
  value: unknown,
  messages: readonly unknown[],
  options: MessageCheckOptions,
): MessageProblem | undefined {
  if (Array.isArray(value) && value.length === 0)
    return { code: JsonRpcCode.invalidRequest, message: "Invalid Request: an empty batch", id: null };
  const list = Array.isArray(value) ? value : [value];
  if (list.length !== messages.length)
    return {
      code: JsonRpcCode.invalidRequest,
      message: "Invalid Request: not a JSON-RPC message object",
      id: null,
    };
  for (const message of list) {
    const problem = problemOf(message, options);
    if (problem) return problem;
  }
  return undefined;
}

/** Only the arguments' keys, for a body already checked without them. */
export function argumentsProblem(messages: readonly JsonRpcMessage[]): MessageProblem | undefined {
  for (const message of messages) {
    const args = message.params?.arguments;
    const problem = args === undefined ? undefined : argumentKeyProblem(args);
    if (problem)
      return {
        code: JsonRpcCode.invalidRequest,
        message: `Invalid Request: ${problem}`,
        id: isRequestId(message.id) ? (message.id as JsonRpcId) : null,
      };
  }
  return undefined;
}
