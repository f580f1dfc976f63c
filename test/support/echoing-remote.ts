/**
 * A remote MCP server (Streamable HTTP, each request answered with plain JSON) that offers one tool,
 * `headers`, and answers a call of it with what `echo` makes of the request: what a debugging server
 * or an error page prints back (the headers it was sent, say), credentials included. For tests that
 * such an echo does not carry mcpmgr's secrets into audit data.
 */

/**
 * Starts it on a free port of 127.0.0.1; stop it with `stop(true)`. `seen` is given every POST first,
 * notifications included (to record what the remote was sent over time).
 */
export function startEchoingRemote(
  echo: (req: Request) => string,
  seen: (req: Request) => void = () => {},
): ReturnType<typeof Bun.serve> {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      // No stream of its own to offer (GET), and nothing to answer for a notification.
      if (req.method !== "POST") return new Response(null, { status: 405 });
      seen(req);
      const message = (await req.json()) as { id?: number; method: string };
      if (message.id === undefined) return new Response(null, { status: 202 });
      const result =
        message.method === "initialize"
          ? { protocolVersion: "2025-06-18", capabilities: { tools: {} }, serverInfo: { name: "echo", version: "1" } }
          : message.method === "tools/list"
            ? { tools: [{ name: "headers", inputSchema: { type: "object" } }] }
            : { content: [{ type: "text", text: echo(req) }] };
      return Response.json({ jsonrpc: "2.0", id: message.id, result });
    },
  });
}
