/**
 * Tool search with embeddings, against our deterministic embedding server fixture over real HTTP
 * (test/fixtures/embedding-server.ts): the request shape, the blend with the keyword score, the cache,
 * the policy filter, and the keyword-only fallback when the endpoint fails.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  cosine,
  EmbeddingsClient,
  EmbeddingsError,
  embeddingsAnswerLimit,
  embeddingText,
  HybridToolSearch,
} from "../../src/gateway/tool-search/embeddings.ts";
import { ToolSearchIndex } from "../../src/gateway/tool-search/tool-index.ts";
import { type EmbeddingServer, fixtureVector, startEmbeddingServer } from "../fixtures/embedding-server.ts";

const API_KEY = "test-embeddings-key";
let server: EmbeddingServer;

beforeAll(() => {
  server = startEmbeddingServer({ apiKey: API_KEY });
});
afterAll(async () => {
  await server.stop();
});

function index(): ToolSearchIndex {
  const built = new ToolSearchIndex();
  built.upsertWorkload("garage", "Vehicle services.", [
    { name: "rent_car", description: "Rent a car for some days.", inputSchema: { type: "object" } },
    { name: "wash_car", description: "Book a car wash.", inputSchema: { type: "object" } },
  ]);
  built.upsertWorkload("office", "Office documents.", [
    { name: "create_document", description: "Create a document.", inputSchema: { type: "object" } },
  ]);
  return built;
}

function client(apiKey: string | undefined = API_KEY): EmbeddingsClient {
  return new EmbeddingsClient({ url: server.url, model: "fixture-embed", apiKey });
}

describe("embeddings client", () => {
  test("posts {model, input} with the bearer key and returns one vector per text, in order", async () => {
    const before = server.requests.length;
    const vectors = await client().embed(["rent a car", "create a document"]);
    expect(vectors.map((v) => Array.from(v))).toEqual(
      ["rent a car", "create a document"].map((text) => Array.from(Float32Array.from(fixtureVector(text)))),
    );
    const request = server.requests[before];
    expect(request).toEqual({
      model: "fixture-embed",
      input: ["rent a car", "create a document"],
      authorization: `Bearer ${API_KEY}`,
    });
  });

  test("an HTTP error or a wrong answer is an EmbeddingsError naming the endpoint, never the key", async () => {
    const refused = await client("wrong-key")
      .embed(["x"])
      .catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(EmbeddingsError);
    expect((refused as Error).message).toBe(`embeddings endpoint ${server.url} answered HTTP 401`);
    expect((refused as Error).message).not.toContain("wrong-key");

    const notFound = new EmbeddingsClient({ url: server.url.replace("/v1/embeddings", "/v1/nothing"), model: "m" });
    await expect(notFound.embed(["x"])).rejects.toThrow("answered HTTP 404");

    const wrongShape = new EmbeddingsClient({
      url: server.url,
      model: "m",
      fetch: async () => Response.json({ data: [{ embedding: "nope" }] }),
    });
    await expect(wrongShape.embed(["x"])).rejects.toThrow('item 0 has no numeric "embedding"');
  });
});

describe("an endpoint's wrong answer is an EmbeddingsError, found before anything uses it (review 9, F14)", () => {
  const texts = ["rent a car", "wash a car", "create a document"];
  const refusal = async (answers: EmbeddingServer["answers"], embedder = client()) => {
    server.answers = answers;
    try {
      const err = await embedder.embed(texts).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(EmbeddingsError);
      return (err as Error).message;
    } finally {
      server.answers = "right";
    }
  };

  test("indices out of 0..n-1 (1-based, 10⁹) or given twice", async () => {
    expect(await refusal("one-based")).toBe(`embeddings endpoint ${server.url}: item 2 has "index" 3, not one of 0..2`);
    // At once: no array of 10⁹ entries is made, nor walked.
    expect(await refusal("huge-index")).toBe(
      `embeddings endpoint ${server.url}: item 0 has "index" 1000000000, not one of 0..2`,
    );
    expect(await refusal("same-index")).toBe(`embeddings endpoint ${server.url}: "index" 0 is given twice`);
  });

  test("vectors of different lengths, in one answer or against earlier ones; numbers past float32's range", async () => {
    expect(await refusal("ragged")).toBe(`embeddings endpoint ${server.url}: item 1 has 64 numbers, other vectors 65`);
    const embedder = client();
    await embedder.embed(texts);
    server.answers = "ragged";
    try {
      // One text: its vector is the longer one, unlike those the endpoint answered before.
      await expect(embedder.embed(["rent a car"])).rejects.toThrow("item 0 has 65 numbers, other vectors 64");
    } finally {
      server.answers = "right";
    }
    expect(await refusal("overflow")).toBe(
      `embeddings endpoint ${server.url}: item 0 holds 1e+39, not a finite number`,
    );
  });

  test("an answer larger than its batch can need (streamed, without a Content-Length) is refused", async () => {
    expect(await refusal("oversized")).toBe(
      `embeddings endpoint ${server.url}: its answer for 3 texts is larger than ${embeddingsAnswerLimit(3)} bytes`,
    );
  });

  test("search falls back to keywords on each of them, and reports it", async () => {
    for (const answers of ["one-based", "huge-index", "same-index", "ragged", "overflow", "oversized"] as const) {
      const errors: EmbeddingsError[] = [];
      const built = index();
      const hybrid = new HybridToolSearch(built, client(), { onError: (err) => errors.push(err) });
      server.answers = answers;
      try {
        const hits = await hybrid.search("rent a car", { limit: 2 });
        expect(hits.map((hit) => hit.gatewayName)).toEqual(
          built.search("rent a car", { limit: 2 }).map((h) => h.gatewayName),
        );
        expect(errors).toHaveLength(1);
      } finally {
        server.answers = "right";
      }
    }
  });
});

describe("hybrid search", () => {
  test("a query the keyword index cannot match finds the tool through its embedding", async () => {
    const keywordOnly = index();
    // "automobile hire" shares no word, stem or thesaurus entry with rent_car's text.
    expect(keywordOnly.search("automobile hire")).toEqual([]);

    const hybrid = new HybridToolSearch(keywordOnly, client());
    const hits = await hybrid.search("automobile hire", { limit: 1 });
    expect(hits.map((hit) => hit.gatewayName)).toEqual(["garage_rent_car"]);
  });

  test("the blend is (1 − w) · keyword / best keyword + w · cosine", async () => {
    const built = index();
    const query = "car wash";
    const keyword = built.search(query, { limit: 50 });
    const best = keyword[0]?.score ?? 1;
    const queryVector = Float32Array.from(fixtureVector(query));
    const expected = built
      .tools()
      .map((tool) => {
        const keywordScore = (keyword.find((hit) => hit.gatewayName === tool.gatewayName)?.score ?? 0) / best;
        const similarity = Math.max(0, cosine(queryVector, Float32Array.from(fixtureVector(embeddingText(tool)))));
        return { name: tool.gatewayName, score: 0.7 * keywordScore + 0.3 * similarity };
      })
      .filter((entry) => entry.score > 0)
      .sort((a, b) => b.score - a.score);

    const hits = await new HybridToolSearch(built, client(), { weight: 0.3 }).search(query, { limit: 3 });
    expect(hits.map((hit) => hit.gatewayName)).toEqual(expected.map((entry) => entry.name));
    hits.forEach((hit, i) => {
      expect(hit.score).toBeCloseTo(expected[i]?.score ?? -1, 5);
    });
  });

  test("tool vectors are fetched once and reused; a changed tool is embedded again", async () => {
    const built = index();
    const hybrid = new HybridToolSearch(built, client());
    await hybrid.search("rent a car");
    const embeddedTexts = () => server.requests.flatMap((request) => request.input);
    const countOf = (text: string) => embeddedTexts().filter((input) => input === text).length;
    const rentText = embeddingText({
      gatewayName: "garage_rent_car",
      tool: { name: "rent_car", description: "Rent a car for some days." },
    });
    const seen = countOf(rentText);
    await hybrid.search("wash the car");
    expect(countOf(rentText)).toBe(seen);

    built.upsertWorkload("garage", "Vehicle services.", [
      { name: "rent_car", description: "Rent a car or a van.", inputSchema: { type: "object" } },
    ]);
    await hybrid.search("rent a van");
    expect(embeddedTexts()).toContain("garage_rent_car\nRent a car or a van.");
  });

  test("concurrent searches embed the tools once", async () => {
    const hybrid = new HybridToolSearch(index(), client());
    const text = "office_create_document\nCreate a document.";
    const before = server.requests.filter((request) => request.input.includes(text)).length;
    await Promise.all([hybrid.search("create a document"), hybrid.search("rent a car"), hybrid.search("wash")]);
    expect(server.requests.filter((request) => request.input.includes(text)).length).toBe(before + 1);
  });

  test("the policy filter applies to the embedding side too", async () => {
    const hybrid = new HybridToolSearch(index(), client());
    const hits = await hybrid.search("automobile hire", { allow: (name) => name !== "garage_rent_car" });
    expect(hits.map((hit) => hit.gatewayName)).not.toContain("garage_rent_car");
  });

  test("when the endpoint fails, the answer comes from keywords alone and the failure is reported", async () => {
    const errors: EmbeddingsError[] = [];
    const built = index();
    const hybrid = new HybridToolSearch(built, client(), { onError: (err) => errors.push(err) });
    server.failing = true;
    try {
      const hits = await hybrid.search("rent a car", { limit: 2 });
      expect(hits.map((hit) => hit.gatewayName)).toEqual(
        built.search("rent a car", { limit: 2 }).map((h) => h.gatewayName),
      );
      expect(errors).toHaveLength(1);
      expect(errors[0]?.message).toContain("HTTP 503");
    } finally {
      server.failing = false;
    }
  });
});
