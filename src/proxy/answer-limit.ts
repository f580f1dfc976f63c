/**
 * The largest answer mcpmgr holds in memory from a server (MCPMGR_MAX_MESSAGE_BYTES, 64 MiB by
 * default): the stdio bridge's cap on one line, applied wherever mcpmgr buffers or parses what an
 * HTTP server sends back: a JSON answer read whole, one SSE event being assembled. A server is
 * third-party code; without a bound one answer (a 1 GB JSON body, an event that never ends) takes
 * the whole machine's memory, not only its own tools. Bytes mcpmgr only streams on are not counted.
 *
 * The checks are a length compare on bytes already at hand (a body's Content-Length, a chunk's
 * length) or a search for blank lines in an event stream's chunks, so a normal answer costs nothing more.
 */
import { cappedStream, declaredLength, readCappedText } from "../bounded-body.ts";
import { JsonRpcCode, type JsonRpcId } from "./jsonrpc.ts";
import { SseEventSize } from "./sse-event-size.ts";
import { requestIdsOf } from "./sse-answers.ts";

/** The default of MCPMGR_MAX_MESSAGE_BYTES (workload/limits.ts reads the variable). */
export const defaultMaxMessageBytes = 64 * 1024 * 1024;

/** The error text when a server's answer is over the cap: the stdio bridge's wording. */
export function answerTooLargeText(size: string): string {
  return `the MCP server's answer (${size}) is larger than mcpmgr accepts; raise MCPMGR_MAX_MESSAGE_BYTES to allow it`;
}

/** A server's answer went past the cap; the bytes read so far are dropped. */
export class AnswerTooLarge extends Error {
  readonly maxBytes: number;
  constructor(maxBytes: number) {
    super(answerTooLargeText(`over ${maxBytes} bytes`));
    this.name = "AnswerTooLarge";
    this.maxBytes = maxBytes;
  }
}

/**
 * A whole body as text, refused with `AnswerTooLarge` past `maxBytes` (a chunked body is cancelled
 * the moment it passes the cap).
 */
export function readBoundedText(response: Response, maxBytes: number): Promise<string> {
  return readCappedText(response, maxBytes, () => new AnswerTooLarge(maxBytes));
}

/**
 * The start of a body, at most `chars` characters, without reading the rest (an error page is for
 * a log line or a message, never held whole): the connection is dropped after the first chunks.
 */
export async function readExcerpt(response: Response, chars: number): Promise<string> {
  const body = response.body;
  if (body === null) return "";
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  try {
    while (text.length < chars) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    // What was read is enough.
  } finally {
    void reader.cancel().catch(() => {});
  }
  return text.slice(0, chars);
}

/** The bound on a server's answers, and who hears when one goes past it (for a log line). */
export interface AnswerLimit {
  readonly maxBytes: number;
  readonly onExceeded?: ((text: string) => void) | undefined;
}

/**
 * A fetch for a client library (the MCP SDK's transports) whose answers are bounded: a JSON (or any
 * non-SSE) body past `maxBytes` errors with `AnswerTooLarge`, which fails the request that asked for
 * it; in an event stream, an event that grows past `maxBytes` is discarded and, on a POST's stream,
 * each request of the POST is answered with a JSON-RPC error naming the limit before the stream ends
 * (the library then fails the request as it would on any error answer, instead of waiting for its
 * timeout). `onExceeded` is told once per answer, for a log line.
 */
export function boundedFetch<U, I extends RequestInit>(
  fetch: (url: U, init?: I) => Promise<Response>,
  { maxBytes, onExceeded }: AnswerLimit,
): (url: U, init?: I) => Promise<Response> {
  return async (url, init) => {
    const response = await fetch(url, init);
    const body = response.body;
    if (body === null) return response;
    const type = response.headers.get("content-type") ?? "";
    const exceeded = (text: string) => onExceeded?.(text);
    const declared = declaredLength(response);
    const sse = type.includes("text/event-stream");
    // A body that says its size within the bound (the usual JSON answer) is handed on as it is.
    if (!sse && declared !== undefined && declared <= maxBytes) return response;
    const limited = sse
      ? body.pipeThrough(eventBound(maxBytes, () => requestIdsOf(bodyBytes(init?.body)), exceeded))
      : body.pipeThrough(
          cappedStream(maxBytes, declared, () => {
            const error = new AnswerTooLarge(maxBytes);
            exceeded(error.message);
            return error;
          }),
        );
    return new Response(limited, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

function bodyBytes(body: RequestInit["body"] | undefined): Uint8Array | undefined {
  if (typeof body === "string") return new TextEncoder().encode(body);
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  return undefined;
}

const encoder = new TextEncoder();

/**
 * Passes an event stream on unchanged while measuring each event on the raw bytes (sse-event-size.ts:
 * the client library parses the stream, this only looks for blank lines). An event past the bound
 * is cut: the whole events before it in its chunk still pass and the rest of the chunk is held back;
 * when the client already holds the start of the event (it began in an earlier chunk), a blank line
 * under an event type no MCP client listens to ends that fragment. Then an error answers each request
 * of the POST, and the stream ends. (The MCP SDK's transports send one request per POST; a request of a
 * batch that an event before the cut answered gets the error too, which a client no longer waiting ignores.)
 */
function eventBound(
  maxBytes: number,
  requestIds: () => readonly JsonRpcId[],
  exceeded: (text: string) => void,
): TransformStream<Uint8Array, Uint8Array> {
  const size = new SseEventSize(maxBytes);
  return new TransformStream({
    transform(chunk, controller) {
      const midLine = size.midLine;
      const cut = size.oversizedFrom(chunk);
      if (cut === -1) {
        controller.enqueue(chunk);
        return;
      }
      const text = answerTooLargeText(`over ${maxBytes} bytes`);
      exceeded(text);
      // Whole events before the cut one end at a blank line: the client holds no fragment to discard.
      let closing = cut > 0 ? "" : `${midLine ? "\n" : ""}event: mcpmgr-discarded\n\n`;
      for (const id of requestIds()) {
        const error = { jsonrpc: "2.0", id, error: { code: JsonRpcCode.internalError, message: text } };
        closing += `event: message\ndata: ${JSON.stringify(error)}\n\n`;
      }
      if (cut > 0) controller.enqueue(chunk.subarray(0, cut));
      if (closing !== "") controller.enqueue(encoder.encode(closing));
      controller.terminate();
    },
  });
}
