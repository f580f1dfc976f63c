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
  const end = () => {
    if (ended) return;
    ended = true;
    observer.onEnd();
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
      observer.onChunk?.(chunk.value);
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
