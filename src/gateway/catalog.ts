/**
 * The group's merged lists. One catalog connection per running workload lists its tools,
 * prompts, resources and resource templates, lists again when the workload says a list
 * changed, and the merged view (merged-view.ts) is rebuilt only then (never per call). A flood
 * of list_changed costs one re-list in flight and one queued (member-relist.ts), a list past
 * LIST_LIMITS is refused (member-lists.ts), and a member that fails is retried with its failure
 * logged once, not once per retry (member-failure-log.ts). Tools and prompts get
 * gateway names (names.ts); resource URIs and templates stay as they are, and a resource URI
 * (or a template) offered by several workloads belongs to none of them (reported once): a read of
 * it is refused rather than routed to whichever workload sorts first. A connection's session with
 * its workload ends with a DELETE when the workload leaves the group or the catalog closes.
 */
import type { PriorDiscovery } from "@modelcontextprotocol/client";
import { merge, resourceRoute, sameItems, type MergedView, type WorkloadLists } from "./merged-view.ts";
import type { PrefixMode } from "./names.ts";
import type { Member } from "./membership.ts";
import { listAll } from "./member-lists.ts";
import { connectUpstream, endUpstream, eraOf, MEMBER_SESSION_END_MS, type Upstream } from "./upstream.ts";
import { failureLine, failureText, type LoggedFailure } from "./member-failure-log.ts";
import { type ListKind, listKindOf, type RelistedConnection, relistSoon } from "./member-relist.ts";
import { watchListChanges } from "./member-listen.ts";
import { type AnswerLimit, defaultMaxMessageBytes } from "../proxy/answer-limit.ts";
import { bareUri } from "../middleware/withheld-uri.ts";

export type { ListKind } from "./member-relist.ts";

export { LIST_LIMITS } from "./member-lists.ts";
export {
  merge,
  resourceRoute,
  type MergedView,
  type ResourceRoute,
  type WorkloadLists,
  type WorkloadTools,
} from "./merged-view.ts";

interface Connection extends RelistedConnection {
  /** The member as last read (its URL never changes: another URL is another connection). */
  member: Member;
  summary: string;
  retry?: ReturnType<typeof setTimeout>;
  /** Settles when the first connection attempt has succeeded or failed. */
  firstAttempt: Promise<void>;
  /** The connection attempt in progress or last made (a session it opens after close() is ended by it). */
  attempt: Promise<void>;
  /** The last failure logged, when, and how often it recurred since without a line. */
  failure?: LoggedFailure | undefined;
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
  /**
   * Why the gateway's data is withheld now, if it is (membership.ts `SecretHolders`): the log lines about
   * members' URIs then quote them without userinfo, query and fragment (middleware/withheld-uri.ts).
   */
  readonly withhold?: () => string | undefined;
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
  /**
   * What each departed workload listed when it left (for a connection that had listed), as a view of its own:
   * a URI no member lists is looked for again only at those that listed it (`mayServe`).
   */
  readonly #departedLists = new Map<string, WorkloadLists | MergedView>();
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

  /**
   * A member's resource URI (or template) as the gateway's log quotes it: without userinfo, query and
   * fragment while a member holds secrets (`withhold`), whole otherwise.
   */
  shownUri(uri: string): string {
    return this.#options.withhold?.() === undefined ? uri : bareUri(uri);
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

  /**
   * The workloads a URI no member lists may belong to, back already: those that left having listed it (or a
   * template matching it), and those not answering yet (their lists are not known). Never every workload that
   * ever left: each is read from the store (`joining`), and any client may send unknown URIs all day.
   */
  mayServe(uri: string): string[] {
    const silent = [...this.#connections].filter(([, connection]) => !connection.client).map(([name]) => name);
    const listed = [...this.#departedLists].filter(([workload, lists]) => {
      const view = "resourceOwner" in lists ? lists : merge([{ workload, lists, summary: "" }], "always");
      this.#departedLists.set(workload, view);
      return resourceRoute(view, uri) !== undefined;
    });
    return [...new Set([...listed.map(([workload]) => workload), ...silent])];
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
      if (member && member.url === connection.member.url) {
        // Kept, with what the membership read now: whether the member holds secrets may have changed at the
        // same URL (an env file given a key, a workload run again under its name and port with --secret), and
        // errors and log lines must stop quoting its words at once (member-words.ts).
        connection.member = member;
        continue;
      }
      void this.#drop(connection);
      this.#connections.delete(name);
      this.#departed.add(name);
      if (connection.client !== undefined) this.#departedLists.set(name, connection.lists);
      else this.#departedLists.delete(name);
      this.#eras.delete(name);
      changed = true;
    }
    for (const member of members) {
      if (this.#connections.has(member.name)) continue;
      this.#departed.delete(member.name);
      this.#departedLists.delete(member.name);
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
          describe: (err) => failureText(err, !connection.member.holdsSecrets),
        });
      }
    } catch (err) {
      // A session opened before the failure (its lists failed) is ended; the retry opens another.
      if (client !== undefined) void endSession(client);
      if (connection.closed) return;
      this.#reportFailure(connection, failureText(err, !connection.member.holdsSecrets));
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
    const report = failureLine(connection.failure, why, Date.now());
    if (report === undefined) return;
    connection.failure = report.logged;
    this.#options.log("warn", `workload '${connection.member.name}' at ${connection.member.url} ${report.line}`);
  }

  /** A re-list of one of the connection's lists (member-relist.ts), coalesced. */
  #relistSoon(connection: Connection, kind: ListKind): void {
    relistSoon(connection, kind, {
      rebuilt: () => this.#rebuild(),
      failed: (failedKind, err) =>
        this.#options.log(
          "warn",
          `workload '${connection.member.name}': listing ${failedKind} failed: ${failureText(err, !connection.member.holdsSecrets)}`,
        ),
    });
  }

  #rebuild(): void {
    const live = [...this.#connections.values()]
      .filter((c) => c.client !== undefined)
      .map((c) => ({ workload: c.member.name, lists: c.lists, summary: c.summary }));
    // Asked once per rebuild (a list changed), never per request.
    const withheld = this.#options.withhold?.() !== undefined;
    const next = merge(live, this.#options.prefixMode, withheld ? bareUri : undefined);
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
