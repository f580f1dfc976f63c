/**
 * A workload's lists as the gateway's catalog reads them (tools, prompts, resources, resource
 * templates), page by page within LIST_LIMITS: a workload cannot make the gateway hold, merge and
 * serve an arbitrarily large catalog, nor keep it paging forever.
 */
import { ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/server";
import { SdkHttpError } from "@modelcontextprotocol/client";
import type { WorkloadLists } from "./merged-view.ts";
import { anyResult } from "./sdk.ts";
import type { Upstream } from "./upstream.ts";

type Item = Readonly<Record<string, unknown>>;

/**
 * Bounds on one workload's list of one kind: past them the list is refused (the previous one stays),
 * so a workload cannot make the gateway hold, merge and serve an arbitrarily large catalog.
 */
export const LIST_LIMITS = { items: 10_000, bytes: 16 * 1024 * 1024 } as const;

const LIST_METHODS = {
  tools: ["tools/list", "tools"],
  prompts: ["prompts/list", "prompts"],
  resources: ["resources/list", "resources"],
  resourceTemplates: ["resources/templates/list", "resourceTemplates"],
} as const;

export async function listKind(client: Upstream, kind: keyof WorkloadLists): Promise<Item[]> {
  const capability = kind === "resourceTemplates" ? "resources" : kind;
  if (client.getServerCapabilities()?.[capability] === undefined) return [];
  const [method, field] = LIST_METHODS[kind];
  const items: Item[] = [];
  let bytes = 0;
  let cursor: string | undefined;
  // A bound on pages keeps a server that always returns a cursor from holding the gateway.
  for (let page = 0; page < 100; page++) {
    let result: Record<string, unknown>;
    try {
      result = await client.request({ method, params: cursor ? { cursor } : {} }, anyResult);
    } catch (err) {
      // A server may offer resources without templates (or the like): nothing to list. Over the
      // 2026-07-28 wire an unknown method is HTTP 404 with -32601, which the SDK reports as an HTTP error.
      if (err instanceof ProtocolError && err.code === ProtocolErrorCode.MethodNotFound) return items;
      if (err instanceof SdkHttpError && err.status === 404) return items;
      throw err;
    }
    const list = result[field];
    if (Array.isArray(list)) {
      bytes += JSON.stringify(list).length;
      if (items.length + list.length > LIST_LIMITS.items || bytes > LIST_LIMITS.bytes)
        throw new Error(
          `its ${field} list is larger than the gateway accepts (${LIST_LIMITS.items} items, ${LIST_LIMITS.bytes / 1024 / 1024} MiB)`,
        );
      items.push(...(list as Item[]));
    }
    cursor = typeof result.nextCursor === "string" ? result.nextCursor : undefined;
    if (!cursor) break;
  }
  return items;
}

export async function listAll(client: Upstream): Promise<WorkloadLists> {
  const [tools, prompts, resources, resourceTemplates] = await Promise.all([
    listKind(client, "tools"),
    listKind(client, "prompts"),
    listKind(client, "resources"),
    listKind(client, "resourceTemplates"),
  ]);
  return { tools, prompts, resources, resourceTemplates };
}
