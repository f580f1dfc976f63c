/**
 * The head of an HTTP/1.1 request (RFC 9112 §2-§5), parsed strictly: a request the proxy
 * cannot read in exactly one way is refused, so no peer behind or in front of it can read
 * it another way (request smuggling). Refused: a malformed request line, bare CR or LF, a
 * folded header line (obs-fold), whitespace before a header's colon, control characters,
 * both Content-Length and Transfer-Encoding, a Transfer-Encoding other than "chunked",
 * differing Content-Length values, and HTTP/1.1 without exactly one valid Host.
 */

export interface RequestHead {
  readonly method: string;
  /** Origin-form target: path and query. */
  readonly target: string;
  /** 0 for HTTP/1.0, 1 for HTTP/1.1. */
  readonly minorVersion: 0 | 1;
  /** Lower-case name, value as sent (without surrounding whitespace), in order. */
  readonly headers: [string, string][];
  /** The Host header, undefined when absent (HTTP/1.0 only). */
  readonly host: string | undefined;
  /** Body framing: none, a known length, or chunked. */
  readonly framing: "none" | "length" | "chunked";
  readonly contentLength: number;
  /** The client asked to keep the connection (HTTP/1.1 unless `close`; HTTP/1.0 with `keep-alive`). */
  readonly keepAlive: boolean;
  /** `Expect: 100-continue`. */
  readonly expectContinue: boolean;
}

export interface HeadLimits {
  /** Largest head (request line and headers, CRLFs included). */
  readonly maxHeadBytes: number;
  readonly maxHeaderCount: number;
}

/** Why a head was refused: the status (400, 414, 431, 501, 505) and a short reason. */
export class BadRequestHead extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

const token = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Field values: visible ASCII, obs-text, SP and HTAB (no CTLs, no DEL). */
const invalidValue = /[\x00-\x08\x0a-\x1f\x7f]/;
/** Origin-form: a path starting with "/" and an optional query, visible ASCII only. */
const invalidTarget = /[^\x21-\x7e]/;
/** A Host: reg-name, IPv4 or bracketed IPv6, and an optional port; nothing that could change the URL. */
const validHost = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~!$&'()*+,;=%]*)(?::[0-9]*)?$/;
const digits = /^[0-9]+$/;

/**
 * Parses a head (the bytes before the empty line, as latin1, without the final CRLFCRLF).
 * Throws BadRequestHead.
 */
export function parseRequestHead(text: string, limits: HeadLimits): RequestHead {
  // A bare CR or LF needs no scan of its own: it can only sit inside a line, where the method,
  // target and version checks and the field name and value checks below refuse it.
  let lineEnd = text.indexOf("\r\n");
  if (lineEnd === -1) lineEnd = text.length;
  const requestLine = text.slice(0, lineEnd);
  const firstSpace = requestLine.indexOf(" ");
  const secondSpace = requestLine.indexOf(" ", firstSpace + 1);
  if (firstSpace <= 0 || secondSpace === -1 || requestLine.indexOf(" ", secondSpace + 1) !== -1) {
    throw bad("malformed request line");
  }
  const method = requestLine.slice(0, firstSpace);
  const target = requestLine.slice(firstSpace + 1, secondSpace);
  const version = requestLine.slice(secondSpace + 1);
  if (!token.test(method)) throw bad("invalid method");
  let minorVersion: 0 | 1;
  if (version === "HTTP/1.1") minorVersion = 1;
  else if (version === "HTTP/1.0") minorVersion = 0;
  else if (/^HTTP\/[0-9]\.[0-9]$/.test(version)) throw new BadRequestHead(505, "HTTP version not supported");
  else throw bad("malformed request line");
  if (target.charCodeAt(0) !== 0x2f || invalidTarget.test(target)) throw bad("invalid request target");

  const headers: [string, string][] = [];
  let host: string | undefined;
  let hostCount = 0;
  let contentLength: string | undefined;
  let transferEncoding: string | undefined;
  let connection = "";
  let expect: string | undefined;
  let at = lineEnd + 2;
  while (at < text.length) {
    let end = text.indexOf("\r\n", at);
    if (end === -1) end = text.length;
    if (headers.length >= limits.maxHeaderCount) throw new BadRequestHead(431, "too many header fields");
    const first = text.charCodeAt(at);
    if (first === 0x20 || first === 0x09) throw bad("folded header line (obs-fold)");
    const colon = text.indexOf(":", at);
    if (colon === -1 || colon >= end) throw bad("header line without a colon");
    const name = text.slice(at, colon);
    if (!token.test(name)) throw bad("invalid header name");
    const value = trimOws(text.slice(colon + 1, end));
    if (invalidValue.test(value)) throw bad("invalid character in a header value");
    const lower = name.toLowerCase();
    switch (lower) {
      case "host":
        hostCount++;
        host = value;
        break;
      case "content-length":
        contentLength = contentLength === undefined ? value : `${contentLength},${value}`;
        break;
      case "transfer-encoding":
        transferEncoding = transferEncoding === undefined ? value : `${transferEncoding},${value}`;
        break;
      case "connection":
        connection = connection === "" ? value : `${connection},${value}`;
        break;
      case "expect":
        expect = value;
        break;
    }
    headers.push([lower, value]);
    at = end + 2;
  }

  if (hostCount > 1) throw bad("more than one Host header");
  if (host !== undefined && !validHost.test(host)) throw bad("invalid Host header");
  if (minorVersion === 1 && host === undefined) throw bad("HTTP/1.1 request without a Host header");

  let framing: RequestHead["framing"] = "none";
  let length = 0;
  if (transferEncoding !== undefined) {
    if (contentLength !== undefined) throw bad("both Content-Length and Transfer-Encoding");
    if (minorVersion === 0) throw bad("Transfer-Encoding in an HTTP/1.0 request");
    // Only "chunked" alone: any other coding could not be delimited the same way by everyone.
    if (transferEncoding.trim().toLowerCase() !== "chunked") {
      throw new BadRequestHead(501, "unsupported Transfer-Encoding (only chunked is accepted)");
    }
    framing = "chunked";
  } else if (contentLength !== undefined) {
    length = parseContentLength(contentLength);
    framing = length === 0 ? "none" : "length";
  }

  const tokens = connection === "" ? "" : `,${connection.toLowerCase().replace(/[ \t]/g, "")},`;
  const keepAlive = minorVersion === 1 ? !tokens.includes(",close,") : tokens.includes(",keep-alive,");
  let expectContinue = false;
  if (expect !== undefined) {
    if (expect.toLowerCase() !== "100-continue") throw new BadRequestHead(417, "unsupported Expect header");
    expectContinue = minorVersion === 1;
  }
  return { method, target, minorVersion, headers, host, framing, contentLength: length, keepAlive, expectContinue };
}

/** One value, or a list of identical values (RFC 9110 §8.6); anything else is ambiguous. */
function parseContentLength(value: string): number {
  let length: string | undefined;
  for (const part of value.split(",")) {
    const item = trimOws(part);
    if (!digits.test(item)) throw bad("invalid Content-Length");
    if (length !== undefined && item !== length) throw bad("conflicting Content-Length values");
    length = item;
  }
  if (length === undefined || length.length > 15) throw bad("invalid Content-Length");
  return Number(length);
}

function trimOws(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && (value.charCodeAt(start) === 0x20 || value.charCodeAt(start) === 0x09)) start++;
  while (end > start && (value.charCodeAt(end - 1) === 0x20 || value.charCodeAt(end - 1) === 0x09)) end--;
  return start === 0 && end === value.length ? value : value.slice(start, end);
}

function bad(message: string): BadRequestHead {
  return new BadRequestHead(400, message);
}
