/**
 * Optional semantic search (`--tool-search-embeddings URL`): an OpenAI-compatible `/v1/embeddings`
 * endpoint (OpenAI, Ollama, llama.cpp, vLLM, …) embeds each tool once and each query, and the cosine
 * similarity is blended with the keyword score. Nothing is downloaded: the model runs wherever the user
 * points. Off by default; when the endpoint fails, find_tool answers from the keyword index alone.
 *
 * The blend, per tool among the candidates (the keyword top CANDIDATES and the embedding top CANDIDATES):
 *   score = (1 − w) · keyword / best keyword score of this query + w · max(0, cosine)
 * Both halves are in 0..1, so w (default 0.5) says how much each side counts whatever the query's length;
 * a tool only one side finds still gets its half.
 *
 * Tool vectors are cached by the exact text embedded, so a list_changed that leaves a tool unchanged
 * costs no request; query vectors are cached for the last few queries.
 */
import { errorMessage } from "../../errors.ts";
import { AnswerTooLarge, readBoundedText } from "../../proxy/answer-limit.ts";
import { MAX_QUERY_CHARS } from "./query.ts";
import type { SearchOptions, ToolSearchHit, ToolSearchIndex } from "./tool-index.ts";

export type Fetch = (input: string | URL, init?: RequestInit) => Promise<Response>;

export interface EmbeddingsEndpoint {
  /** The full endpoint URL, e.g. https://api.openai.com/v1/embeddings or http://127.0.0.1:11434/v1/embeddings. */
  readonly url: string;
  readonly model: string;
  /** Sent as `Authorization: Bearer …`; never logged. */
  readonly apiKey?: string;
  readonly fetch?: Fetch;
  readonly timeoutMs?: number;
}

export class EmbeddingsError extends Error {
  override readonly name = "EmbeddingsError";
}

const BATCH_SIZE = 64;
/**
 * The largest answer read for a batch: per text, room for a vector of 8,192 numbers printed at full
 * precision (~25 bytes each; the largest common models have 3,072 or 4,096), plus the envelope. An
 * endpoint's answer is held whole to parse, so without a bound one answer could take the gateway's memory.
 */
export function embeddingsAnswerLimit(texts: number): number {
  return 64 * 1024 + texts * 256 * 1024;
}

/** Calls the endpoint: texts in, one vector per text, in order. */
export class EmbeddingsClient {
  readonly #endpoint: EmbeddingsEndpoint;
  /** The length of the first vector the endpoint answered; every later one must match it. */
  #dimensions: number | undefined;

  constructor(endpoint: EmbeddingsEndpoint) {
    this.#endpoint = endpoint;
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let start = 0; start < texts.length; start += BATCH_SIZE) {
      out.push(...(await this.#embedBatch(texts.slice(start, start + BATCH_SIZE))));
    }
    return out;
  }

  async #embedBatch(texts: readonly string[]): Promise<Float32Array[]> {
    const { url, model, apiKey, timeoutMs = 15_000 } = this.#endpoint;
    const doFetch = this.#endpoint.fetch ?? fetch;
    const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
    if (apiKey) headers.authorization = `Bearer ${apiKey}`;
    let response: Response;
    try {
      response = await doFetch(url, {
        method: "POST",
        headers,
        body: JSON.stringify({ model, input: texts }),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      const why = err instanceof Error && err.name === "TimeoutError" ? `no answer in ${timeoutMs} ms` : String(err);
      throw new EmbeddingsError(`embeddings endpoint ${url}: ${why}`);
    }
    if (!response.ok) {
      await response.body?.cancel().catch(() => {});
      throw new EmbeddingsError(`embeddings endpoint ${url} answered HTTP ${response.status}`);
    }
    const maxBytes = embeddingsAnswerLimit(texts.length);
    let body: { data?: unknown } | undefined;
    try {
      body = JSON.parse(await readBoundedText(response, maxBytes)) as { data?: unknown } | undefined;
    } catch (err) {
      if (err instanceof AnswerTooLarge)
        throw new EmbeddingsError(
          `embeddings endpoint ${url}: its answer for ${texts.length} texts is larger than ${maxBytes} bytes`,
        );
      body = undefined; // not JSON: #vectorsOf words it
    }
    return this.#vectorsOf(body?.data, texts.length);
  }

  /**
   * The answer's vectors in input order, checked before anything is used: an endpoint's bug (1-based
   * indices, an index of 10⁹, vectors of other lengths, NaN) must become an EmbeddingsError, which falls
   * back to keywords, never a hole that breaks every find_tool or a huge array that stalls the gateway.
   */
  #vectorsOf(data: unknown, count: number): Float32Array[] {
    const { url } = this.#endpoint;
    const wrong = (why: string) => new EmbeddingsError(`embeddings endpoint ${url}: ${why}`);
    if (!Array.isArray(data) || data.length !== count) {
      throw wrong(`expected {"data": [{"embedding": [...]}, …]} for each input`);
    }
    const items = data as ({ embedding?: unknown; index?: unknown } | null)[];
    // Every vector as long as those the endpoint answered before (else as the first of this answer):
    // the cosine of vectors of different lengths means nothing.
    const first = items[0]?.embedding;
    const dimensions = this.#dimensions ?? (Array.isArray(first) ? first.length : 0);
    const vectors = new Array<Float32Array | undefined>(count).fill(undefined);
    items.forEach((item, position) => {
      const index = item?.index ?? position;
      if (typeof index !== "number" || !Number.isInteger(index) || index < 0 || index >= count) {
        throw wrong(`item ${position} has "index" ${JSON.stringify(index)}, not one of 0..${count - 1}`);
      }
      if (vectors[index] !== undefined) throw wrong(`"index" ${index} is given twice`);
      vectors[index] = vectorOf(item?.embedding, dimensions, (why) => wrong(`item ${position} ${why}`));
    });
    this.#dimensions = dimensions;
    return vectors as Float32Array[];
  }
}

/** One answered vector as float32, checked: `dimensions` numbers, each finite once stored. */
function vectorOf(embedding: unknown, dimensions: number, wrong: (why: string) => EmbeddingsError): Float32Array {
  if (!Array.isArray(embedding) || embedding.length === 0) throw wrong(`has no numeric "embedding"`);
  if (embedding.length !== dimensions) throw wrong(`has ${embedding.length} numbers, other vectors ${dimensions}`);
  const vector = new Float32Array(dimensions);
  for (let i = 0; i < dimensions; i++) {
    const x: unknown = embedding[i];
    if (typeof x !== "number") throw wrong(`has no numeric "embedding"`);
    vector[i] = x;
    // NaN, an infinity, or a number past float32's range would make every similarity NaN.
    if (!Number.isFinite(vector[i])) throw wrong(`holds ${x}, not a finite number`);
  }
  return vector;
}

export function cosine(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return 0;
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    dot += x * y;
    normA += x * x;
    normB += y * y;
  }
  return normA === 0 || normB === 0 ? 0 : dot / Math.sqrt(normA * normB);
}

/** What is embedded for a tool: its gateway name, description and parameter names. */
export function embeddingText(hit: Pick<ToolSearchHit, "gatewayName" | "tool">): string {
  const schema = hit.tool.inputSchema as { properties?: Record<string, unknown> } | undefined;
  const parameters = Object.keys(schema?.properties ?? {});
  const lines = [hit.gatewayName, hit.tool.description ?? ""];
  if (parameters.length > 0) lines.push(`Parameters: ${parameters.join(", ")}`);
  return lines.join("\n").trim();
}

export interface HybridOptions {
  /** w in the blend above, 0..1 (default 0.5). */
  readonly weight?: number;
  /** Candidates taken from each side (default 50). */
  readonly candidates?: number;
  /** Told when the endpoint fails (the search then answers from keywords alone). */
  readonly onError?: (error: EmbeddingsError) => void;
}

const QUERY_CACHE_SIZE = 64;

export class HybridToolSearch {
  readonly #index: ToolSearchIndex;
  readonly #client: EmbeddingsClient;
  readonly #weight: number;
  readonly #candidates: number;
  readonly #onError: ((error: EmbeddingsError) => void) | undefined;
  readonly #toolVectors = new Map<string, Float32Array>();
  readonly #queryVectors = new Map<string, Float32Array>();
  #preparing: Promise<void> | undefined;

  constructor(index: ToolSearchIndex, client: EmbeddingsClient, options: HybridOptions = {}) {
    this.#index = index;
    this.#client = client;
    this.#weight = Math.min(1, Math.max(0, options.weight ?? 0.5));
    this.#candidates = options.candidates ?? 50;
    this.#onError = options.onError;
  }

  /** Embeds every tool not embedded yet (call after upserts to keep the first search fast). */
  async prepare(): Promise<void> {
    // Concurrent searches share one embedding request for the same missing tools.
    while (this.#preparing) await this.#preparing.catch(() => undefined);
    const current = new Set(this.#index.tools().map(embeddingText));
    for (const text of this.#toolVectors.keys()) if (!current.has(text)) this.#toolVectors.delete(text);
    const missing = [...current].filter((text) => !this.#toolVectors.has(text));
    if (missing.length === 0) return;
    this.#preparing = this.#client.embed(missing).then((vectors) => {
      missing.forEach((text, i) => {
        this.#toolVectors.set(text, vectors[i] as Float32Array);
      });
    });
    try {
      await this.#preparing;
    } finally {
      this.#preparing = undefined;
    }
  }

  async #queryVector(fullQuery: string): Promise<Float32Array> {
    const query = fullQuery.slice(0, MAX_QUERY_CHARS);
    let vector = this.#queryVectors.get(query);
    if (!vector) {
      [vector] = (await this.#client.embed([query])) as [Float32Array];
      if (this.#queryVectors.size >= QUERY_CACHE_SIZE) {
        this.#queryVectors.delete(this.#queryVectors.keys().next().value as string);
      }
      this.#queryVectors.set(query, vector);
    }
    return vector;
  }

  async search(query: string, options: SearchOptions = {}): Promise<ToolSearchHit[]> {
    const limit = options.limit ?? 5;
    const keywordHits = this.#index.search(query, { limit: Math.max(limit, this.#candidates), allow: options.allow });
    let queryVector: Float32Array;
    try {
      await this.prepare();
      queryVector = await this.#queryVector(query);
    } catch (err) {
      // Whatever went wrong on the embeddings side, find_tool still answers (docs/tool-search.md).
      this.#onError?.(err instanceof EmbeddingsError ? err : new EmbeddingsError(`embeddings: ${errorMessage(err)}`));
      return keywordHits.slice(0, limit);
    }

    const best = keywordHits[0]?.score ?? 0;
    const blended = new Map<string, { hit: ToolSearchHit; keyword: number; semantic: number }>();
    for (const hit of keywordHits)
      blended.set(hit.gatewayName, { hit, keyword: best > 0 ? hit.score / best : 0, semantic: 0 });
    const semantic = this.#index
      .tools()
      .filter((tool) => !options.allow || options.allow(tool.gatewayName))
      .map((tool) => {
        const vector = this.#toolVectors.get(embeddingText(tool));
        return { tool, similarity: vector ? Math.max(0, cosine(queryVector, vector)) : 0 };
      })
      .sort((a, b) => b.similarity - a.similarity)
      .slice(0, this.#candidates);
    for (const { tool, similarity } of semantic) {
      const entry = blended.get(tool.gatewayName);
      if (entry) entry.semantic = similarity;
      else blended.set(tool.gatewayName, { hit: { ...tool, score: 0 }, keyword: 0, semantic: similarity });
    }
    // Keyword hits outside the embedding top still get their similarity.
    for (const entry of blended.values()) {
      if (entry.semantic > 0) continue;
      const vector = this.#toolVectors.get(embeddingText(entry.hit));
      if (vector) entry.semantic = Math.max(0, cosine(queryVector, vector));
    }
    const w = this.#weight;
    return [...blended.values()]
      .map(({ hit, keyword, semantic: similarity }) => ({ ...hit, score: (1 - w) * keyword + w * similarity }))
      .filter((hit) => hit.score > 0)
      .sort((a, b) => b.score - a.score || a.gatewayName.localeCompare(b.gatewayName))
      .slice(0, limit);
  }
}
