/**
 * What a stdio client set up in its MCP session at the remote: the log level (`logging/setLevel`) and its
 * resource subscriptions. The remote keeps them in the session, so a session it forgot (it restarted)
 * loses them; `proxy stdio` opens a new one for the client (stdio-relay.ts) and sets them up again from
 * here, or the client would get log lines it turned off, and no more updates of what it subscribed to,
 * without being told.
 */
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

export interface SessionSetup {
  /** Takes note of a request the remote accepted (sent without an HTTP error). */
  noteSent(message: JSONRPCMessage): void;
  /** The requests that set the session up as the client left it: the last log level, then each subscription. */
  replay(): JSONRPCMessage[];
}

export function sessionSetup(): SessionSetup {
  let level: JSONRPCMessage | undefined;
  // By URI: subscribing twice is one subscription, and an unsubscribe ends it.
  const subscriptions = new Map<string, JSONRPCMessage>();
  return {
    noteSent(message) {
      if (!("method" in message) || !("id" in message)) return;
      const uri = (message.params as { uri?: unknown } | undefined)?.uri;
      if (message.method === "logging/setLevel") level = message;
      else if (message.method === "resources/subscribe" && typeof uri === "string") subscriptions.set(uri, message);
      else if (message.method === "resources/unsubscribe" && typeof uri === "string") subscriptions.delete(uri);
    },
    replay: () => [...(level ? [level] : []), ...subscriptions.values()],
  };
}

/**
 * The lists an initialize's answer says may change (`listChanged`): the client, told so, may be sent their
 * list_changed; of a list it was not told about (the server it met did not have it) it expects none.
 */
export function changingLists(answer: JSONRPCMessage): string[] {
  const capabilities = (answer as { result?: { capabilities?: Record<string, unknown> } }).result?.capabilities;
  return ["tools", "prompts", "resources"].filter(
    (list) => (capabilities?.[list] as { listChanged?: unknown } | undefined)?.listChanged === true,
  );
}
