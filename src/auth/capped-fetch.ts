/**
 * A cap on the answers to mcpmgr's own authorization requests (discovery documents, RFC 9728
 * metadata, JWKS, registration, token and introspection answers): small JSON documents, but some
 * of them come from a server a remote named, and read without a bound one takes as much memory
 * as it sends (a 1.5 GB metadata document: 1.9 GB of memory). The body is counted as it is read
 * and fails past the cap; nothing is read before the caller reads (a caller that cancels the body
 * reads nothing).
 */
import { cappedStream, declaredLength } from "../bounded-body.ts";
import type { Fetch } from "./trusted-fetch.ts";

/** Far above any real document of these kinds (a large JWKS is tens of KiB). */
const MAX_AUTHORIZATION_ANSWER_BYTES = 1024 * 1024;

export function cappedAnswers(base: Fetch, maxBytes = MAX_AUTHORIZATION_ANSWER_BYTES): Fetch {
  return async (input, init) => {
    const response = await base(input, init);
    const body = response.body;
    if (body === null) return response;
    const where = new URL(input instanceof URL ? input.href : input).origin;
    const tooLarge = () => new Error(`the answer of ${where} is larger than ${maxBytes / 1024} KiB`);
    // A body declared too large fails at its first read, not here: a caller that only wants the status
    // (the probe of whether a remote asks for authentication) cancels it unread.
    const counted = body.pipeThrough(cappedStream(maxBytes, declaredLength(response), tooLarge));
    // The body is passed on as fetch decoded it: its length and encoding no longer describe it.
    const headers = new Headers(response.headers);
    headers.delete("content-length");
    headers.delete("content-encoding");
    return new Response(counted, { status: response.status, statusText: response.statusText, headers });
  };
}
