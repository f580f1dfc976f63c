/** Tool search: tokenizer, stemmer, thesaurus, edit distance and vocabulary expansions. */
import { describe, expect, test } from "bun:test";
import { editDistance } from "../../src/close-matches.ts";
import { queryTerms } from "../../src/gateway/tool-search/query.ts";
import { inflectionBases, synonymsOf } from "../../src/gateway/tool-search/synonyms.ts";
import { stem, tokenize } from "../../src/gateway/tool-search/tokenizer.ts";
import { Vocabulary } from "../../src/gateway/tool-search/vocabulary.ts";
import { workloadEntry } from "../../src/gateway/tool-search/collection.ts";
import { MAX_FIELD_CHARS, MAX_WORKLOAD_TEXT_CHARS, toolFields } from "../../src/gateway/tool-search/tool-text.ts";

describe("tokenize", () => {
  test("splits identifiers on _, -, camelCase, acronyms and digits, lower-cased", () => {
    expect(tokenize("get_weather-forecast", { stem: false })).toEqual(["get", "weather", "forecast"]);
    expect(tokenize("getHTTPStatus", { stem: false })).toEqual(["get", "http", "status"]);
    expect(tokenize("base64Encode mp3", { stem: false })).toEqual(["base", "64", "encode", "mp", "3"]);
    expect(tokenize("12306-mcp_get-tickets", { stem: false })).toEqual(["12306", "mcp", "get", "tickets"]);
  });

  test("drops English stop words from text but keeps them in names when asked", () => {
    expect(tokenize("Please help me find the files in this folder", { stem: false })).toEqual([
      "find",
      "files",
      "folder",
    ]);
    expect(tokenize("get_the_file", { stopWords: false, stem: false })).toEqual(["get", "the", "file"]);
  });

  test("stems English words with Porter2 so inflections meet", () => {
    expect(tokenize("searching searches searched")).toEqual(["search", "search", "search"]);
    expect(stem("repositories")).toBe(stem("repository"));
    expect(stem("generated")).toBe(stem("generating"));
    // Short words, digits and non-Latin words are left alone.
    expect(stem("md")).toBe("md");
    expect(stem("12306")).toBe("12306");
  });

  test("the stemmer is Porter2 (Snowball English), exceptional forms included", () => {
    const expected: Record<string, string> = {
      skies: "sky",
      dying: "die",
      idly: "idl",
      gently: "gentl",
      news: "news",
      atlas: "atlas",
      innings: "inning",
      proceeded: "proceed",
      generously: "generous",
      caresses: "caress",
      hopping: "hop",
      agreed: "agre",
      generate: "generat",
      general: "general",
      communism: "communism",
    };
    expect(Object.fromEntries(Object.keys(expected).map((word) => [word, stem(word)]))).toEqual(expected);
  });

  test("text without spaces becomes overlapping character bigrams, Latin parts stay words", () => {
    expect(tokenize("必应搜索")).toEqual(["必应", "应搜", "搜索"]);
    expect(tokenize("从bing_search返回的结果ID")).toEqual([
      "从",
      "bing",
      "search",
      "返回",
      "回的",
      "的结",
      "结果",
      "id",
    ]);
    expect(tokenize("天")).toEqual(["天"]);
  });
});

describe("query terms", () => {
  test("the user's words weigh 1, thesaurus expansions less", () => {
    const { own, weights } = queryTerms("remove a picture", { synonymWeight: 0.5, literalWeight: 0.5, stemming: true });
    expect(own).toEqual([stem("remove"), stem("picture")]);
    expect(weights.get(stem("remove"))).toBe(1);
    expect(weights.get(stem("delete"))).toBe(0.5);
    expect(weights.get(stem("image"))).toBe(0.5);
    expect(synonymsOf("delete")).toContain(stem("erase"));
  });

  test("the thesaurus is looked up by the word and its inflections, never by a derivation sharing its stem", () => {
    // Inflections of a thesaurus word expand like the word.
    for (const word of ["deleted", "deleting", "deletes", "pictures", "directories", "stopped", "summarizing"]) {
      expect(synonymsOf(word).length).toBeGreaterThan(0);
    }
    expect(synonymsOf("pictures")).toContain(stem("image"));
    // "locate" has the Porter2 stem of "location" ("locat"), but does not mean a place.
    expect(stem("locate")).toBe(stem("location"));
    expect(synonymsOf("locate")).toEqual([]);
    expect(synonymsOf("location")).toContain(stem("place"));
    const { weights } = queryTerms("locate the 10th line", { synonymWeight: 0.5, literalWeight: 0.5, stemming: true });
    expect(weights.has(stem("place"))).toBe(false);
    // A thesaurus word in a plural or -ing form expands its singular or base form too, as when the
    // thesaurus was keyed by stem ("details" and "detail" share theirs).
    expect(synonymsOf("detail")).toContain(stem("info"));
    expect(synonymsOf("setting")).toContain(stem("config"));
    expect(synonymsOf("direction")).toContain(stem("route"));
    for (const word of ["trend", "trends", "trended"]) expect(synonymsOf(word)).toContain(stem("popular"));
    // With stemming off the expansions are exact words.
    expect(synonymsOf("photos", false)).toContain("image");
  });

  test("inflection bases undo plural, -ing and -ed only", () => {
    expect(inflectionBases("queries")).toContain("query");
    expect(inflectionBases("boxes")).toContain("box");
    expect(inflectionBases("uses")).toContain("use");
    expect(inflectionBases("runes")).not.toContain("run");
    expect(inflectionBases("files")).toContain("file");
    expect(inflectionBases("saving")).toContain("save");
    expect(inflectionBases("running")).toContain("run");
    expect(inflectionBases("copied")).toContain("copy");
    // "-ies" is "-y" plus "ies", or "-ie" plus "s".
    expect(inflectionBases("movies")).toContain("movie");
    expect(inflectionBases("cookies")).toContain("cookie");
    expect(inflectionBases("class")).toEqual(["class"]);
    expect(inflectionBases("location")).toEqual(["location"]);
  });

  test("a file path or file name implies 'file', a URL implies 'url', a domain or a version does not", () => {
    const implied = (q: string) => [
      ...queryTerms(q, { synonymWeight: 0, literalWeight: 0.5, stemming: true }).weights.keys(),
    ];
    expect(implied("save it to /root/markdown/report.md")).toContain("file");
    expect(implied("open notes.txt")).toContain("file");
    expect(implied("read https://example.com/a")).toContain("url");
    expect(implied("prices at amazon.com")).not.toContain("file");
    expect(implied("upgrade to version 1.2.3, e.g. now")).not.toContain("file");
  });
});

describe("edit distance and vocabulary", () => {
  test("counts a swap of neighbours as one edit and stops past the limit", () => {
    expect(editDistance("broswer", "browser")).toBe(1);
    expect(editDistance("kitten", "sitting")).toBe(3);
    expect(editDistance("kitten", "sitting", 1)).toBe(2);
    expect(editDistance("", "abc")).toBe(3);
  });

  test("expands an abbreviation to the words it starts and a misspelling to known words", () => {
    const vocabulary = new Vocabulary(["wikipedia", "browser", "brown", "search"]);
    expect(vocabulary.expansions("wiki").map((e) => e.term)).toEqual(["wikipedia"]);
    expect(vocabulary.expansions("broswer").map((e) => e.term)).toEqual(["browser"]);
    // A known word is not "corrected"; a short one is not prefix-expanded.
    expect(vocabulary.expansions("search")).toEqual([]);
    expect(vocabulary.expansions("bro")).toEqual([]);
  });
});

describe("what a tool's text costs the index", () => {
  // Distinct five-letter words ("qaaaa", "qaaab", …): six characters each with the space.
  const word = (n: number) =>
    `q${Array.from({ length: 4 }, (_, k) => String.fromCharCode(97 + (Math.floor(n / 26 ** (3 - k)) % 26))).join("")}`;
  const words = (from: number, count: number) => Array.from({ length: count }, (_, i) => word(from + i)).join(" ");

  test("each field is indexed up to MAX_FIELD_CHARS: a 3.6 MB description is known by its start", () => {
    const fields = toolFields({ name: "big", description: words(0, 600_000) }, false);
    expect(fields.description[0]).toBe("qaaaa");
    expect(fields.description.length).toBe(Math.ceil(MAX_FIELD_CHARS / 6));
  });

  test("a workload's descriptions and parameter texts together are indexed up to MAX_WORKLOAD_TEXT_CHARS", () => {
    // 200 tools of 15,000 characters each: 3 MB, three times the budget; every tool keeps its name.
    const tools = Array.from({ length: 200 }, (_, i) => ({
      name: `tool_${i}`,
      description: words(i * 2_500, 2_500),
      inputSchema: { type: "object", properties: { p: { type: "string", description: "a parameter" } } },
    }));
    const entry = workloadEntry("big", "", tools, false);
    let indexed = 0;
    for (const tool of entry.tools) indexed += tool.fields.description.length + tool.fields.paramText.length;
    expect(indexed * 6).toBeLessThanOrEqual(MAX_WORKLOAD_TEXT_CHARS + 6 * 200);
    expect(indexed * 6).toBeGreaterThan(MAX_WORKLOAD_TEXT_CHARS - 6 * 200);
    expect(entry.tools.at(-1)?.fields.description.length).toBe(0);
    expect([...(entry.tools.at(-1)?.fields.name.counts.keys() ?? [])]).toEqual(["tool", "199"]);
  });

  test("a description of a million words is indexed without overflowing the stack", () => {
    expect(() => workloadEntry("big", "", [{ name: "t", description: words(0, 1_000_000) }], false)).not.toThrow();
  });
});
