/**
 * `subscriptions/listen` (2026-07-28) served by the bridge for an older server, whose
 * change notifications (list_changed, resources/updated) otherwise go to sessions. Each
 * listen stream first gets its acknowledgment (the part of its filter the server can
 * honour, by its capabilities), then only the notification kinds it asked for, each tagged
 * with the listen request's id. Resource URIs it names are subscribed at the server once,
 * however many clients want them, and unsubscribed when the last one leaves. When mcpmgr
 * ends a stream itself, it answers the listen request first (a graceful end).
 */
import type { JsonRpcId } from "../jsonrpc.ts";
import type { JsonRpcMessage } from "../mcp-message.ts";
import { metaKey } from "./modern.ts";
import type { Sink } from "./sink.ts";

interface Filter {
  toolsListChanged?: boolean;
  promptsListChanged?: boolean;
  resourcesListChanged?: boolean;
  resourceSubscriptions?: string[];
}

interface Listener {
  readonly id: JsonRpcId;
  readonly sink: Sink;
  readonly filter: Filter;
}

export interface ListenHubOptions {
  readonly subscribe: (uri: string) => void;
  readonly unsubscribe: (uri: string) => void;
}

const kindOf: Readonly<Record<string, keyof Filter>> = {
  "notifications/tools/list_changed": "toolsListChanged",
  "notifications/prompts/list_changed": "promptsListChanged",
  "notifications/resources/list_changed": "resourcesListChanged",
};

export class ListenHub {
  readonly #listeners = new Set<Listener>();
  readonly #options: ListenHubOptions;

  constructor(options: ListenHubOptions) {
    this.#options = options;
  }

  /** Starts a listen stream on `sink` (which stays open until the client or mcpmgr ends it). */
  open(
    message: JsonRpcMessage,
    sink: Sink & { onClose?(listener: () => void): void },
    capabilities: Record<string, unknown>,
  ): void {
    const asked = (message.params?.notifications ?? {}) as Filter;
    const has = (name: string, flag: string) => {
      const capability = capabilities[name] as Record<string, unknown> | undefined;
      return capability?.[flag] === true;
    };
    const filter: Filter = {};
    if (asked.toolsListChanged === true && has("tools", "listChanged")) filter.toolsListChanged = true;
    if (asked.promptsListChanged === true && has("prompts", "listChanged")) filter.promptsListChanged = true;
    if (asked.resourcesListChanged === true && has("resources", "listChanged")) filter.resourcesListChanged = true;
    if (Array.isArray(asked.resourceSubscriptions) && has("resources", "subscribe"))
      filter.resourceSubscriptions = [...new Set(asked.resourceSubscriptions.filter((u) => typeof u === "string"))];
    const listener: Listener = { id: message.id as JsonRpcId, sink, filter };
    sink.send({
      jsonrpc: "2.0",
      method: "notifications/subscriptions/acknowledged",
      params: { _meta: { [metaKey.subscriptionId]: listener.id }, notifications: filter },
    });
    this.#listeners.add(listener);
    for (const uri of filter.resourceSubscriptions ?? []) this.#options.subscribe(uri);
    sink.onClose?.(() => this.#drop(listener));
  }

  /** A change notification from the server, to the streams that asked for its kind. */
  deliver(message: JsonRpcMessage): void {
    const kind = kindOf[message.method as string];
    const uri = message.method === "notifications/resources/updated" ? String(message.params?.uri) : undefined;
    for (const listener of this.#listeners) {
      const wanted =
        kind !== undefined
          ? listener.filter[kind] === true
          : uri !== undefined && listener.filter.resourceSubscriptions?.includes(uri);
      if (!wanted) continue;
      const params = { ...message.params, _meta: { ...message.params?._meta, [metaKey.subscriptionId]: listener.id } };
      if (!listener.sink.send({ ...message, params })) this.#drop(listener);
    }
  }

  /** Ends every stream gracefully: the listen request is answered, then its stream closes. */
  closeAll(): void {
    for (const listener of [...this.#listeners]) {
      listener.sink.send({
        jsonrpc: "2.0",
        id: listener.id,
        result: { resultType: "complete", _meta: { [metaKey.subscriptionId]: listener.id } },
      });
      this.#drop(listener);
    }
  }

  #drop(listener: Listener): void {
    if (!this.#listeners.delete(listener)) return;
    for (const uri of listener.filter.resourceSubscriptions ?? []) this.#options.unsubscribe(uri);
  }
}
