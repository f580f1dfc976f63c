/**
 * A catalog connection's lists read again when its workload says one changed (catalog.ts). A flood of
 * `list_changed` costs one re-list in flight per kind and one queued behind it, never one per notification;
 * the merged view is rebuilt once a re-list is in (`rebuilt`), never per call.
 */
import { listKind } from "./member-lists.ts";
import type { WorkloadLists } from "./merged-view.ts";
import type { Upstream } from "./upstream.ts";

export type ListKind = "tools" | "prompts" | "resources";

/** What a re-list needs of a catalog connection. */
export interface RelistedConnection {
  readonly member: { readonly name: string };
  client?: Upstream;
  lists: WorkloadLists;
  closed: boolean;
  /** Per list kind: a re-list in flight, and whether another notification arrived meanwhile. */
  readonly relisting: Map<ListKind, { again: boolean }>;
}

export interface RelistHooks {
  /** The connection's lists changed: the merged view is built again. */
  readonly rebuilt: () => void;
  /** A re-list that failed: one line, `err` words it (member-failure-log.ts). */
  readonly failed: (kind: ListKind, err: unknown) => void;
}

/** The list a notification says changed, if it is one. */
export function listKindOf(method: string): ListKind | undefined {
  if (method === "notifications/tools/list_changed") return "tools";
  if (method === "notifications/prompts/list_changed") return "prompts";
  if (method === "notifications/resources/list_changed") return "resources";
  return undefined;
}

/** Coalesces list_changed notifications: one re-list in flight per kind, plus at most one pending. */
export function relistSoon(connection: RelistedConnection, kind: ListKind, hooks: RelistHooks): void {
  const running = connection.relisting.get(kind);
  if (running) {
    running.again = true;
    return;
  }
  const state = { again: false };
  connection.relisting.set(kind, state);
  void (async () => {
    do {
      state.again = false;
      await relist(connection, kind, hooks);
    } while (state.again && !connection.closed);
    connection.relisting.delete(kind);
  })();
}

async function relist(connection: RelistedConnection, kind: ListKind, hooks: RelistHooks): Promise<void> {
  const client = connection.client;
  if (!client) return;
  try {
    const lists = { ...connection.lists };
    if (kind === "resources") {
      lists.resources = await listKind(client, "resources");
      lists.resourceTemplates = await listKind(client, "resourceTemplates");
    } else {
      lists[kind] = await listKind(client, kind);
    }
    if (connection.closed) return;
    connection.lists = lists;
    hooks.rebuilt();
  } catch (err) {
    // A workload that left (or a catalog that closed) meanwhile: its listing failed because it is gone.
    if (connection.closed) return;
    hooks.failed(kind, err);
  }
}
