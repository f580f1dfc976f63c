/**
 * A plain HTTP relay in front of a real MCP endpoint that writes down what reaches it: each request's
 * method, headers and JSON body, and which requests the client closed before their answer ended. A
 * gateway test puts it between the gateway and a member (registered as a remote workload at the
 * relay's URL) to see exactly what the member was sent, and by which path: the gateway's fast lane
 * sends string ids of its own, the SDK client numeric ones.
 */

export interface RecordedRequest {
  readonly method: string;
  readonly headers: Headers;
  /** The JSON body, or undefined (a GET, DELETE, or a body that is not JSON). */
  readonly body: Record<string, any> | undefined;
  /** The client closed the response before it ended. */
  aborted: boolean;
}

export interface RecordingProxy {
  readonly url: string;
  readonly seen: RecordedRequest[];
  /** The recorded tools/call requests for `tool` (the member's own name). */
  calls(tool: string): RecordedRequest[];
  /** Holds a request back until the promise it returns settles, when it returns one (a test sets it). */
  hold: ((request: RecordedRequest) => Promise<void> | undefined) | undefined;
  stop(): void;
}

export function startRecordingProxy(target: string): RecordingProxy {
  const seen: RecordedRequest[] = [];
  let proxy: RecordingProxy | undefined;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const text = req.method === "POST" ? await req.text() : "";
      let body: Record<string, any> | undefined;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = undefined;
      }
      const record: RecordedRequest = { method: req.method, headers: req.headers, body, aborted: false };
      seen.push(record);
      const headers = new Headers(req.headers);
      headers.delete("host");
      headers.delete("content-length");
      req.signal.addEventListener("abort", () => {
        record.aborted = true;
      });
      await proxy?.hold?.(record);
      let response: Response;
      try {
        response = await fetch(target, {
          method: req.method,
          headers,
          ...(text ? { body: text } : {}),
          signal: req.signal,
          redirect: "manual",
        });
      } catch {
        // The member is down (a test restarting it): answered as a relay would, not thrown into
        // Bun.serve, where the test runner counts it as an unhandled error of whichever test runs.
        return new Response("member unreachable", { status: 502 });
      }
      return new Response(response.body, { status: response.status, headers: response.headers });
    },
  });
  proxy = {
    url: `http://127.0.0.1:${server.port}/mcp`,
    seen,
    calls: (tool) => seen.filter((r) => r.body?.method === "tools/call" && r.body.params?.name === tool),
    hold: undefined,
    stop: () => server.stop(true),
  };
  return proxy;
}
