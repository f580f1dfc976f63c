/**
 * Search mode at the gateway (`--tool-search`): the group's tools are indexed instead of listed, and
 * clients get find_tool and call_tool (tool-search/search-mode.ts). This module ties that index to
 * the gateway and to the caller's policies:
 *  - the index follows the catalog, workload by workload, with each tool under the name and
 *    description clients see (the static tool filter: `--tools` hides, `--tools-override` renames and
 *    redescribes), so a name find_tool returns is a name a direct call accepts;
 *  - find_tool shows a caller only what it may call: Cedar decides per tool for that caller, as it
 *    filters `tools/list` (middleware/cedar-decider.ts `toolVisibility`), before the limit is taken;
 *  - a call_tool has already become the direct call of its tool before the policies (call-tool-rewrite.ts),
 *    so the policies and audit decide and record the real tool; what reaches the gateway is answered
 *    here: the arguments of such a call checked against the tool's inputSchema (only now, after the
 *    policies, so a refused tool tells nothing about its schema), find_tool, and a call_tool the rewrite
 *    left (an unknown name: the closest names this caller may call).
 */
import { requestState } from "../auth/request-state.ts";
import { errorMessage } from "../errors.ts";
import { excerpt } from "../printable.ts";
import type { AuthzConfig } from "../config/authz-config.ts";
import type { ToolSearchSpec } from "../config/tool-search-spec.ts";
import type { ToolsPolicy } from "../config/tools-policy.ts";
import type { AliasesOf } from "../middleware/cedar-decider.ts";
import { filterList, realNameOf } from "../middleware/tool-filter.ts";
import type { JsonRpcId } from "../proxy/jsonrpc.ts";
import type { MergedView } from "./catalog.ts";
import type { Params } from "./sdk.ts";
import { SearchMode } from "./tool-search/search-mode.ts";
import { argumentsProblem, CALL_TOOL, FIND_TOOL, toolError } from "./tool-search/search-tools.ts";
import type { SearchableTool } from "./tool-search/tool-text.ts";

/** The gateway's own tools in search mode: the policies pass them and decide on what they reach. */
export const SEARCH_TOOLS: ReadonlySet<string> = new Set([FIND_TOOL, CALL_TOOL]);

type Item = Readonly<Record<string, unknown>>;
type Result = Record<string, unknown>;

/** Calls that were a call_tool before the rewrite: request id → the tool name the caller wrote. */
export type CallToolCalls = WeakMap<Request, ReadonlyMap<JsonRpcId, string>>;

export interface GatewaySearchOptions {
  readonly mode: SearchMode;
  /** `--tools` / `--tools-override` on gateway names. */
  readonly tools?: ToolsPolicy | undefined;
  /** Cedar's decision for the caller of a request on a (real) gateway tool name; undefined: no Cedar. */
  /** Cedar's decision for the caller: remembered (a boolean), or being asked of the evaluator. */
  readonly mayCall?: ((req: Request, tool: string) => boolean | Promise<boolean>) | undefined;
  readonly log: (level: "info" | "warn", text: string) => void;
  /** Embedding new tools after a change failed (the endpoint is down): find_tool falls back to keywords. */
  readonly onPrepareError?: (err: unknown) => void;
}

interface Indexed {
  readonly tools: readonly Item[];
  readonly key: string;
  /** When (Date.now()) it was indexed. */
  readonly at: number;
}

/**
 * A workload indexed less than this long ago waits for the rest of it before it is indexed again: a
 * workload that changes its list without pause would otherwise keep the gateway's one thread tokenising
 * it (up to 10,000 tools), one change after another. A workload that joins is indexed at once.
 */
export const REINDEX_SPACING_MS = 1_000;

export class GatewaySearch {
  readonly #options: GatewaySearchOptions;
  /** Per workload, what was indexed last: a workload whose list and names did not change is not re-indexed. */
  readonly #indexed = new Map<string, Indexed>();
  /** Name clients see → the gateway name the policies and the router know (differs for renamed tools). */
  #realNames = new Map<string, string>();
  /** Gateway name → the tool as its workload lists it (its real inputSchema). */
  #tools = new Map<string, Item>();
  #reportedShadowed = new Set<string>();
  #preparing: ReturnType<typeof setTimeout> | undefined;
  /** A later update for workloads changed again too soon (REINDEX_SPACING_MS), with the latest view. */
  #deferred: { timer: ReturnType<typeof setTimeout>; view: MergedView } | undefined;
  #instructions: string | undefined;
  readonly calls: CallToolCalls = requestState<ReadonlyMap<JsonRpcId, string>>();

  constructor(options: GatewaySearchOptions) {
    this.#options = options;
  }

  /**
   * Search mode for a gateway's options: the index (with the embeddings endpoint when given; `apiKey`
   * resolved by the caller from its secret) and Cedar's per-caller decision, each loaded only when used.
   */
  static async create(
    spec: ToolSearchSpec,
    policies: {
      readonly tools?: ToolsPolicy | undefined;
      readonly authz?: AuthzConfig | undefined;
      readonly apiKey?: string | undefined;
      /** Other names of a tool Cedar decides on as well (`--name-prefix when-needed`). */
      readonly aliases?: AliasesOf | undefined;
      readonly log: (level: "info" | "warn", text: string) => void;
    },
  ): Promise<GatewaySearch> {
    const [embeddings, authz] = await Promise.all([
      spec.embeddings ? import("./tool-search/embeddings.ts") : undefined,
      policies.authz ? import("../middleware/cedar-decider.ts") : undefined,
    ]);
    // One warning per minute at most while the endpoint fails, not one per find_tool.
    let failing = false;
    const warn = (err: Error) => {
      if (failing) return;
      failing = true;
      policies.log("warn", `tool search: ${err.message}; find_tool answers from keywords alone`);
      setTimeout(() => {
        failing = false;
      }, 60_000).unref();
    };
    const mode = new SearchMode(
      embeddings && spec.embeddings
        ? {
            embeddings: {
              client: new embeddings.EmbeddingsClient({
                url: spec.embeddings.url,
                model: spec.embeddings.model,
                ...(policies.apiKey !== undefined ? { apiKey: policies.apiKey } : {}),
              }),
              onError: warn,
            },
          }
        : {},
    );
    return new GatewaySearch({
      mode,
      tools: policies.tools,
      mayCall:
        authz && policies.authz
          ? await authz.toolVisibility(policies.authz, policies.aliases, (text) => policies.log("warn", text))
          : undefined,
      log: policies.log,
      onPrepareError: (err) => warn(err instanceof Error ? err : new Error(String(err))),
    });
  }

  /** The catalog's view changed: re-index the workloads whose tools (or their names) changed. */
  update(view: MergedView): void {
    const { mode, tools: policy } = this.#options;
    if (this.#deferred !== undefined) this.#deferred.view = view;
    this.#tools = new Map(view.tools.map((tool) => [tool.name as string, tool]));
    const shown = policy ? filterList(policy, view.tools as readonly { name: string }[]) : view.tools;
    const realNames = new Map<string, string>();
    const byWorkload = new Map<string, { names: string[]; tools: SearchableTool[] }>();
    for (const tool of shown) {
      const name = tool.name as string;
      const real = policy ? (realNameOf(policy, name) ?? name) : name;
      const owned = view.toolNames.byGatewayName.get(real);
      if (owned === undefined) continue;
      if (SEARCH_TOOLS.has(name)) {
        // A group tool called find_tool (workload "find", tool "tool") would be shadowed by the search tool.
        if (!this.#reportedShadowed.has(name))
          this.#options.log(
            "warn",
            `tool ${name} of workload '${owned.workload}' is hidden by search mode's own ${name}`,
          );
        this.#reportedShadowed.add(name);
        continue;
      }
      realNames.set(name, real);
      let entry = byWorkload.get(owned.workload);
      if (!entry) byWorkload.set(owned.workload, (entry = { names: [], tools: [] }));
      entry.names.push(name);
      entry.tools.push({
        ...(tool as SearchableTool),
        // The tool's own name is what the name field indexes; a renamed tool is known by its new name.
        name: name === real ? owned.name : name,
      });
    }
    this.#realNames = realNames;
    const live = new Set<string>();
    for (const workload of view.workloads) {
      const entry = byWorkload.get(workload.name);
      if (!entry || entry.tools.length === 0) continue;
      live.add(workload.name);
      const key = `${workload.summary}\u0000${entry.names.join("\u0000")}`;
      const before = this.#indexed.get(workload.name);
      if (before && before.tools === workload.tools && before.key === key) continue;
      const now = Date.now();
      if (before && now - before.at < REINDEX_SPACING_MS) {
        this.#deferUntil(before.at + REINDEX_SPACING_MS, view);
        continue;
      }
      mode.upsertWorkload(workload.name, workload.summary, entry.tools, entry.names);
      this.#instructions = undefined;
      this.#indexed.set(workload.name, { tools: workload.tools, key, at: now });
    }
    for (const name of [...this.#indexed.keys()]) {
      if (live.has(name)) continue;
      mode.removeWorkload(name);
      this.#instructions = undefined;
      this.#indexed.delete(name);
    }
    // Rebuilt (and new tools embedded) off this call, so the next find_tool does not wait for it.
    clearTimeout(this.#preparing);
    this.#preparing = setTimeout(() => void mode.prepare().catch((err) => this.#options.onPrepareError?.(err)), 0);
    this.#preparing.unref?.();
  }

  /** One update at `at` (or earlier, when one is already due), with the view current then. */
  #deferUntil(at: number, view: MergedView): void {
    if (this.#deferred !== undefined) return;
    const timer = setTimeout(
      () => {
        const latest = this.#deferred?.view ?? view;
        this.#deferred = undefined;
        // Off the catalog's callback, nothing would catch a throw but the process: one workload's list
        // that the index cannot take must not end the gateway for every caller.
        try {
          this.update(latest);
        } catch (err) {
          this.#options.log("warn", `tool search: the index was not brought up to date: ${excerpt(errorMessage(err))}`);
        }
      },
      Math.max(0, at - Date.now()),
    );
    timer.unref?.();
    this.#deferred = { timer, view };
  }

  /** Tools indexed, for the log. */
  get toolCount(): number {
    return this.#options.mode.index.toolCount;
  }

  /** Whether find_tool can return this name: the rewrite turns a call_tool of it into its direct call. */
  isTool(name: string): boolean {
    return this.#realNames.has(name);
  }

  /**
   * What the caller of `req` may call, by the names clients see. A decision Cedar's evaluator is still
   * being asked for counts as "no" (fail closed): `readyFor` first asks for all of them.
   */
  allowFor(req: Request | undefined): (name: string) => boolean {
    const mayCall = this.#options.mayCall;
    if (!mayCall) return () => true;
    // Without the request there is no caller to decide for: nothing is shown.
    if (req === undefined) return () => false;
    return (name) => mayCall(req, this.#realNames.get(name) ?? name) === true;
  }

  /**
   * Cedar's decisions for the caller of `req` on every tool indexed, asked of the evaluator together
   * when some are not remembered (then a promise), so that `allowFor` answers from memory after it.
   */
  readyFor(req: Request | undefined): Promise<void> | undefined {
    const mayCall = this.#options.mayCall;
    if (!mayCall || req === undefined) return undefined;
    const asked = [...this.#realNames.values()].map((name) => mayCall(req, name)).filter((d) => d instanceof Promise);
    return asked.length === 0 ? undefined : Promise.all(asked).then(() => undefined);
  }

  /** What tools/list answers in search mode. */
  tools(): readonly Item[] {
    return this.#options.mode.tools() as readonly Item[];
  }

  /**
   * The instructions for the caller of `req` (the request that opens a session, or every stateless
   * 2026-07-28 request): the same for every caller without Cedar, so kept until the index changes.
   */
  instructions(req: Request | undefined): string {
    if (this.#options.mayCall) return this.#options.mode.instructions(this.allowFor(req));
    this.#instructions ??= this.#options.mode.instructions();
    return this.#instructions;
  }

  /**
   * Whether a tools/call of `name` goes straight to its workload, nothing for search mode to answer or
   * check first: not find_tool or call_tool, and not a call the rewrite made of a call_tool (pass-through.ts).
   */
  routesDirectly(name: string, req: Request, id: JsonRpcId): boolean {
    return !SEARCH_TOOLS.has(name) && this.calls.get(req)?.get(id) === undefined;
  }

  /**
   * A tools/call the gateway answers itself in search mode (find_tool; a call_tool the rewrite left;
   * a rewritten call whose arguments do not match), or undefined: route it as a direct call.
   */
  async answer(params: Params, req: Request | undefined, id: JsonRpcId): Promise<Result | undefined> {
    const written = req ? this.calls.get(req)?.get(id) : undefined;
    // A rewritten call that Cedar turned back into its call_tool (a tool this caller may not see) is a call_tool.
    if (written !== undefined && params.name !== CALL_TOOL) {
      // Rewritten from call_tool and let through by the policies: by now `name` is the gateway name.
      const tool = this.#tools.get(params.name as string);
      if (tool === undefined) return undefined; // gone meanwhile: the router says so
      return argumentsProblem(written, tool.inputSchema, params.arguments ?? {}) as Result | undefined;
    }
    if (params.name === FIND_TOOL || params.name === CALL_TOOL) await this.readyFor(req);
    if (params.name === FIND_TOOL)
      return (await this.#options.mode.find(params.arguments, this.allowFor(req))) as Result;
    if (params.name === CALL_TOOL) {
      const prepared = this.#options.mode.prepareCall(params.arguments, this.allowFor(req));
      if (!prepared.ok) return prepared.result as Result;
      // The tool appeared between the rewrite and here: never run it from here, past the policies.
      return toolError(`${prepared.target.gatewayName} has just become available: call it again.`) as Result;
    }
    return undefined;
  }
}
