/**
 * The group's merged lists. One catalog connection per running workload lists its tools,
 * prompts, resources and resource templates, lists again when the workload says a list
 * changed, and the merged view (merged-view.ts) is rebuilt only then (never per call). A flood
 * of list_changed costs one re-list in flight and one queued, and a list past LIST_LIMITS is
 * refused (member-lists.ts). Tools and prompts get
 * gateway names (names.ts); resource URIs and templates stay as they are, and a resource URI
 * (or a template) offered by several workloads belongs to none of them (reported once): a read of
 * it is refused rather than routed to whichever workload sorts first. A connection's session with
 * its workload ends with a DELETE when the workload leaves the group or the catalog closes.
 */
import { SdkHttpError, type PriorDiscovery } from "@modelcontextprotocol/client";
import { merge, sameItems, type MergedView, type WorkloadLists } from "./merged-view.ts";
import type { PrefixMode } from "./names.ts";
import type { Member } from "./membership.ts";
import { listAll, listKind } from "./member-lists.ts";
import { connectUpstream, endUpstream, eraOf, MEMBER_SESSION_END_MS, type Upstream } from "./upstream.ts";
import { errorMessage } from "../errors.ts";
import { excerpt } from "../printable.ts";
import { watchListChanges } from "./member-listen.ts";
import { type AnswerLimit, defaultMaxMessageBytes } from "../proxy/answer-limit.ts";

export type ListKind = "tools" | "prompts" | "resources";

export { LIST_LIMITS } from "./member-lists.ts";
export {
  merge,
  resourceRoute,
  type MergedView,
  type ResourceRoute,
  type WorkloadLists,
  type WorkloadTools,
} from "./merged-view.ts";

interface Connection {
  readonly member: Member;
  client?: Upstream;
  lists: WorkloadLists;
  summary: string;
  retry?: ReturnType<typeof setTimeout>;
  closed: boolean;
  /**
   * Per list kind: a re-list in flight, and whether another notification arrived meanwhile. A
   * workload flooding `list_changed` gets at most one re-list running and one queued behind it.
   */
  relisting: Map<ListKind, { again: boolean }>;
  /** Settles when the first connection attempt has succeeded or failed. */
  firstAttempt: Promise<void>;
  /** The connection attempt in progress or last made (a session it opens after close() is ended by it). */
  attempt: Promise<void>;
  /** The last failure logged, when, and how often it recurred since without a line. */
  failure?: { readonly why: string; readonly at: number; repeats: number } | undefined;
}

export interface CatalogOptions {
  readonly prefixMode: PrefixMode;
  readonly timeoutMs: number;
  readonly onChange: (kinds: ReadonlySet<ListKind>) => void;
  /** A member's catalog connection is up (it joined, or came back after it left or failed). */
  readonly onJoin?: (workload: string) => void;
  readonly log: (level: "info" | "warn", text: string) => void;
  readonly retryMs?: number;
  /** The largest answer held from a member (MCPMGR_MAX_MESSAGE_BYTES; default 64 MiB). */
  readonly maxAnswerBytes?: number;
}

/** How much of a member's failure (an SDK error carries the member's whole HTTP error body) is logged. */
const FAILURE_EXCERPT_CHARS = 200;
/** The same failure of a member is logged again only after this long. */
const FAILURE_REPEAT_MS = 60_000;

/** A member's failure for one log line: its HTTP status when it answered with an error, then an excerpt. */
function failureText(err: unknown): string {
  if (err instanceof SdkHttpError && (err.status === 401 || err.status === 403)) return refusalText(err);
  const text = excerpt(errorMessage(err), FAILURE_EXCERPT_CHARS);
  return err instanceof SdkHttpError ? `HTTP ${err.status}: ${text}` : text;
}

/**
 * A member that refused the gateway: the SDK words it as a failed version negotiation (its first
 * request), which says nothing to the user; the member's own answer (a JSON-RPC error, say a
 * workload of a guarded group refusing a caller that is not its gateway) says why.
 */
function refusalText(err: SdkHttpError): string {
  const what = err.status === 401 ? "asked the gateway to authenticate" : "refused the gateway";
  const body = typeof err.data.text === "string" ? err.data.text : "";
  let why: unknown;
  try {
    why = (JSON.parse(body) as { error?: { message?: unknown } }).error?.message;
  } catch {
    why = undefined;
  }
  return typeof why === "string" && why !== ""
    ? `it ${what} (HTTP ${err.status}): ${excerpt(why, FAILURE_EXCERPT_CHARS)}`
    : `it ${what} (HTTP ${err.status})`;
}

/** Ends a catalog connection's member session (DELETE, bounded) and closes it; never fails. */
const endSession = (client: Upstream): Promise<void> => endUpstream(client, MEMBER_SESSION_END_MS).catch(() => {});

/**
 * Waits for `work`, at most `ms`. The timer is cleared as soon as the wait ends: a plain race with
 * `Bun.sleep` left one 30 s timer per call to a stopped member behind (thousands under a call stream).
 */
async function within(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const bound = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  try {
    await Promise.race([work, bound]);
  } finally {
    clearTimeout(timer);
  }
}

const empty = (): WorkloadLists => ({ tools: [], prompts: [], resources: [], resourceTemplates: [] });

export class GroupCatalog {
  readonly #options: CatalogOptions;
  readonly #connections = new Map<string, Connection>();
  /** Workloads that were members once and are not now: their names get a clear error. */
  readonly #departed = new Set<string>();
  readonly #eras = new Map<string, PriorDiscovery>();
  #view: MergedView = merge([], "always");
  #reported = new Set<string>();
  /** Reads a gone member's status anew, and the membership when it is back (membership.ts `readBack`). */
  #reread: ((workload: string) => Promise<void>) | undefined;

  constructor(options: CatalogOptions) {
    this.#options = options;
  }

  get view(): MergedView {
    return this.#view;
  }

  /**
   * The bound on a member's answers for a client's connection to it: past it the request fails and one
   * line is logged. (The catalog's own connection logs its failure itself.)
   */
  answerLimit(workload: string): AnswerLimit {
    return {
      maxBytes: this.#maxAnswerBytes,
      onExceeded: (text) => this.#options.log("warn", `workload '${workload}': ${text}`),
    };
  }

  get #maxAnswerBytes(): number {
    return this.#options.maxAnswerBytes ?? defaultMaxMessageBytes;
  }

  /** A warning about the gateway's clients, in the gateway's log. */
  warn(text: string): void {
    this.#options.log("warn", text);
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
    await within(Promise.all(attempts), ms);
  }

  /** How the membership is read again for a call that finds a member gone (`joining`). */
  rereadWith(reread: (workload: string) => Promise<void>): void {
    this.#reread = reread;
  }

  /**
   * Waits (up to `ms`) for a workload that is joining right now, so a call during its join is not refused.
   * A workload that left is looked up first: the membership learns a new status through fs.watch (debounced)
   * or its poll, so a call made as soon as `mcpmgr restart` returned found the member "not running" for a
   * few tens of milliseconds. Only such calls read the store (that member's own files; the whole membership only
   * once it runs again), never a call to a member that is up.
   */
  async joining(workload: string, ms: number): Promise<void> {
    if (this.#departed.has(workload) && this.#reread !== undefined) await within(this.#reread(workload), ms);
    const connection = this.#connections.get(workload);
    if (connection && !connection.client) await within(connection.firstAttempt, ms);
  }

  /** The workloads that left, or are not answering: a URI no member lists may be one of theirs, back already. */
  unavailable(): string[] {
    const silent = [...this.#connections].filter(([, connection]) => !connection.client).map(([name]) => name);
    return [...new Set([...this.#departed, ...silent])];
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
      void this.#drop(connection);
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
        relisting: new Map(),
        firstAttempt: Promise.resolve(),
        attempt: Promise.resolve(),
      };
      connection.firstAttempt = connection.attempt = this.#connect(connection);
      this.#connections.set(member.name, connection);
    }
    if (changed) this.#rebuild();
  }

  /**
   * Ends every catalog connection as a client session ends (upstream.ts `endUpstream`): its member
   * session with a DELETE, all at once within MEMBER_SESSION_END_MS, so members do not keep the
   * gateway's sessions until their idle expiry.
   */
  async close(): Promise<void> {
    const connections = [...this.#connections.values()];
    this.#connections.clear();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, MEMBER_SESSION_END_MS);
    });
    await Promise.race([Promise.allSettled(connections.map((connection) => this.#drop(connection))), bound]);
    clearTimeout(timer);
  }

  /**
   * Stops the connection's retries and ends its member session (a workload that left: it may be gone
   * already); resolves once that is done, and once an attempt still connecting has ended the session it opens.
   */
  async #drop(connection: Connection): Promise<void> {
    connection.closed = true;
    clearTimeout(connection.retry);
    const client = connection.client;
    await Promise.all([client === undefined ? undefined : endSession(client), connection.attempt]);
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
            if (kind && connection.client) this.#relistSoon(connection, kind);
          },
          answerLimit: { maxBytes: this.#maxAnswerBytes },
        },
        this.#options.timeoutMs,
      );
      // Closed meanwhile: the session just opened is ended as the others were.
      if (connection.closed) return endSession(client);
      const lists = await listAll(client);
      if (connection.closed) return endSession(client);
      const era = eraOf(client);
      if (era) this.#eras.set(member.name, era);
      connection.client = client;
      connection.lists = lists;
      connection.summary = summaryOf(client);
      connection.failure = undefined;
      this.#options.log("info", `workload '${member.name}' joined (${member.url})`);
      this.#rebuild();
      this.#options.onJoin?.(member.name);
      // Reached as a 2026-07-28 server: its list changes come only on a listen stream (member-listen.ts).
      if (client.getProtocolEra() !== "legacy") {
        const watched = client;
        watchListChanges(watched, {
          current: () => !connection.closed && connection.client === watched,
          relistAll: () => {
            for (const kind of ["tools", "prompts", "resources"] as const) this.#relistSoon(connection, kind);
          },
          log: (text) => this.#options.log("warn", `workload '${member.name}': ${text}`),
        });
      }
    } catch (err) {
      // A session opened before the failure (its lists failed) is ended; the retry opens another.
      if (client !== undefined) void endSession(client);
      if (connection.closed) return;
      this.#reportFailure(connection, failureText(err));
      connection.retry = setTimeout(() => {
        connection.attempt = this.#connect(connection);
      }, this.#options.retryMs ?? 2_000);
      connection.retry.unref?.();
    }
  }

  /**
   * One line per failure of a member, the same failure at most once per FAILURE_REPEAT_MS (with how
   * often it recurred meanwhile): a member failing every retry with a large error page must not bury
   * the gateway's log.
   */
  #reportFailure(connection: Connection, why: string): void {
    const { member } = connection;
    const now = Date.now();
    const last = connection.failure;
    if (last !== undefined && last.why === why && now - last.at < FAILURE_REPEAT_MS) {
      last.repeats++;
      return;
    }
    const again = last !== undefined && last.why === why && last.repeats > 0 ? ` (${last.repeats + 1} times)` : "";
    connection.failure = { why, at: now, repeats: 0 };
    this.#options.log("warn", `workload '${member.name}' at ${member.url} is unavailable${again}: ${why}; retrying`);
  }

  /** Coalesces list_changed notifications: one re-list in flight per kind, plus at most one pending. */
  #relistSoon(connection: Connection, kind: ListKind): void {
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
        await this.#relist(connection, kind);
      } while (state.again && !connection.closed);
      connection.relisting.delete(kind);
    })();
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
      // A workload that left (or a catalog that closed) meanwhile: its listing failed because it is gone.
      if (connection.closed) return;
      const why = failureText(err);
      this.#options.log("warn", `workload '${connection.member.name}': listing ${kind} failed: ${why}`);
    }
  }

  #rebuild(): void {
    const live = [...this.#connections.values()]
      .filter((c) => c.client !== undefined)
      .map((c) => ({ workload: c.member.name, lists: c.lists, summary: c.summary }));
    const next = merge(live, this.#options.prefixMode);
    const lines = [
      ...[...next.toolNames.collisions, ...next.promptNames.collisions, ...next.resourceCollisions].map(
        (line) => `name collision: ${line}`,
      ),
      ...next.refusedNames,
    ];
    for (const line of lines) {
      if (this.#reported.has(line)) continue;
      // Bounded: a workload changing its lists forever cannot grow the set without end.
      if (this.#reported.size >= 10_000) this.#reported.clear();
      this.#reported.add(line);
      this.#options.log("warn", line);
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

/**
 * What a workload says it is, for search mode: its description, else its title. Never its
 * `instructions`: those are written to steer a model, and would reach the gateway's own.
 */
function summaryOf(client: Upstream): string {
  const info = client.getServerVersion() as { title?: unknown; description?: unknown } | undefined;
  for (const text of [info?.description, info?.title])
    if (typeof text === "string" && text.trim() !== "") return text.trim();
  return "";
}
