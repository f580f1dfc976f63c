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
 * collection statistics (lengths, document frequencies, postings) are rebuilt once, lazily, on the next
 * search, so a burst of list_changed notifications costs one rebuild.
 */
import { queryTerms } from "./query.ts";
import { isCjkTerm, tokenize } from "./tokenizer.ts";
import { type SearchableTool, type ToolFields, toolFields } from "./tool-text.ts";
import { type FieldWeights, type ToolSearchTuning, withTuning } from "./tuning.ts";
import { Vocabulary } from "./vocabulary.ts";

export type { SearchableTool } from "./tool-text.ts";

/** The name a tool has at the gateway: `<workload>_<tool>`. */
export function gatewayToolName(workload: string, tool: string): string {
  return `${workload}_${tool}`;
}

export interface IndexedTool {
  readonly gatewayName: string;
  readonly workload: string;
  readonly tool: SearchableTool;
}

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

type FieldName = keyof FieldWeights;

/** A field's terms counted once at upsert, so a rebuild walks distinct terms only. */
interface FieldCounts {
  readonly counts: ReadonlyMap<string, number>;
  readonly length: number;
  /** Whether most of its terms are CJK: a query in the other script cannot match this field. */
  readonly cjk: boolean;
}

function countTerms(terms: readonly string[]): FieldCounts {
  const counts = new Map<string, number>();
  let cjkTerms = 0;
  for (const term of terms) {
    counts.set(term, (counts.get(term) ?? 0) + 1);
    if (isCjkTerm(term)) cjkTerms++;
  }
  return { counts, length: terms.length, cjk: cjkTerms * 2 > terms.length };
}

type ToolFieldName = Exclude<FieldName, "workload" | "summary">;
const TOOL_FIELDS: readonly ToolFieldName[] = ["name", "description", "params", "paramText"];

interface ToolEntry extends IndexedTool {
  readonly fields: Readonly<Record<ToolFieldName, FieldCounts>>;
  readonly nameTerms: readonly string[];
}

interface WorkloadEntry {
  readonly name: string;
  readonly summary: string;
  readonly nameField: FieldCounts;
  readonly summaryField: FieldCounts;
  /** The workload as one document: its name twice, summary, and every tool's name and description. */
  readonly document: FieldCounts;
  readonly tools: readonly ToolEntry[];
}

interface Postings {
  readonly docs: number[];
  readonly weights: number[];
}

interface BuiltIndex {
  readonly docs: readonly ToolEntry[];
  /**
   * Per tool, for a query in Latin script [0] or in CJK [1]: all field weight / the weight of its fields
   * in the query's script. A tool described in Chinese can only match an English query by its name and
   * parameters; without this it would always lose to a tool described in English.
   */
  readonly scriptCompensation: readonly [Float64Array, Float64Array];
  readonly docWorkload: Int32Array;
  readonly postings: ReadonlyMap<string, Postings>;
  readonly workloadPostings: ReadonlyMap<string, Postings>;
  readonly workloadCount: number;
  readonly vocabulary: Vocabulary;
}

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

  /** Adds a workload or replaces its tools (after its tools/list changed). */
  upsertWorkload(name: string, summary: string, tools: readonly SearchableTool[]): void {
    this.removeWorkload(name);
    const stem = this.tuning.stemming;
    const documentTerms: string[] = [];
    const entries = tools.map((tool) => {
      const fields: ToolFields = toolFields(tool, stem);
      documentTerms.push(...fields.name, ...fields.description);
      return {
        gatewayName: gatewayToolName(name, tool.name),
        workload: name,
        tool,
        fields: {
          name: countTerms(fields.name),
          description: countTerms(fields.description),
          params: countTerms(fields.params),
          paramText: countTerms(fields.paramText),
        },
        nameTerms: [...new Set(tokenize(tool.name, { stopWords: false, stem }))],
      };
    });
    const nameTerms = tokenize(name, { stopWords: false, stem });
    const summaryTerms = tokenize(summary, { stem });
    this.#workloads.set(name, {
      name,
      summary,
      nameField: countTerms(nameTerms),
      summaryField: countTerms(summaryTerms),
      document: countTerms([...nameTerms, ...nameTerms, ...summaryTerms, ...documentTerms]),
      tools: entries,
    });
    for (const entry of entries) this.#byGatewayName.set(entry.gatewayName, entry);
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
    this.#built = this.#build();
  }

  #build(): BuiltIndex {
    const { weights, b } = this.tuning;
    const workloads = [...this.#workloads.values()];
    const docs: ToolEntry[] = [];
    const docWorkloadList: number[] = [];
    const totalLength: Record<FieldName, number> = {
      name: 0,
      workload: 0,
      summary: 0,
      description: 0,
      params: 0,
      paramText: 0,
    };
    workloads.forEach((workload, index) => {
      for (const tool of workload.tools) {
        docs.push(tool);
        docWorkloadList.push(index);
        for (const field of TOOL_FIELDS) totalLength[field] += tool.fields[field].length;
      }
      totalLength.workload += workload.nameField.length * workload.tools.length;
      totalLength.summary += workload.summaryField.length * workload.tools.length;
    });
    const average = (field: FieldName) => totalLength[field] / Math.max(docs.length, 1) || 1;

    // BM25F: a term's weighted, length-normalised frequencies summed over fields (saturated at query time).
    const addField = (into: Map<string, number>, field: FieldName, counts: FieldCounts) => {
      const weight = weights[field];
      if (weight === 0 || counts.length === 0) return;
      const norm = 1 - b[field] + (b[field] * counts.length) / average(field);
      for (const [term, count] of counts.counts) into.set(term, (into.get(term) ?? 0) + (weight * count) / norm);
    };
    const compensation: [Float64Array, Float64Array] = [new Float64Array(docs.length), new Float64Array(docs.length)];
    const postings = new Map<string, Postings>();
    let docIndex = 0;
    for (const workload of workloads) {
      // The workload name and summary weigh the same in each of its tools: computed once per workload.
      const shared = new Map<string, number>();
      addField(shared, "workload", workload.nameField);
      addField(shared, "summary", workload.summaryField);
      for (const tool of workload.tools) {
        const weighted = new Map(shared);
        for (const field of TOOL_FIELDS) addField(weighted, field, tool.fields[field]);
        let total = 0;
        let latin = 0;
        let cjk = 0;
        const present: [FieldName, FieldCounts][] = [
          ["workload", workload.nameField],
          ["summary", workload.summaryField],
          ...TOOL_FIELDS.map((field): [FieldName, FieldCounts] => [field, tool.fields[field]]),
        ];
        for (const [field, counts] of present) {
          if (counts.length === 0) continue;
          total += weights[field];
          if (counts.cjk) cjk += weights[field];
          else latin += weights[field];
        }
        const cap = (ratio: number) => (Number.isFinite(ratio) && ratio > 1 ? Math.min(ratio, 2) : 1);
        compensation[0][docIndex] = this.tuning.scriptCompensation ? cap(total / latin) : 1;
        compensation[1][docIndex] = this.tuning.scriptCompensation ? cap(total / cjk) : 1;
        for (const [term, weight] of weighted) {
          let list = postings.get(term);
          if (!list) postings.set(term, (list = { docs: [], weights: [] }));
          list.docs.push(docIndex);
          list.weights.push(weight);
        }
        docIndex++;
      }
    }

    // One document per workload, length-normalised like plain BM25 (b = 0.75).
    const averageWorkloadLength =
      workloads.reduce((sum, workload) => sum + workload.document.length, 0) / Math.max(workloads.length, 1) || 1;
    const workloadPostings = new Map<string, Postings>();
    workloads.forEach((workload, index) => {
      const norm = 0.25 + (0.75 * workload.document.length) / averageWorkloadLength;
      for (const [term, count] of workload.document.counts) {
        let list = workloadPostings.get(term);
        if (!list) workloadPostings.set(term, (list = { docs: [], weights: [] }));
        list.docs.push(index);
        list.weights.push(count / norm);
      }
    });

    return {
      docs,
      scriptCompensation: compensation,
      docWorkload: Int32Array.from(docWorkloadList),
      postings,
      workloadPostings,
      workloadCount: workloads.length,
      vocabulary: new Vocabulary(postings.keys()),
    };
  }

  search(query: string, options: SearchOptions = {}): ToolSearchHit[] {
    const limit = Math.max(0, Math.floor(options.limit ?? 5));
    if (limit === 0) return [];
    const built = (this.#built ??= this.#build());
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
      for (const term of new Set(ownTerms)) {
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
