/**
 * The gateway learns that the SDK gave up reopening a member session's event stream only from the text
 * of an error (upstream.ts `streamGaveUp`): SDK 2.4.0 gives that moment no code, class or callback of its
 * own. This drives the installed SDK's own transport into it against a real HTTP server (its event
 * stream ends at once, and every reopening is refused), with the gateway's reconnection settings, so a
 * rewording in a later SDK fails here instead of leaving lost member sessions unnoticed.
 */
import { expect, test } from "bun:test";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { MEMBER_RECONNECTION, streamGaveUp } from "../../src/gateway/upstream.ts";
import { eventually } from "../support/raw-http.ts";

test("the SDK's give-up on a stream it cannot reopen is told apart from the failed reopenings before it", async () => {
  let gets = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      if (req.method === "POST") return new Response(null, { status: 202, headers: { "mcp-session-id": "s1" } });
      // The first event stream opens and ends at once (a workload that went away); its reopenings fail.
      if (gets++ > 0) return new Response("gone", { status: 503 });
      return new Response("", { headers: { "content-type": "text/event-stream" } });
    },
  });
  const errors: Error[] = [];
  // The gateway's retries, without its pauses (they change nothing in what is reported).
  const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${server.port}/mcp`), {
    reconnectionOptions: { ...MEMBER_RECONNECTION, initialReconnectionDelay: 1, maxReconnectionDelay: 1 },
  });
  transport.onerror = (err) => void errors.push(err);
  try {
    await transport.start();
    await transport.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    await eventually(() => errors.some(streamGaveUp), 10_000, "the SDK to give up reopening the stream");
    expect(gets).toBe(1 + MEMBER_RECONNECTION.maxRetries);
    // Only the give-up matches; each failed reopening before it does not.
    expect(errors.filter(streamGaveUp)).toHaveLength(1);
    expect(errors.length).toBeGreaterThan(1);
    const gaveUp = errors.at(-1) as Error;
    expect(streamGaveUp(gaveUp)).toBe(true);
    // Still a plain Error with no code: once the SDK gives it one, match that instead of the text.
    expect(gaveUp.constructor).toBe(Error);
    expect("code" in gaveUp).toBe(false);
  } finally {
    await transport.close();
    server.stop(true);
  }
});
