/**
 * A server's streaming answer relayed through a stream the test holds, for fixtures that count the
 * streams open or end them as a network hop that drops the connection would. `cut()` ends it (the
 * client sees its end, the server's stream is cancelled); `onEnd` is called once, however it ends:
 * cut, the server ending it, or the client going away (an answer without a body: at once).
 */
export interface RelayedBody {
  readonly response: Response;
  cut(): void;
}

export function relayedBody(response: Response, onEnd: () => void = () => {}): RelayedBody {
  if (response.body === null) {
    queueMicrotask(onEnd); // ended already; told as the others are, after this returns
    return { response, cut: () => {} };
  }
  const inner = response.body.getReader();
  let open = true;
  const end = (): boolean => {
    if (!open) return false;
    open = false;
    onEnd();
    void inner.cancel().catch(() => {});
    return true;
  };
  let cut = () => {};
  const relayed = new ReadableStream<Uint8Array>({
    start(controller) {
      cut = () => {
        if (!end()) return;
        try {
          controller.close();
        } catch {
          // The client cancelled it meanwhile.
        }
      };
      void (async () => {
        while (open) {
          const chunk = await inner.read().catch(() => ({ done: true as const, value: undefined }));
          if (chunk.done) return cut();
          if (open) controller.enqueue(chunk.value);
        }
      })();
    },
    cancel: () => void end(),
  });
  return {
    response: new Response(relayed, { status: response.status, headers: response.headers }),
    cut: () => cut(),
  };
}
