/**
 * `mcpmgr proxy stdio URL_OR_WORKLOAD`: a remote (or local workload's) MCP endpoint exposed
 * as a stdio server, for clients that only speak stdio. Messages are relayed as they are, in
 * both directions; the client's own messages choose the protocol era towards the remote:
 *   - a request declaring a 2026-07-28 (or later) protocol version in its `_meta` is sent
 *     statelessly, one POST each with the headers that revision requires
 *     (proxy/remote-client/); the client does its own version negotiation (`server/discover`,
 *     UnsupportedProtocolVersion) and falls back to `initialize` with an older remote;
 *   - everything else (`initialize` and what follows it) goes through the SDK's streamable
 *     HTTP client transport: sessions, SSE answers, the server→client GET stream.
 * mcpmgr adds its own credentials (the same outgoing-auth options as `proxy`) to every HTTP
 * request. stdout carries only the protocol; everything else goes to stderr.
 */
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { parseArgv } from "../config/argv.ts";
import { outgoingAuthSpec } from "../config/outgoing-auth-spec.ts";
import { proxyStdioOptions } from "../config/proxy-stdio-options.ts";
import { checkOutgoingAuthRules } from "../config/rules.ts";
import { McpmgrError } from "../errors.ts";
import { modernVersionOf } from "../proxy/remote-client/request-headers.ts";
import { type JsonRpcRequest, StatelessRequests } from "../proxy/remote-client/stateless-requests.ts";
import { log } from "./output.ts";
import { prepareOutgoingAuthentication } from "./outgoing-auth.ts";
import { openStore, workloadUrl } from "./workload-arg.ts";

async function targetOf(text: string): Promise<URL> {
  if (/^https?:\/\//i.test(text)) return new URL(text);
  const record = await openStore().get(text);
  if (record === undefined) {
    throw new McpmgrError("WORKLOAD_NOT_FOUND", `${JSON.stringify(text)} is neither a URL nor a workload`, {
      hint: "give the MCP endpoint's URL (https://host/mcp) or a name from 'mcpmgr list'",
    });
  }
  return new URL(workloadUrl(record));
}

export async function runProxyStdio(argv: readonly string[]): Promise<void> {
  const { values, given, positionals, passthrough } = parseArgv(argv, proxyStdioOptions, "proxy stdio", false);
  if (passthrough.length > 0)
    throw new McpmgrError("INVALID_ARGUMENT", "'mcpmgr proxy stdio' takes no arguments after --", {
      hint: "remove them",
    });
  const [targetText, ...extra] = positionals;
  if (targetText === undefined)
    throw new McpmgrError("MISSING_OPTION", "missing URL_OR_WORKLOAD", {
      hint: "usage: mcpmgr proxy stdio URL_OR_WORKLOAD [options]",
    });
  if (extra.length > 0)
    throw new McpmgrError("INVALID_ARGUMENT", `unexpected argument ${JSON.stringify(extra[0])}`, {
      hint: "give one URL or workload name",
    });
  checkOutgoingAuthRules(given);
  const spec = outgoingAuthSpec(values, given);
  if (spec.tokenExchange) {
    throw new McpmgrError(
      "CONFLICTING_OPTIONS",
      "--token-exchange-url exchanges an incoming client's token; a stdio client has none",
      { hint: "use --remote-auth or a bearer token" },
    );
  }
  const target = await targetOf(targetText);
  const upstreamFetch = await prepareOutgoingAuthentication(spec, target, "stdio");

  const remote = new StreamableHTTPClientTransport(
    target,
    upstreamFetch ? { fetch: (url, init) => upstreamFetch(String(url), init ?? {}) } : {},
  );
  const local = new StdioServerTransport();
  const stateless = new StatelessRequests({
    url: target,
    fetch: upstreamFetch ?? ((url, init) => fetch(url, init)),
    deliver: (message) => void local.send(message as JSONRPCMessage),
    warn: (text) => log.warn(`remote: ${text}`),
  });
  let closing = false;
  const finish = async (why?: string) => {
    if (closing) return;
    closing = true;
    if (why) log.error(why);
    stateless.abortAll();
    // Ends the remote session (DELETE) when there is one.
    if (remote.sessionId !== undefined) await remote.terminateSession().catch(() => {});
    await remote.close().catch(() => {});
    await local.close().catch(() => {});
    process.exit(why ? 1 : 0);
  };

  const pendingInitialize = new Set<string | number>();
  /** Requests sent and not answered yet: stdin may end before their answers arrive. */
  const inFlight = new Set<string | number>();
  // One message at a time, in order: a cancellation must not overtake its request.
  let sending: Promise<void> = Promise.resolve();
  local.onmessage = (message: JSONRPCMessage) => {
    const isRequest = "method" in message && "id" in message && message.id !== undefined;
    const version = isRequest ? modernVersionOf(message) : undefined;
    if (version !== undefined) {
      // Stateless: nothing to keep in order with other messages, each request stands alone.
      void stateless.send(message as JsonRpcRequest, version);
      return;
    }
    // On stdio a 2026-07-28 client cancels with a notification; over HTTP closing the stream says it.
    if (
      "method" in message &&
      message.method === "notifications/cancelled" &&
      stateless.cancel(message.params?.requestId)
    )
      return;
    if (isRequest && message.method === "initialize") pendingInitialize.add(message.id as string | number);
    if (isRequest) inFlight.add(message.id as string | number);
    sending = sending.then(() =>
      remote.send(message).catch((err: unknown) => {
        const text = err instanceof Error ? err.message : String(err);
        // A request that could not be delivered gets an error answer, not silence.
        if (isRequest) {
          inFlight.delete(message.id as string | number);
          void local.send({
            jsonrpc: "2.0",
            id: message.id as string | number,
            error: { code: -32000, message: `mcpmgr could not reach the remote MCP server: ${text}` },
          });
        } else log.warn(`could not deliver a message to the remote: ${text}`);
      }),
    );
  };
  remote.onmessage = (message: JSONRPCMessage) => {
    if (!("method" in message) && "id" in message && message.id !== undefined) inFlight.delete(message.id);
    // The negotiated version goes on every later HTTP request (MCP-Protocol-Version).
    if ("id" in message && message.id !== undefined && pendingInitialize.delete(message.id) && "result" in message) {
      const version = (message.result as { protocolVersion?: unknown }).protocolVersion;
      if (typeof version === "string") remote.setProtocolVersion(version);
    }
    void local.send(message);
  };
  remote.onerror = (err) => log.warn(`remote: ${err.message}`);
  local.onerror = (err) => log.warn(`stdin: ${err.message}`);
  // End of input: let what was asked be answered (bounded), then end the remote session.
  const drainThenFinish = async () => {
    await sending;
    const deadline = Date.now() + 30_000;
    while ((inFlight.size > 0 || stateless.pending > 0) && Date.now() < deadline) await Bun.sleep(20);
    await finish();
  };
  local.onclose = () => void drainThenFinish();
  process.stdin.once("end", () => void drainThenFinish());
  await remote.start();
  await local.start();
  log.info(`relaying stdio to ${target.origin}${target.pathname}`);
  await new Promise(() => {});
}
