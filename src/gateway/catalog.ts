/**
 * The group's merged lists. One catalog connection per running workload lists its tools,
 * prompts, resources and resource templates, lists again when the workload says a list
 * changed, and the merged view is rebuilt only then (never per call). Tools and prompts get
 * gateway names (names.ts); resource URIs and templates stay as they are, and a resource URI
 * offered by two workloads goes to the first in name order (reported once).
 */
import { ProtocolError, ProtocolErrorCode, UriTemplate } from "@modelcontextprotocol/server";
import { SdkHttpError, type PriorDiscovery } from "@modelcontextprotocol/client";
import { assignNames, ownedKey, type NameAssignment, type OwnedName, type PrefixMode } from "./names.ts";
import type { Member } from "./membership.ts";
import { anyResult } from "./sdk.ts";
import { connectUpstream, eraOf, type Upstream } from "./upstream.ts";
import { errorMessage } from "../errors.ts";

export type ListKind = "tools" | "prompts" | "resources";

type Item = Readonly<Record<string, unknown>>;

export interface WorkloadLists {
  tools: Item[];
  prompts: Item[];
  resources: Item[];
  resourceTemplates: Item[];
}

export interface MergedView {
  readonly tools: readonly Item[];
  readonly prompts: readonly Item[];
  readonly resources: readonly Item[];
  readonly resourceTemplates: readonly Item[];
  readonly toolNames: NameAssignment;
  readonly promptNames: NameAssignment;
  /** Resource URI → the workload that listed it. */
  readonly resourceOwner: ReadonlyMap<string, string>;
  /** Templates in merge order, for routing a URI no workload listed. */
  readonly templates: readonly { readonly workload: string; readonly template: UriTemplate; readonly text: string }[];
  /**
   * The workloads behind the view, in name order: what each says it is, and its tools as it listed them
   * (the same array until it lists again), for search mode's per-workload index.
   */
  readonly workloads: readonly WorkloadTools[];
}

export interface WorkloadTools {
  readonly name: string;
  /** The server's description, else its instructions, else its title ("" when it gives none). */
  readonly summary: string;
  readonly tools: readonly Item[];
}

interface Connection {
  readonly member: Member;
  client?: Upstream;
  lists: WorkloadLists;
  summary: string;
  retry?: ReturnType<typeof setTimeout>;
  closed: boolean;
  /** Settles when the first connection attempt has succeeded or failed. */
  firstAttempt: Promise<void>;
}

export interface CatalogOptions {
  readonly prefixMode: PrefixMode;
  readonly timeoutMs: number;
  readonly onChange: (kinds: ReadonlySet<ListKind>) => void;
  readonly log: (level: "info" | "warn", text: string) => void;
  readonly retryMs?: number;
}

const empty = (): WorkloadLists => ({ tools: [], prompts: [], resources: [], resourceTemplates: [] });

const LIST_METHODS = {
  tools: ["tools/list", "tools"],
  prompts: ["prompts/list", "prompts"],
  resources: ["resources/list", "resources"],
  resourceTemplates: ["resources/templates/list", "resourceTemplates"],
} as const;

export class GroupCatalog {
  readonly #options: CatalogOptions;
  readonly #connections = new Map<string, Connection>();
  /** Workloads that were members once and are not now: their names get a clear error. */
  readonly #departed = new Set<string>();
  readonly #eras = new Map<string, PriorDiscovery>();
  #view: MergedView = merge([], "always");
  #reported = new Set<string>();

  constructor(options: CatalogOptions) {
    this.#options = options;
  }

  get view(): MergedView {
    return this.#view;
  }

  /** The era found by the catalog connection, so session connections skip the probe. */
  eraOf(workload: string): PriorDiscovery | undefined {
    return this.#eras.get(workload);
  }

  member(workload: string): Member | undefined {
    const connection = this.#connections.get(workload);
    return connection?.client ? connection.member : undefined;
  }

  /** Waits (up to `ms`) until every member's first connection attempt has settled. */
  async settled(ms: number): Promise<void> {
    const attempts = [...this.#connections.values()].map((c) => c.firstAttempt);
    await Promise.race([Promise.all(attempts), Bun.sleep(ms)]);
  }

  /** Waits (up to `ms`) for a workload that is joining right now, so a call during its join is not refused. */
  async joining(workload: string, ms: number): Promise<void> {
    const connection = this.#connections.get(workload);
    if (connection && !connection.client) await Promise.race([connection.firstAttempt, Bun.sleep(ms)]);
  }

  /** Why a workload cannot be reached, or undefined when it can. */
  whyUnavailable(workload: string): string | undefined {
    const connection = this.#connections.get(workload);
    if (connection?.client) return undefined;
    if (connection) return `workload '${workload}' is not answering`;
    if (this.#departed.has(workload)) return `workload '${workload}' is not running`;
    return undefined;
  }

  setMembers(members: readonly Member[]): void {
    const next = new Map(members.map((m) => [m.name, m]));
    let changed = false;
    for (const [name, connection] of this.#connections) {
      const member = next.get(name);
      if (member && member.url === connection.member.url) continue;
      this.#drop(connection);
      this.#connections.delete(name);
      this.#departed.add(name);
      this.#eras.delete(name);
      changed = true;
    }
    for (const member of members) {
      if (this.#connections.has(member.name)) continue;
      this.#departed.delete(member.name);
      const connection: Connection = {
        member,
        lists: empty(),
        summary: "",
        closed: false,
        firstAttempt: Promise.resolve(),
      };
      connection.firstAttempt = this.#connect(connection);
      this.#connections.set(member.name, connection);
    }
    if (changed) this.#rebuild();
  }

  close(): void {
    for (const connection of this.#connections.values()) this.#drop(connection);
    this.#connections.clear();
  }

  #drop(connection: Connection): void {
    connection.closed = true;
    clearTimeout(connection.retry);
    void connection.client?.close().catch(() => {});
  }

  async #connect(connection: Connection): Promise<void> {
    const { member } = connection;
    let client: Upstream | undefined;
    try {
      client = await connectUpstream(
        member,
        {
          onNotification: (notification) => {
            const kind = listKindOf(notification.method);
            if (kind && connection.client) void this.#relist(connection, kind);
          },
        },
        this.#options.timeoutMs,
      );
      if (connection.closed) {
        await client.close();
        return;
      }
      const lists = await listAll(client);
      if (connection.closed) {
        await client.close();
        return;
      }
      const era = eraOf(client);
      if (era) this.#eras.set(member.name, era);
      connection.client = client;
      connection.lists = lists;
      connection.summary = summaryOf(client);
      this.#options.log("info", `workload '${member.name}' joined (${member.url})`);
      this.#rebuild();
    } catch (err) {
      await client?.close().catch(() => {});
      if (connection.closed) return;
      this.#options.log(
        "warn",
        `workload '${member.name}' at ${member.url} cannot be reached: ${errorMessage(err)}; retrying`,
      );
      connection.retry = setTimeout(() => void this.#connect(connection), this.#options.retryMs ?? 2_000);
      connection.retry.unref?.();
    }
  }

  async #relist(connection: Connection, kind: ListKind): Promise<void> {
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
      this.#rebuild();
    } catch (err) {
      this.#options.log("warn", `workload '${connection.member.name}': listing ${kind} failed: ${errorMessage(err)}`);
    }
  }

  #rebuild(): void {
    const live = [...this.#connections.values()]
      .filter((c) => c.client !== undefined)
      .map((c) => ({ workload: c.member.name, lists: c.lists, summary: c.summary }));
    const next = merge(live, this.#options.prefixMode);
    for (const line of [...next.toolNames.collisions, ...next.promptNames.collisions]) {
      if (this.#reported.has(line)) continue;
      this.#reported.add(line);
      this.#options.log("warn", `name collision: ${line}`);
    }
    const previous = this.#view;
    this.#view = next;
    const kinds = new Set<ListKind>();
    if (!sameItems(previous.tools, next.tools)) kinds.add("tools");
    if (!sameItems(previous.prompts, next.prompts)) kinds.add("prompts");
    if (
      !sameItems(previous.resources, next.resources) ||
      !sameItems(previous.resourceTemplates, next.resourceTemplates)
    )
      kinds.add("resources");
    if (kinds.size > 0) this.#options.onChange(kinds);
  }
}

function listKindOf(method: string): ListKind | undefined {
  if (method === "notifications/tools/list_changed") return "tools";
  if (method === "notifications/prompts/list_changed") return "prompts";
  if (method === "notifications/resources/list_changed") return "resources";
  return undefined;
}

async function listKind(client: Upstream, kind: keyof WorkloadLists): Promise<Item[]> {
  const capability = kind === "resourceTemplates" ? "resources" : kind;
  if (client.getServerCapabilities()?.[capability] === undefined) return [];
  const [method, field] = LIST_METHODS[kind];
  const items: Item[] = [];
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
    if (Array.isArray(list)) items.push(...(list as Item[]));
    cursor = typeof result.nextCursor === "string" ? result.nextCursor : undefined;
    if (!cursor) break;
  }
  return items;
}

async function listAll(client: Upstream): Promise<WorkloadLists> {
  const [tools, prompts, resources, resourceTemplates] = await Promise.all([
    listKind(client, "tools"),
    listKind(client, "prompts"),
    listKind(client, "resources"),
    listKind(client, "resourceTemplates"),
  ]);
  return { tools, prompts, resources, resourceTemplates };
}

/** What a workload says it is, for search mode: its description, else its instructions, else its title. */
function summaryOf(client: Upstream): string {
  const info = client.getServerVersion() as { title?: unknown; description?: unknown } | undefined;
  for (const text of [info?.description, client.getInstructions(), info?.title])
    if (typeof text === "string" && text.trim() !== "") return text.trim();
  return "";
}

/** The merged view of the workloads' lists (exported for tests that need a view without connections). */
export function merge(
  live: readonly { workload: string; lists: WorkloadLists; summary?: string }[],
  mode: PrefixMode,
): MergedView {
  const sorted = [...live].sort((a, b) => (a.workload < b.workload ? -1 : a.workload > b.workload ? 1 : 0));
  const named = (field: "tools" | "prompts"): OwnedName[] =>
    sorted.flatMap(({ workload, lists }) =>
      lists[field]
        .filter((item) => typeof item.name === "string")
        .map((item) => ({ workload, name: item.name as string })),
    );
  const toolNames = assignNames(named("tools"), mode);
  const promptNames = assignNames(named("prompts"), mode);
  const renamed = (field: "tools" | "prompts", names: NameAssignment): Item[] => {
    const out: Item[] = [];
    const seen = new Set<string>();
    for (const { workload, lists } of sorted) {
      for (const item of lists[field]) {
        const gatewayName = names.byOwnedName.get(ownedKey(workload, item.name as string));
        if (gatewayName === undefined || seen.has(gatewayName)) continue;
        seen.add(gatewayName);
        out.push(gatewayName === item.name ? item : { ...item, name: gatewayName });
      }
    }
    return out.sort((a, b) => ((a.name as string) < (b.name as string) ? -1 : 1));
  };
  const resourceOwner = new Map<string, string>();
  const resources: Item[] = [];
  const resourceTemplates: Item[] = [];
  const templates: { workload: string; template: UriTemplate; text: string }[] = [];
  for (const { workload, lists } of sorted) {
    for (const resource of lists.resources) {
      if (typeof resource.uri !== "string" || resourceOwner.has(resource.uri)) continue;
      resourceOwner.set(resource.uri, workload);
      resources.push(resource);
    }
    for (const item of lists.resourceTemplates) {
      if (typeof item.uriTemplate !== "string") continue;
      try {
        templates.push({ workload, template: new UriTemplate(item.uriTemplate), text: item.uriTemplate });
        resourceTemplates.push(item);
      } catch {
        // A template the SDK cannot parse cannot be routed either: leave it out.
      }
    }
  }
  return {
    tools: renamed("tools", toolNames),
    prompts: renamed("prompts", promptNames),
    resources,
    resourceTemplates,
    toolNames,
    promptNames,
    resourceOwner,
    templates,
    workloads: sorted.map(({ workload, lists, summary }) => ({
      name: workload,
      summary: summary ?? "",
      tools: lists.tools,
    })),
  };
}

function sameItems(a: readonly Item[], b: readonly Item[]): boolean {
  if (a.length !== b.length) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The workload a resource URI belongs to: the one that listed it, else the first whose template matches. */
export function resourceWorkload(view: MergedView, uri: string): string | undefined {
  const listed = view.resourceOwner.get(uri);
  if (listed !== undefined) return listed;
  for (const { workload, template } of view.templates) if (template.match(uri) !== null) return workload;
  return undefined;
}
