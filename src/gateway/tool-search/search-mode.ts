/**
 * Search mode in one object, what `mcpmgr gateway GROUP --tool-search` plugs in: the index (fed from the
 * workloads' tools/list and list_changed), the two tools to list, the `instructions`, and the answers to
 * `find_tool` and `call_tool` for a caller's policy. The gateway keeps the I/O: it forwards a prepared
 * call exactly as a direct call by that gateway name.
 */
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import { type EmbeddingsClient, type EmbeddingsError, HybridToolSearch } from "./embeddings.ts";
import { renderFindAnswer } from "./find-answer.ts";
import { searchModeInstructions } from "./instructions.ts";
import { type PreparedCall, parseFindArguments, prepareToolCall, searchModeTools } from "./search-tools.ts";
import { type SearchableTool, ToolSearchIndex } from "./tool-index.ts";
import type { ToolSearchTuning } from "./tuning.ts";

export interface SearchModeOptions {
  readonly tuning?: Partial<ToolSearchTuning>;
  /** Blend with an embeddings endpoint (`--tool-search-embeddings`); keyword search alone without it. */
  readonly embeddings?: {
    readonly client: EmbeddingsClient;
    readonly weight?: number;
    readonly onError?: (error: EmbeddingsError) => void;
  };
}

type Allow = (gatewayName: string) => boolean;
const allowAll: Allow = () => true;

export class SearchMode {
  readonly index: ToolSearchIndex;
  readonly #hybrid: HybridToolSearch | undefined;

  constructor(options: SearchModeOptions = {}) {
    this.index = new ToolSearchIndex({ tuning: options.tuning });
    this.#hybrid = options.embeddings
      ? new HybridToolSearch(this.index, options.embeddings.client, {
          weight: options.embeddings.weight,
          onError: options.embeddings.onError,
        })
      : undefined;
  }

  /** A workload started or its tools changed (list_changed); `gatewayNames` as in ToolSearchIndex. */
  upsertWorkload(
    name: string,
    summary: string,
    tools: readonly SearchableTool[],
    gatewayNames?: readonly string[],
  ): void {
    this.index.upsertWorkload(name, summary, tools, gatewayNames);
  }

  /**
   * After changes: the statistics rebuilt, and with embeddings the new tools embedded, so the next
   * find_tool does not wait for either. Rejects with the embeddings endpoint's error.
   */
  async prepare(): Promise<void> {
    this.index.prepare();
    await this.#hybrid?.prepare();
  }

  /** A workload stopped or left the group. */
  removeWorkload(name: string): void {
    this.index.removeWorkload(name);
  }

  /** What `tools/list` answers in search mode. */
  tools(): readonly Tool[] {
    return searchModeTools;
  }

  /**
   * The server `instructions` in search mode; with `allow`, the workloads and tool counts that caller
   * may use (a workload none of whose tools it may call is not mentioned).
   */
  instructions(allow?: Allow): string {
    if (!allow) return searchModeInstructions(this.index.workloads());
    const allowed = new Map<string, number>();
    for (const tool of this.index.tools())
      if (allow(tool.gatewayName)) allowed.set(tool.workload, (allowed.get(tool.workload) ?? 0) + 1);
    return searchModeInstructions(
      this.index
        .workloads()
        .filter((workload) => allowed.has(workload.name))
        .map((workload) => ({ ...workload, toolCount: allowed.get(workload.name) ?? 0 })),
    );
  }

  /** The result of a `find_tool` call; `allow` is the caller's policy (applied before the limit). */
  async find(args: unknown, allow: Allow = allowAll): Promise<CallToolResult> {
    const request = parseFindArguments(args);
    if (!request.ok) return request.result;
    const options = { limit: request.limit, allow };
    const hits = this.#hybrid
      ? await this.#hybrid.search(request.query, options)
      : this.index.search(request.query, options);
    return renderFindAnswer(request.query, hits);
  }

  /** A `call_tool` call resolved and its arguments checked, or the error result to answer. */
  prepareCall(args: unknown, allow: Allow = allowAll): PreparedCall {
    return prepareToolCall(this.index, args, allow);
  }
}
