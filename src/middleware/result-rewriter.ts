/**
 * Rewriting JSON-RPC results on their way to the client, in a JSON answer or inside an SSE
 * stream (POST answers and legacy GET streams), for the policies that change what clients
 * see (tool filter, authorization). Only installed policies pay for it.
 *
 * A rewrite holds what it rewrites: a JSON answer, one event. Past MCPMGR_MAX_MESSAGE_BYTES it cannot
 * (a server's one answer must not take the machine's memory) and must not pass the answer on unread
 * either (a list it did not filter): each request of the POST is answered with -32603 naming the
 * limit instead, and the server's answer is dropped (proxy/answer-limit.ts).
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { AnswerTooLarge, answerTooLargeText, readBoundedText } from "../proxy/answer-limit.ts";
import { JsonRpcCode, type JsonRpcId } from "../proxy/jsonrpc.ts";
import type { JsonRpcMessage } from "../proxy/mcp-message.ts";
import { isDenied } from "./denials.ts";
import type { RpcBody } from "./rpc-body.ts";

/**
 * Returns the message to send instead (or the same object for no change); a promise when it must
 * ask first (Cedar's evaluator, for decisions it does not remember).
 */
export type MessageRewrite = (message: JsonRpcMessage) => JsonRpcMessage | Promise<JsonRpcMessage>;

/** How much a rewrite may hold, and the requests to answer when an answer is larger. */
export interface RewriteLimit {
  readonly maxBytes: number;
  readonly requestIds: () => readonly JsonRpcId[];
}

/** The ids of the requests in a POST's body (none for a GET, or a body that is not JSON-RPC). */
export function requestIdsIn(body: RpcBody | undefined): JsonRpcId[] {
  const ids: JsonRpcId[] = [];
  for (const message of body?.messages ?? [])
    if (typeof message?.method === "string" && (typeof message.id === "string" || typeof message.id === "number"))
      ids.push(message.id);
  return ids;
}

function tooLargeErrors(ids: readonly JsonRpcId[], maxBytes: number): JsonRpcMessage[] {
  const message = answerTooLargeText(`over ${maxBytes} bytes`);
  return ids.map((id) => ({ jsonrpc: "2.0", id, error: { code: JsonRpcCode.internalError, message } }));
}

/**
 * A list result a policy filtered for its caller, with the 2026-07-28 caching hints that
 * keep it with that caller: `cacheScope: "private"` (a shared cache must not hand one
 * user's view to another). Results of older revisions carry no hints and get none.
 */
export function privateToCaller(result: { [key: string]: unknown }): { [key: string]: unknown } {
  if (result.resultType === undefined && result.cacheScope === undefined && result.ttlMs === undefined) return result;
  return { ...result, cacheScope: "private" };
}

/**
 * A key written with escapes (`"\u0074ools"` is `"tools"`) passes any test on the text: text
 * with an escape is parsed whatever `mayMatch` says, or a server could slip a list past the
 * policies that filter it.
 */
function worthParsing(data: string, mayMatch: (data: string) => boolean): boolean {
  return mayMatch(data) || data.includes("\\u");
}

function serialise(event: EventSourceMessage): string {
  let text = "";
  if (event.id !== undefined) text += `id: ${event.id}\n`;
  if (event.event !== undefined) text += `event: ${event.event}\n`;
  for (const line of event.data.split("\n")) text += `data: ${line}\n`;
  return `${text}\n`;
}

function rewriteText(text: string, rewrite: MessageRewrite): string | Promise<string> {
  let parsed: JsonRpcMessage | JsonRpcMessage[];
  try {
    parsed = JSON.parse(text) as JsonRpcMessage | JsonRpcMessage[];
  } catch {
    return text; // not JSON: not ours to touch
  }
  const rewritten = Array.isArray(parsed) ? parsed.map((m) => rewrite(m)) : rewrite(parsed);
  // Synchronous whenever the rewrite is (the tool filter; decisions remembered).
  if (rewritten instanceof Promise) return rewritten.then((m) => JSON.stringify(m));
  if (Array.isArray(rewritten) && rewritten.some((m) => m instanceof Promise))
    return Promise.all(rewritten).then((m) => JSON.stringify(m));
  return JSON.stringify(rewritten);
}

function rewriteEventStream(
  body: ReadableStream<Uint8Array>,
  rewrite: MessageRewrite,
  mayMatch: (data: string) => boolean,
  limit: RewriteLimit,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  // What a chunk completed, in order: text to send, or an event whose rewrite is still being asked.
  let ready: (string | Promise<string>)[] = [];
  let over = false;
  const parser = createParser({
    maxBufferSize: limit.maxBytes,
    onError(error) {
      if (error.type === "max-buffer-size-exceeded") over = true;
    },
    onEvent(event) {
      if (!worthParsing(event.data, mayMatch)) {
        ready.push(serialise(event));
        return;
      }
      const data = rewriteText(event.data, rewrite);
      ready.push(
        data instanceof Promise ? data.then((d) => serialise({ ...event, data: d })) : serialise({ ...event, data }),
      );
    },
    onRetry(retry) {
      ready.push(`retry: ${retry}\n\n`);
    },
    onComment(comment) {
      // Keep-alives must keep flowing.
      ready.push(`:${comment}\n\n`);
    },
  });
  const finish = (controller: TransformStreamDefaultController<Uint8Array>) => {
    if (!over) return;
    // Only whole events were passed on: the cut one is dropped, its requests answered with the limit.
    for (const error of tooLargeErrors(limit.requestIds(), limit.maxBytes))
      controller.enqueue(encoder.encode(`event: message\ndata: ${JSON.stringify(error)}\n\n`));
    controller.terminate();
  };
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        parser.feed(decoder.decode(chunk, { stream: true }));
        const parts = ready;
        ready = [];
        // Synchronous unless a rewrite must ask first; the stream waits for it, so the order holds.
        if (!parts.some((part) => part instanceof Promise)) {
          for (const part of parts) controller.enqueue(encoder.encode(part as string));
          return finish(controller);
        }
        return (async () => {
          for (const part of parts) controller.enqueue(encoder.encode(await part));
          finish(controller);
        })();
      },
    }),
  );
}

/**
 * `mayMatch` is a cheap text test (e.g. contains `"tools"`) that spares parsing events the
 * rewrite cannot concern.
 */
export async function rewriteResults(
  response: Response,
  rewrite: MessageRewrite,
  mayMatch: (data: string) => boolean,
  limit: RewriteLimit,
): Promise<Response> {
  const type = response.headers.get("content-type") ?? "";
  // A refusal carries no results, and audit must still see which policy refused and why.
  if (response.body === null || isDenied(response)) return response;
  const headers = new Headers(response.headers);
  headers.delete("content-length");
  if (type.includes("text/event-stream")) {
    return new Response(rewriteEventStream(response.body, rewrite, mayMatch, limit), {
      status: response.status,
      statusText: response.statusText,
      headers,
    });
  }
  if (!type.includes("json")) return response;
  let text: string;
  try {
    text = await readBoundedText(response, limit.maxBytes);
  } catch (err) {
    if (!(err instanceof AnswerTooLarge)) throw err;
    const errors = tooLargeErrors(limit.requestIds(), limit.maxBytes);
    headers.set("content-type", "application/json");
    return new Response(JSON.stringify(errors.length === 1 ? errors[0] : errors), { status: 200, headers });
  }
  return new Response(worthParsing(text, mayMatch) ? await rewriteText(text, rewrite) : text, {
    status: response.status,
    statusText: response.statusText,
    headers,
  });
}
