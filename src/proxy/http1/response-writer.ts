/**
 * Writes a handler's Response on a client connection as HTTP/1.1: the head and a body of
 * known size in one write (Content-Length), a stream chunk by chunk as it arrives (chunked,
 * or raw up to a Content-Length the handler declared; raw until the connection closes for an
 * HTTP/1.0 client), each chunk only after the socket took the previous one, so a slow client
 * slows the source instead of filling memory. An event stream's first bytes go out at once.
 */
import { Buffer } from "node:buffer";
import { type WholeAnswer, wholeBodyOf } from "../upstream/responses.ts";
import type { SocketWriter } from "../upstream/socket-writer.ts";

export interface ResponseTarget {
  readonly writer: SocketWriter;
  /** The request was HEAD: headers only. */
  readonly headRequest: boolean;
  readonly minorVersion: 0 | 1;
  /** The connection may carry another request after this one (the client's wish and ours). */
  readonly keepAlive: boolean;
  /** The client is gone: stop reading the body. */
  readonly gone: () => boolean;
}

const empty = new Uint8Array(0);
const crlf = Buffer.from("\r\n", "latin1");
const lastChunk = Buffer.from("0\r\n\r\n", "latin1");
const digits = /^[0-9]{1,15}$/;

let dateSecond = 0;
let dateValue = "";
/** The Date header, formatted once a second. */
function httpDate(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateValue = new Date(now).toUTCString();
  }
  return dateValue;
}

/** Writes `response`; resolves with whether the connection can carry another request. */
export async function writeResponse(response: Response, target: ResponseTarget): Promise<boolean> {
  const status = response.status;
  let fields = "";
  let declared: string | undefined;
  let eventStream = false;
  response.headers.forEach((value, name) => {
    switch (name) {
      case "connection":
      case "keep-alive":
      case "transfer-encoding":
        return; // this connection's framing is ours to say
      case "content-length":
        declared = value;
        return;
      case "date":
        return;
      case "content-type":
        eventStream = value.startsWith("text/event-stream");
    }
    fields += `${name}: ${value}\r\n`;
  });
  const reason = response.statusText || reasonPhrases[status] || "";
  const statusLine = `HTTP/1.1 ${status} ${reason}\r\n${fields}date: ${httpDate()}\r\n`;
  const keepAlive = target.keepAlive;
  const connection = keepAlive
    ? target.minorVersion === 0
      ? "connection: keep-alive\r\n"
      : ""
    : "connection: close\r\n";

  const whole = wholeBodyOf(response);
  // 1xx, 204 and 304 never have a body (RFC 9112 §6.3); a HEAD answer has only its head.
  if (status < 200 || status === 204 || status === 304 || target.headRequest) {
    if (whole === undefined) await response.body?.cancel().catch(() => {});
    let length = "";
    if (status !== 204 && status >= 200) {
      if (declared !== undefined) length = `content-length: ${declared}\r\n`;
      else if (whole !== undefined) length = `content-length: ${whole?.byteLength ?? 0}\r\n`;
    }
    target.writer.writeHead(`${statusLine}${length}${connection}\r\n`, undefined);
    return keepAlive;
  }

  if (whole !== undefined) return writeWhole(target, statusLine, connection, whole ?? empty);
  const body = response.body;
  if (body === null) return writeWhole(target, statusLine, connection, empty);

  const reader = body.getReader() as ReadableStreamDefaultReader<Uint8Array>;
  let first: Awaited<ReturnType<typeof reader.read>>;
  try {
    first = await reader.read();
    if (first.done) return writeWhole(target, statusLine, connection, empty);
    if (!eventStream && declared === undefined) {
      // Most bodies that are not event streams are one piece (a Response made from bytes).
      const second = await reader.read();
      if (second.done) return writeWhole(target, statusLine, connection, bytesOf(first.value));
      return await writeStream(target, statusLine, undefined, reader, [bytesOf(first.value), bytesOf(second.value)]);
    }
  } catch {
    return brokenBeforeHead(target, reader);
  }
  const length = declared !== undefined && digits.test(declared) ? Number(declared) : undefined;
  return writeStream(target, statusLine, length, reader, [bytesOf(first.value)]);
}

/**
 * Writes an upstream's whole answer as it came (the byte lane, HTTP/1.1 clients only): its
 * status line and fields, which the forwarder checked carry nothing about the upstream's
 * connection (forward.ts `passesAsBytes`), and its body of the length it declared.
 */
export function writeWholeAnswer(answer: WholeAnswer, target: ResponseTarget): boolean {
  const head = answer.head;
  let fields = "";
  for (const [name, value] of head.headers) fields += `${name}: ${value}\r\n`;
  const connection = target.keepAlive ? "" : "connection: close\r\n";
  target.writer.writeHead(
    `HTTP/1.1 ${head.status} ${head.statusText}\r\n${fields}${connection}\r\n`,
    answer.body ?? undefined,
  );
  return target.keepAlive;
}

function writeWhole(target: ResponseTarget, statusLine: string, connection: string, body: Uint8Array): boolean {
  target.writer.writeHead(`${statusLine}content-length: ${body.byteLength}\r\n${connection}\r\n`, body);
  return target.keepAlive;
}

/** A body that failed before anything was sent: the connection answers 500, as for a failed handler. */
export class BodyFailedBeforeHead extends Error {}

async function brokenBeforeHead(
  target: ResponseTarget,
  reader: ReadableStreamDefaultReader<Uint8Array>,
): Promise<never> {
  await reader.cancel().catch(() => {});
  throw new BodyFailedBeforeHead(target.gone() ? "the client is gone" : "the response body failed");
}

/**
 * Streams the rest of a body. With a declared length the bytes go raw and the connection is
 * reused only if exactly that many came; HTTP/1.0 clients get raw bytes until the connection
 * closes; everyone else gets chunked framing.
 */
async function writeStream(
  target: ResponseTarget,
  statusLine: string,
  declaredLength: number | undefined,
  reader: ReadableStreamDefaultReader<Uint8Array>,
  firstChunks: Uint8Array[],
): Promise<boolean> {
  const writer = target.writer;
  const chunked = declaredLength === undefined && target.minorVersion === 1;
  const keepAlive = target.keepAlive && (chunked || declaredLength !== undefined);
  const framing = chunked
    ? "transfer-encoding: chunked\r\n"
    : declaredLength !== undefined
      ? `content-length: ${declaredLength}\r\n`
      : "";
  const connection = keepAlive
    ? target.minorVersion === 0
      ? "connection: keep-alive\r\n"
      : ""
    : "connection: close\r\n";
  let sent = 0;
  const frame = (chunk: Uint8Array): Uint8Array => {
    sent += chunk.byteLength;
    if (!chunked) return chunk;
    const size = `${chunk.byteLength.toString(16)}\r\n`;
    const out = Buffer.allocUnsafe(size.length + chunk.byteLength + 2);
    out.write(size, 0, size.length, "latin1");
    out.set(chunk, size.length);
    out.set(crlf, size.length + chunk.byteLength);
    return out;
  };
  const firstFrames = firstChunks.filter((chunk) => chunk.byteLength > 0).map(frame);
  writer.writeHead(
    `${statusLine}${framing}${connection}\r\n`,
    firstFrames.length === 1 ? firstFrames[0] : Buffer.concat(firstFrames),
  );
  try {
    for (;;) {
      if (writer.pendingBytes > 0) await writer.drained();
      if (target.gone()) {
        await reader.cancel().catch(() => {});
        return false;
      }
      const next = await reader.read();
      if (next.done) break;
      const chunk = bytesOf(next.value);
      if (chunk.byteLength === 0) continue;
      if (!writer.write(frame(chunk))) {
        await reader.cancel().catch(() => {});
        return false;
      }
    }
  } catch {
    // The source broke off (or the client left while we waited): the client sees the body cut short.
    await reader.cancel().catch(() => {});
    return false;
  }
  if (chunked) return writer.write(lastChunk) && keepAlive;
  return keepAlive && sent === declaredLength;
}

function bytesOf(value: Uint8Array | string): Uint8Array {
  return typeof value === "string" ? Buffer.from(value, "utf8") : value;
}

/** Reason phrases for the statuses mcpmgr itself answers with (optional in HTTP/1.1; node:http is not loaded for them). */
const reasonPhrases: Record<number, string> = {
  200: "OK",
  202: "Accepted",
  204: "No Content",
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  406: "Not Acceptable",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  429: "Too Many Requests",
  499: "Client Closed Request",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};
