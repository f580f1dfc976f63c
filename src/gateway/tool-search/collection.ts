/**
 * The collection behind the tool index: each workload's tools split into counted fields when the
 * workload is upserted (`workloadEntry`), and the statistics a search needs rebuilt from all workloads
 * at once (`buildCollection`): BM25F postings (a term's weighted, length-normalised frequencies summed
 * over the fields of each tool), one document per workload, the script compensation, the vocabulary.
 */
import { isCjkTerm, tokenize } from "./tokenizer.ts";
import { MAX_WORKLOAD_TEXT_CHARS, type SearchableTool, type ToolFields, toolFields } from "./tool-text.ts";
import type { FieldWeights, ToolSearchTuning } from "./tuning.ts";
import { Vocabulary } from "./vocabulary.ts";

export interface IndexedTool {
  readonly gatewayName: string;
  readonly workload: string;
  readonly tool: SearchableTool;
}

/** The name a tool has at the gateway: `<workload>_<tool>`. */
export function gatewayToolName(workload: string, tool: string): string {
  return `${workload}_${tool}`;
}

export type FieldName = keyof FieldWeights;

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

export interface ToolEntry extends IndexedTool {
  readonly fields: Readonly<Record<ToolFieldName, FieldCounts>>;
  readonly nameTerms: readonly string[];
}

export interface WorkloadEntry {
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

export interface BuiltIndex {
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

/**
 * A workload's entry: every field of every tool tokenised and counted, once per upsert. `gatewayNames`
 * (same order as `tools`): the names the gateway gives them, when not `<workload>_<tool>`.
 */
export function workloadEntry(
  name: string,
  summary: string,
  tools: readonly SearchableTool[],
  stem: boolean,
  gatewayNames?: readonly string[],
): WorkloadEntry {
  const documentTerms: string[] = [];
  let room = MAX_WORKLOAD_TEXT_CHARS;
  const entries = tools.map((tool, i) => {
    const fields: ToolFields & { used: number } = toolFields(tool, stem, room);
    room -= fields.used;
    // One at a time: spread into push's arguments, a description of a million words overflows the stack.
    for (const term of fields.name) documentTerms.push(term);
    for (const term of fields.description) documentTerms.push(term);
    return {
      gatewayName: gatewayNames?.[i] ?? gatewayToolName(name, tool.name),
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
  return {
    name,
    summary,
    nameField: countTerms(nameTerms),
    summaryField: countTerms(summaryTerms),
    document: countTerms([...nameTerms, ...nameTerms, ...summaryTerms, ...documentTerms]),
    tools: entries,
  };
}

export function buildCollection(workloads: readonly WorkloadEntry[], tuning: ToolSearchTuning): BuiltIndex {
  const { weights, b } = tuning;
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

  // BM25F: a term's weighted, length-normalised frequencies summed over fields (saturated at query time),
  // accumulated straight into the postings: a tool's entry is the last one of each list it is in.
  const postings = new Map<string, Postings>();
  const addField = (docIndex: number, field: FieldName, counts: FieldCounts) => {
    const weight = weights[field];
    if (weight === 0 || counts.length === 0) return;
    const norm = 1 - b[field] + (b[field] * counts.length) / average(field);
    for (const [term, count] of counts.counts) {
      let list = postings.get(term);
      if (!list) postings.set(term, (list = { docs: [], weights: [] }));
      const last = list.docs.length - 1;
      if (list.docs[last] === docIndex) list.weights[last] = (list.weights[last] as number) + (weight * count) / norm;
      else {
        list.docs.push(docIndex);
        list.weights.push((weight * count) / norm);
      }
    }
  };
  const compensation: [Float64Array, Float64Array] = [new Float64Array(docs.length), new Float64Array(docs.length)];
  const cap = (ratio: number) => (Number.isFinite(ratio) && ratio > 1 ? Math.min(ratio, 2) : 1);
  let docIndex = 0;
  for (const workload of workloads) {
    for (const tool of workload.tools) {
      addField(docIndex, "workload", workload.nameField);
      addField(docIndex, "summary", workload.summaryField);
      let total = 0;
      let latin = 0;
      let cjk = 0;
      const present: [FieldName, FieldCounts][] = [
        ["workload", workload.nameField],
        ["summary", workload.summaryField],
      ];
      for (const field of TOOL_FIELDS) {
        addField(docIndex, field, tool.fields[field]);
        present.push([field, tool.fields[field]]);
      }
      for (const [field, counts] of present) {
        if (counts.length === 0) continue;
        total += weights[field];
        if (counts.cjk) cjk += weights[field];
        else latin += weights[field];
      }
      compensation[0][docIndex] = tuning.scriptCompensation ? cap(total / latin) : 1;
      compensation[1][docIndex] = tuning.scriptCompensation ? cap(total / cjk) : 1;
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
