/**
 * The knobs of the ranking, in one place so the bench can switch each ingredient off and report what
 * it adds. The defaults are what the bench measured best on LiveMCPBench (bench/RESULTS.md); every one
 * is a general weight, none names a tool.
 */
export interface FieldWeights {
  /** Tool name and title, split into words. */
  readonly name: number;
  /** The workload's name (same for all its tools). */
  readonly workload: number;
  /** The workload's one-line summary (same for all its tools). */
  readonly summary: number;
  readonly description: number;
  /** Parameter names. */
  readonly params: number;
  /** Parameter descriptions, titles and enum values. */
  readonly paramText: number;
}

export interface ToolSearchTuning {
  /** Porter2 stems for English words (false: exact words). */
  readonly stemming: boolean;
  /** BM25 term-frequency saturation. */
  readonly k1: number;
  /** BM25F weight of a term occurrence in each field. */
  readonly weights: FieldWeights;
  /** BM25F length normalisation per field (0: none, 1: full). */
  readonly b: FieldWeights;
  /** Weight of a thesaurus expansion relative to the user's own word (0: off). */
  readonly synonymWeight: number;
  /** Weight of the words a literal implies: "file" for a path, "url" for a web address (0: off). */
  readonly literalWeight: number;
  /** Weight of an index word that a query word abbreviates or misspells, times how close it is (0: off). */
  readonly expansionWeight: number;
  /** How much a workload's own match (its name, summary and all its tools' text) adds to each of its tools. */
  readonly workloadWeight: number;
  /**
   * Scale a tool up when some of its fields are in a script the query is not (a tool described in Chinese,
   * an English query): by all field weight / the weight of the fields the query can match, at most 2.
   */
  readonly scriptCompensation: boolean;
  /** Bonus for a tool whose name words are all in the query. */
  readonly nameCoverageWeight: number;
}

export const defaultTuning: ToolSearchTuning = {
  stemming: true,
  k1: 1.2,
  weights: { name: 4, workload: 1, summary: 0.5, description: 1, params: 0.5, paramText: 0.3 },
  b: { name: 0.5, workload: 0.3, summary: 0.75, description: 0.75, params: 0.5, paramText: 0.75 },
  synonymWeight: 0.5,
  literalWeight: 0.5,
  expansionWeight: 0.5,
  workloadWeight: 0.25,
  nameCoverageWeight: 2,
  scriptCompensation: true,
};

export function withTuning(overrides: Partial<ToolSearchTuning> = {}): ToolSearchTuning {
  return {
    ...defaultTuning,
    ...overrides,
    weights: { ...defaultTuning.weights, ...overrides.weights },
    b: { ...defaultTuning.b, ...overrides.b },
  };
}
