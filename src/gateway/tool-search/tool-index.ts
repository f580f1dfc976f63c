/**
 * The keyword index behind `find_tool`: every tool of every workload, ranked for a free-text query.
 *
 * Ranking (each part is a knob in tuning.ts, measured by bench/tool-search.ts):
 * - BM25F over the tool's fields (name, workload name, workload summary, description, parameter names,
 *   parameter descriptions): each field has its own weight and length normalisation, the weighted
 *   frequencies are summed before BM25's saturation, so a word in the name counts more than the same
 *   word deep in a long description, without one field's length punishing another's.
 * - Query words are stemmed like the text and widened with a small general thesaurus (synonyms.ts) at a
 *   lower weight.
 * - A workload's own match (BM25 over its name, summary and all its tools' words, one document per
 *   workload) is passed down to its matching tools: "the weather server's forecast tool" outranks a
 *   forecast tool elsewhere when the query is about weather.
 * - A bonus for a tool whose name words are in the query ("create a word document" → create_document).
 * - A tool whose description is in another script than the query (Chinese text, English query) can only
 *   match by its name and parameters: its score is scaled up by the share of field weight it could not use.
 *
 * Updates are per workload (`upsertWorkload`, `removeWorkload`): its tools are tokenised then; the
 * collection statistics (collection.ts: lengths, document frequencies, postings) are rebuilt once, lazily, on the next
 * search, so a burst of list_changed notifications costs one rebuild.
 */
import {
  type BuiltIndex,
  buildCollection,
  type IndexedTool,
  type ToolEntry,
  type WorkloadEntry,
  workloadEntry,
} from "./collection.ts";
import { queryTerms } from "./query.ts";
import { isCjkTerm } from "./tokenizer.ts";
import type { SearchableTool } from "./tool-text.ts";
import { type ToolSearchTuning, withTuning } from "./tuning.ts";

export { gatewayToolName, type IndexedTool } from "./collection.ts";
export type { SearchableTool } from "./tool-text.ts";

export interface ToolSearchHit extends IndexedTool {
  readonly score: number;
}

export interface WorkloadSummary {
  readonly name: string;
  readonly summary: string;
  readonly toolCount: number;
}

export interface SearchOptions {
  /** Most results to return (default 5). */
  readonly limit?: number;
  /** Per-caller policy: tools it may not see are dropped before the top `limit` are taken. */
  readonly allow?: (gatewayName: string) => boolean;
}

const MAX_EXPANDED_TERMS = 32;

function isCjkQuery(terms: readonly string[]): boolean {
  let cjk = 0;
  for (const term of terms) if (isCjkTerm(term)) cjk++;
  return cjk * 2 > terms.length;
}

function idf(total: number, containing: number): number {
  return Math.log(1 + (total - containing + 0.5) / (containing + 0.5));
}

export class ToolSearchIndex {
  readonly tuning: ToolSearchTuning;
  readonly #workloads = new Map<string, WorkloadEntry>();
  readonly #byGatewayName = new Map<string, ToolEntry>();
  #built: BuiltIndex | undefined;

  constructor(options: { tuning?: Partial<ToolSearchTuning> } = {}) {
    this.tuning = withTuning(options.tuning);
  }

  /**
   * Adds a workload or replaces its tools (after its tools/list changed). `gatewayNames`, in the order of
   * `tools`: the names the gateway shows them under, when not `<workload>_<tool>` (`--name-prefix
   * when-needed`, `--tools-override`).
   */
  upsertWorkload(
    name: string,
    summary: string,
    tools: readonly SearchableTool[],
    gatewayNames?: readonly string[],
  ): void {
    this.removeWorkload(name);
    const entry = workloadEntry(name, summary, tools, this.tuning.stemming, gatewayNames);
    this.#workloads.set(name, entry);
    for (const tool of entry.tools) this.#byGatewayName.set(tool.gatewayName, tool);
    this.#built = undefined;
  }

  /** Forgets a workload (stopped, removed): its tools leave the next search. */
  removeWorkload(name: string): void {
    const existing = this.#workloads.get(name);
    if (!existing) return;
    for (const entry of existing.tools) this.#byGatewayName.delete(entry.gatewayName);
    this.#workloads.delete(name);
    this.#built = undefined;
  }

  /** The tool behind a gateway name, or undefined. */
  lookup(gatewayName: string): IndexedTool | undefined {
    const entry = this.#byGatewayName.get(gatewayName);
    return entry ? { gatewayName: entry.gatewayName, workload: entry.workload, tool: entry.tool } : undefined;
  }

  /** Every indexed tool, workload by workload. */
  tools(): IndexedTool[] {
    return [...this.#byGatewayName.values()].map(({ gatewayName, workload, tool }) => ({
      gatewayName,
      workload,
      tool,
    }));
  }

  gatewayNames(): string[] {
    return [...this.#byGatewayName.keys()];
  }

  workloads(): WorkloadSummary[] {
    return [...this.#workloads.values()].map((w) => ({ name: w.name, summary: w.summary, toolCount: w.tools.length }));
  }

  get toolCount(): number {
    return this.#byGatewayName.size;
  }

  /** Rebuilds the collection statistics now (otherwise done by the first search after a change). */
  rebuild(): void {
    this.#built = buildCollection([...this.#workloads.values()], this.tuning);
  }

  /** Builds the statistics if a change left them stale, so the next search does not pay for it. */
  prepare(): void {
    this.#built ??= buildCollection([...this.#workloads.values()], this.tuning);
  }

  search(query: string, options: SearchOptions = {}): ToolSearchHit[] {
    const limit = Math.max(0, Math.floor(options.limit ?? 5));
    if (limit === 0) return [];
    const built = (this.#built ??= buildCollection([...this.#workloads.values()], this.tuning));
    const { docs } = built;
    if (docs.length === 0) return [];
    const { k1, workloadWeight, nameCoverageWeight, synonymWeight, literalWeight, expansionWeight } = this.tuning;
    const { own: ownTerms, weights } = queryTerms(query, {
      synonymWeight,
      literalWeight,
      stemming: this.tuning.stemming,
    });
    if (weights.size === 0) return [];
    const terms = new Map(weights);
    if (expansionWeight > 0) {
      // Expansions scan the vocabulary: bounded to the first distinct words, which is all a real query has.
      for (const term of [...new Set(ownTerms)].slice(0, MAX_EXPANDED_TERMS)) {
        for (const { term: expanded, closeness } of built.vocabulary.expansions(term)) {
          const weight = expansionWeight * closeness;
          if ((terms.get(expanded) ?? 0) < weight) terms.set(expanded, weight);
        }
      }
    }

    const scores = new Float64Array(docs.length);
    const idfs = new Map<string, number>();
    for (const [term, queryWeight] of terms) {
      const list = built.postings.get(term);
      if (!list) continue;
      const termIdf = idf(docs.length, list.docs.length);
      idfs.set(term, termIdf);
      for (let i = 0; i < list.docs.length; i++) {
        const weight = list.weights[i] as number;
        scores[list.docs[i] as number]! += (queryWeight * termIdf * weight * (k1 + 1)) / (weight + k1);
      }
    }

    let workloadScores: Float64Array | undefined;
    if (workloadWeight > 0) {
      workloadScores = new Float64Array(built.workloadCount);
      for (const [term, queryWeight] of terms) {
        const list = built.workloadPostings.get(term);
        if (!list) continue;
        const termIdf = idf(built.workloadCount, list.docs.length);
        for (let i = 0; i < list.docs.length; i++) {
          const weight = list.weights[i] as number;
          workloadScores[list.docs[i] as number]! += (queryWeight * termIdf * weight * (k1 + 1)) / (weight + k1);
        }
      }
    }

    const compensation = built.scriptCompensation[isCjkQuery(ownTerms) ? 1 : 0];
    const candidates: number[] = [];
    for (let doc = 0; doc < docs.length; doc++) {
      if (scores[doc] === 0) continue;
      if (nameCoverageWeight > 0) {
        // Favour tools whose name the query spells out: (share of name words covered)² × their mean idf.
        const nameTerms = (docs[doc] as ToolEntry).nameTerms;
        let covered = 0;
        let coveredIdf = 0;
        for (const term of nameTerms) {
          if (!terms.has(term)) continue;
          covered++;
          coveredIdf += idfs.get(term) ?? 0;
        }
        if (covered > 0) {
          const coverage = covered / nameTerms.length;
          scores[doc]! += (nameCoverageWeight * coverage * coverage * coveredIdf) / covered;
        }
      }
      if (workloadScores) scores[doc]! += workloadWeight * (workloadScores[built.docWorkload[doc] as number] ?? 0);
      scores[doc]! *= compensation[doc] as number;
      candidates.push(doc);
    }
    candidates.sort(
      (a, b) =>
        (scores[b] as number) - (scores[a] as number) ||
        (docs[a] as ToolEntry).gatewayName.localeCompare((docs[b] as ToolEntry).gatewayName),
    );

    const hits: ToolSearchHit[] = [];
    for (const doc of candidates) {
      const entry = docs[doc] as ToolEntry;
      if (options.allow && !options.allow(entry.gatewayName)) continue;
      hits.push({ gatewayName: entry.gatewayName, workload: entry.workload, tool: entry.tool, score: scores[doc]! });
      if (hits.length >= limit) break;
    }
    return hits;
  }
}
