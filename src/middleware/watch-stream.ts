/**
 * Passes a response body on unchanged while letting an observer see each chunk and learn,
 * exactly once, that the stream is over — whether it ended, broke off upstream, or the
 * client went away (cancel). Pulled by hand rather than piped so that a cancel from the
 * client reaches both the observer and the upstream reader.
 */
export interface StreamObserver {
  readonly onChunk?: (chunk: Uint8Array) => void;
  readonly onEnd: () => void;
}

export function watchBody(response: Response, observer: StreamObserver): Response {
  if (response.body === null) return response;
  const reader = response.body.getReader();
  let ended = false;
  // The observer only watches: its failure must never break the client's stream.
  const end = () => {
    if (ended) return;
    ended = true;
    try {
      observer.onEnd();
    } catch {
      // ignored, see above
    }
  };
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (err) {
        end();
        controller.error(err);
        return;
      }
      if (chunk.done) {
        end();
        controller.close();
        return;
      }
      controller.enqueue(chunk.value);
      try {
        observer.onChunk?.(chunk.value);
      } catch {
        // ignored: the stream goes on
      }
    },
    async cancel(reason) {
      end();
      await reader.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/** A watcher that feeds SSE text to a parser (eventsource-parser's `feed`). */
export function sseFeeder(feed: (text: string) => void): (chunk: Uint8Array) => void {
  const decoder = new TextDecoder();
  return (chunk) => feed(decoder.decode(chunk, { stream: true }));
}

/**
 * A legacy HTTP+SSE (2024-11-05) session stream: a GET answered with an event stream and
 * no Mcp-Session-Id (streamable-HTTP GET streams always carry one).
 */
export function isLegacyStream(req: Request, response: Response): boolean {
  return (
    req.method === "GET" &&
    response.ok &&
    !req.headers.has("mcp-session-id") &&
    (response.headers.get("content-type") ?? "").startsWith("text/event-stream")
  );
}
