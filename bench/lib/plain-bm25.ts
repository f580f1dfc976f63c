/**
 * The reference baseline of the LiveMCPBench README, computed by the bench itself: plain Okapi BM25
 * (k1 1.2, b 0.75) over tool name (twice) + description + parameter names, lower-cased, split on
 * non-alphanumerics (Unicode letters and digits, so a run of Chinese is one token) and camelCase,
 * idf = ln(1 + (N - n + 0.5) / (n + 0.5)). No stemming, no stop words, no field weights: the floor our
 * tool search is compared with on the same data. Equal scores rank the later tool first; with that,
 * this reproduces the README's figures exactly (69.2% and 34.3%).
 */
import type { DatasetServer } from "../../test/support/livemcpbench.ts";

const K1 = 1.2;
const B = 0.75;

export function plainTokens(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((token) => token.length > 0);
}

interface PlainDoc {
  readonly name: string;
  readonly tf: Map<string, number>;
  readonly length: number;
}

export class PlainBm25 {
  private readonly docs: PlainDoc[] = [];
  private readonly df = new Map<string, number>();
  private readonly avgLength: number;

  constructor(servers: readonly DatasetServer[]) {
    for (const server of servers) {
      for (const tool of server.tools) {
        const properties = (tool.inputSchema.properties ?? {}) as Record<string, unknown>;
        const text = [tool.name, tool.name, tool.description, ...Object.keys(properties)].join(" ");
        const tokens = plainTokens(text);
        const tf = new Map<string, number>();
        for (const token of tokens) tf.set(token, (tf.get(token) ?? 0) + 1);
        for (const token of tf.keys()) this.df.set(token, (this.df.get(token) ?? 0) + 1);
        this.docs.push({ name: tool.name, tf, length: tokens.length });
      }
    }
    this.avgLength = this.docs.reduce((sum, doc) => sum + doc.length, 0) / this.docs.length;
  }

  search(query: string, limit: number): string[] {
    const terms = plainTokens(query);
    const n = this.docs.length;
    const scored: { name: string; score: number; order: number }[] = [];
    this.docs.forEach((doc, order) => {
      let score = 0;
      for (const term of terms) {
        const tf = doc.tf.get(term);
        if (!tf) continue;
        const df = this.df.get(term) ?? 0;
        const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
        score += (idf * tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * doc.length) / this.avgLength));
      }
      if (score > 0) scored.push({ name: doc.name, score, order });
    });
    scored.sort((a, b) => b.score - a.score || b.order - a.order);
    return scored.slice(0, limit).map((entry) => entry.name);
  }
}
