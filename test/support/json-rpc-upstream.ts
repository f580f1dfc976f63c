/**
 * The least an upstream can be: an HTTP server on a free loopback port that answers every
 * JSON-RPC request with an empty result, for tests where a workload or proxy only has to reach
 * something (its checks of options, tokens or headers are what they test).
 */

/** Answers any JSON-RPC request with `{}`; `seen` is called with each request before it is answered. */
export function emptyResultUpstream(seen: (req: Request) => void = () => {}): ReturnType<typeof Bun.serve> {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      seen(req);
      const body = (await req.json().catch(() => ({}))) as { id?: number };
      return Response.json({ jsonrpc: "2.0", id: body.id ?? null, result: {} });
    },
  });
}
