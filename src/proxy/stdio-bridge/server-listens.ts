/**
 * The bridge's own `subscriptions/listen` streams at a 2026-07-28 stdio server, opened on
 * behalf of the 2025-era sessions in front of it: such a server sends list changes and
 * resource updates only to listeners, while sessions expect them unasked (list_changed) or
 * after resources/subscribe. One listen covers every list change the server announces; one
 * more per resource URI some session subscribed to, cancelled when the last one leaves.
 */
import type { JsonRpcMessage } from "../mcp-message.ts";
import { metaKey, modernProtocolVersion } from "./modern.ts";

export interface ServerListensHost {
  send(message: JsonRpcMessage): void;
  /** A request id whose answer the bridge ignores (a listen is answered only when it ends). */
  ignoredId(): number;
  readonly clientInfo: { name: string; version: string };
}

export class ServerListens {
  readonly #ids = new Set<number>();
  readonly #byUri = new Map<string, number>();
  readonly #host: ServerListensHost;

  constructor(host: ServerListensHost) {
    this.#host = host;
  }

  /** Whether a notification tagged with this subscription id is for the sessions. */
  owns(subscriptionId: number): boolean {
    return this.#ids.has(subscriptionId);
  }

  /** Listens for every list change the server's capabilities announce. */
  lists(capabilities: Record<string, unknown>): void {
    const changes = (name: string) =>
      (capabilities[name] as { listChanged?: unknown } | undefined)?.listChanged === true;
    const notifications = {
      ...(changes("tools") ? { toolsListChanged: true } : {}),
      ...(changes("prompts") ? { promptsListChanged: true } : {}),
      ...(changes("resources") ? { resourcesListChanged: true } : {}),
    };
    if (Object.keys(notifications).length > 0) this.#open(notifications);
  }

  /** Starts or stops listening for updates of one resource. */
  resource(uri: string, on: boolean): void {
    const id = this.#byUri.get(uri);
    if (on && id === undefined) this.#byUri.set(uri, this.#open({ resourceSubscriptions: [uri] }));
    if (!on && id !== undefined) {
      this.#byUri.delete(uri);
      this.#ids.delete(id);
      this.#host.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id } });
    }
  }

  #open(notifications: Record<string, unknown>): number {
    const id = this.#host.ignoredId();
    this.#ids.add(id);
    this.#host.send({
      jsonrpc: "2.0",
      id,
      method: "subscriptions/listen",
      params: {
        _meta: {
          [metaKey.protocolVersion]: modernProtocolVersion,
          [metaKey.clientCapabilities]: {},
          [metaKey.clientInfo]: this.#host.clientInfo,
        },
        notifications,
      },
    });
    return id;
  }
}
