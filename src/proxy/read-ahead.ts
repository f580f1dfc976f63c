/**
 * A streamed (non-SSE) answer of the upstream, read ahead before the forwarder answers with it
 * (forward.ts), so that one the upstream breaks early becomes a 502 instead of a reset.
 */
import { Buffer } from "node:buffer";
import { brokenBody } from "./forward-failures.ts";
import { isWholeResponse } from "./upstream/responses.ts";

/**
 * Bytes of a streamed (non-SSE) answer read before the answer starts: a JSON answer is no use
 * to the client until it is whole anyway, and one the upstream breaks within this much becomes
 * a 502 with a JSON-RPC error instead of a reset connection. Longer answers stream on from
 * there (a break later can only cut them).
 */
const readAheadBytes = 1024 * 1024;

export async function readAhead(upstream: Response): Promise<Response> {
  if (upstream.body === null || isWholeResponse(upstream)) return upstream;
  const reader = upstream.body.getReader();
  const held: Uint8Array[] = [];
  let size = 0;
  const answer = (body: Uint8Array | ReadableStream<Uint8Array>) =>
    new Response(body, { status: upstream.status, statusText: upstream.statusText, headers: upstream.headers });
  for (;;) {
    let chunk: Awaited<ReturnType<typeof reader.read>>;
    try {
      chunk = await reader.read();
    } catch {
      return brokenBody();
    }
    if (chunk.done) return answer(held.length === 1 ? (held[0] as Uint8Array) : Buffer.concat(held, size));
    held.push(chunk.value);
    size += chunk.value.byteLength;
    if (size >= readAheadBytes) break;
  }
  return answer(
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of held.splice(0)) controller.enqueue(chunk);
      },
      async pull(controller) {
        const next = await reader.read();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      },
      cancel: (reason) => reader.cancel(reason),
    }),
  );
}
