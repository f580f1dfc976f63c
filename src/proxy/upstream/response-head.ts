/**
 * The head of an HTTP/1.1 response (RFC 9112): status line, field lines, and the framing of
 * the body that follows (§6.3). Strict where leniency lets one response be read as another:
 * no obs-fold, no whitespace before a colon, no control characters (a bare CR or LF among
 * them), one consistent Content-Length, never Content-Length next to Transfer-Encoding, and
 * "chunked" as the only transfer coding.
 */
import { badResponse } from "./errors.ts";

export type Framing = "none" | "length" | "chunked" | "close";

export interface ResponseHead {
  readonly status: number;
  readonly statusText: string;
  /** Field lines in order, names spelled as the upstream sent them. */
  readonly headers: [string, string][];
  readonly framing: Framing;
  /** The declared length with "length" framing, else -1. */
  readonly contentLength: number;
  /** Whether the connection may carry another request after this response. */
  readonly keepAlive: boolean;
  /** `Keep-Alive: timeout=N` in ms, when the upstream says how long it keeps idle connections. */
  readonly keepAliveTimeoutMs: number | undefined;
}

const SP = 0x20;
const HTAB = 0x09;
/** RFC 9110 §5.6.2 token. */
const token = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Control characters other than HTAB (which a field value may contain); a bare CR or LF among them. */
const control = /[\0-\x08\x0a-\x1f\x7f]/;
const digits = /^[0-9]+$/;

/**
 * Parses a head (without its final CRLF CRLF); undefined for an interim (1xx) answer, after
 * which the real one follows. `noBody`: the request was HEAD. Throws an UpstreamError.
 */
export function parseResponseHead(text: string, noBody: boolean): ResponseHead | undefined {
  let eol = text.indexOf("\r\n");
  if (eol === -1) eol = text.length;
  const statusLine = text.slice(0, eol);
  // HTTP-version SP 3DIGIT [SP reason-phrase]; "HTTP/1.1 200" without the space is common enough.
  if (
    statusLine.length < 12 ||
    !statusLine.startsWith("HTTP/1.") ||
    (statusLine.charCodeAt(7) !== 0x30 && statusLine.charCodeAt(7) !== 0x31) ||
    statusLine.charCodeAt(8) !== SP ||
    (statusLine.length > 12 && statusLine.charCodeAt(12) !== SP)
  ) {
    throw badResponse(`malformed status line ${JSON.stringify(statusLine.slice(0, 80))}`);
  }
  const code = statusLine.slice(9, 12);
  if (!digits.test(code)) throw badResponse(`malformed status code ${JSON.stringify(code)}`);
  const status = Number(code);
  const statusText = statusLine.length > 13 ? statusLine.slice(13) : "";
  if (control.test(statusText)) throw badResponse("control characters in the reason phrase");
  const http10 = statusLine.charCodeAt(7) === 0x30;

  const headers: [string, string][] = [];
  let contentLength: string | undefined;
  let transferEncoding: string | undefined;
  let connectionClose = false;
  let connectionKeepAlive = false;
  let keepAliveTimeoutMs: number | undefined;
  for (let start = eol + 2; start < text.length; start = eol + 2) {
    eol = text.indexOf("\r\n", start);
    if (eol === -1) eol = text.length;
    const colon = text.indexOf(":", start);
    // A leading space or tab (obs-fold) fails the token check, as does space before the colon.
    if (colon <= start || colon > eol) {
      throw badResponse(`malformed header line ${JSON.stringify(text.slice(start, Math.min(eol, start + 80)))}`);
    }
    const name = text.slice(start, colon);
    if (!token.test(name)) throw badResponse(`malformed header name ${JSON.stringify(name.slice(0, 80))}`);
    const value = fieldValue(text, colon + 1, eol);
    if (control.test(value)) throw badResponse(`control characters in the value of ${name}`);
    headers.push([name, value]);
    switch (name.length) {
      case 10: {
        const lower = name.toLowerCase();
        if (lower === "connection") {
          for (const option of value.toLowerCase().split(",")) {
            const t = option.trim();
            if (t === "close") connectionClose = true;
            else if (t === "keep-alive") connectionKeepAlive = true;
          }
        } else if (lower === "keep-alive") {
          const match = /(?:^|[\s,])timeout\s*=\s*(\d+)/i.exec(value);
          if (match) keepAliveTimeoutMs = Number(match[1]) * 1000;
        }
        break;
      }
      case 14:
        if (name === "Content-Length" || name === "content-length" || name.toLowerCase() === "content-length")
          contentLength = contentLength === undefined ? value : `${contentLength},${value}`;
        break;
      case 17:
        if (name.toLowerCase() === "transfer-encoding")
          transferEncoding = transferEncoding === undefined ? value : `${transferEncoding},${value}`;
        break;
    }
  }

  if (status < 200) {
    // 101 would switch protocols, which mcpmgr never asks for (Upgrade is not forwarded).
    if (status === 101 || status < 100) throw badResponse(`unexpected status ${status}`);
    return undefined; // an interim answer (100 Continue, 103 Early Hints): the real one follows
  }
  if (status > 599) throw badResponse(`status ${status} out of range`);

  let framing: Framing;
  let length = -1;
  if (noBody || status === 204 || status === 304) {
    framing = "none";
  } else if (transferEncoding !== undefined) {
    // RFC 9112 §6.3: both at once may be an attempt at smuggling; treated as the error it likely is.
    if (contentLength !== undefined) throw badResponse("both Transfer-Encoding and Content-Length");
    if (transferEncoding.trim().toLowerCase() !== "chunked") {
      throw badResponse(`unsupported Transfer-Encoding ${JSON.stringify(transferEncoding.slice(0, 80))}`);
    }
    framing = "chunked";
  } else if (contentLength !== undefined) {
    length = parseContentLength(contentLength);
    framing = "length";
  } else {
    framing = "close";
  }

  const keepAlive = framing !== "close" && !connectionClose && (!http10 || connectionKeepAlive);
  const head: ResponseHead = {
    status,
    statusText,
    headers,
    framing,
    contentLength: length,
    keepAlive,
    keepAliveTimeoutMs,
  };
  return head;
}

/** The field value between `from` and `to`, without optional whitespace (SP, HTAB) at either end. */
function fieldValue(text: string, from: number, to: number): string {
  let start = from;
  let end = to;
  while (start < end && (text.charCodeAt(start) === SP || text.charCodeAt(start) === HTAB)) start++;
  while (end > start && (text.charCodeAt(end - 1) === SP || text.charCodeAt(end - 1) === HTAB)) end--;
  return text.slice(start, end);
}

/** One length, possibly repeated ("42, 42"); differing or malformed values are unrecoverable (§6.3). */
function parseContentLength(value: string): number {
  if (digits.test(value) && value.length <= 15) return Number(value);
  let length = -1;
  for (const part of value.split(",")) {
    const v = part.trim();
    if (!digits.test(v) || v.length > 15)
      throw badResponse(`invalid Content-Length ${JSON.stringify(value.slice(0, 80))}`);
    const n = Number(v);
    if (length !== -1 && n !== length) throw badResponse("conflicting Content-Length values");
    length = n;
  }
  return length;
}
