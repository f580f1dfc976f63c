/** Tool search: the keyword index (ranking, updates, policy filter). */
import { describe, expect, test } from "bun:test";
import { gatewayToolName, type SearchableTool, ToolSearchIndex } from "../../src/gateway/tool-search/tool-index.ts";

const object = (properties: Record<string, unknown> = {}, required: string[] = []) => ({
  type: "object",
  properties,
  required,
});

const filesystem: SearchableTool[] = [
  {
    name: "read_file",
    description: "Read the complete contents of a file from the file system.",
    inputSchema: object({ path: { type: "string", description: "Path of the file" } }, ["path"]),
  },
  {
    name: "write_file",
    description: "Create a new file or overwrite an existing file with new content.",
    inputSchema: object({ path: { type: "string" }, content: { type: "string" } }, ["path", "content"]),
  },
  {
    name: "delete_file",
    description: "Delete a file.",
    inputSchema: object({ path: { type: "string" } }, ["path"]),
  },
  {
    name: "list_directory",
    description: "List the entries of a directory.",
    inputSchema: object({ path: { type: "string" } }),
  },
];

const weather: SearchableTool[] = [
  {
    name: "get_forecast",
    description: "Weather forecast for a city for the next days.",
    inputSchema: object({ city: { type: "string" }, days: { type: "integer" } }, ["city"]),
  },
  {
    name: "get_alerts",
    description: "Active weather alerts for a US state.",
    inputSchema: object({ state: { type: "string", description: "Two-letter US state code" } }, ["state"]),
  },
];

const trends: SearchableTool[] = [
  {
    name: "get-weibo-trending",
    description: "获取微博热搜榜，包括时事热点、社会现象、娱乐新闻等",
    inputSchema: object(),
  },
  {
    name: "get-douban-rank",
    description: "获取豆瓣实时热门榜单，提供当前热门书籍、电影、电视剧",
    inputSchema: object({ type: { type: "string", enum: ["book", "movie"] } }),
  },
];

function groupIndex(): ToolSearchIndex {
  const index = new ToolSearchIndex();
  index.upsertWorkload("filesystem", "Secure file operations on allowed directories.", filesystem);
  index.upsertWorkload("weather", "Weather forecasts and alerts.", weather);
  index.upsertWorkload("trends-hub", "全网热点趋势一站式聚合服务", trends);
  return index;
}

const names = (hits: { gatewayName: string }[]) => hits.map((hit) => hit.gatewayName);

describe("ranking", () => {
  test("names tools <workload>_<tool>, best match first", () => {
    const index = groupIndex();
    expect(gatewayToolName("weather", "get_forecast")).toBe("weather_get_forecast");
    expect(names(index.search("weather forecast for Paris", { limit: 1 }))).toEqual(["weather_get_forecast"]);
    expect(names(index.search("write some content into a new file"))[0]).toBe("filesystem_write_file");
  });

  test("a paraphrase with none of the tool's own words finds it (thesaurus)", () => {
    const index = groupIndex();
    // "remove" is nowhere in delete_file's text.
    expect(names(index.search("remove a document from disk"))[0]).toBe("filesystem_delete_file");
    // "folder" is nowhere in list_directory's text.
    expect(names(index.search("show what is inside a folder"))[0]).toBe("filesystem_list_directory");
  });

  test("a Chinese query finds a tool described in Chinese (character bigrams)", () => {
    const index = groupIndex();
    expect(names(index.search("微博热搜", { limit: 1 }))).toEqual(["trends-hub_get-weibo-trending"]);
    expect(names(index.search("豆瓣电影榜单", { limit: 1 }))).toEqual(["trends-hub_get-douban-rank"]);
  });

  test("a tool described in Chinese is not outranked by an English description for an English query", () => {
    const build = (scriptCompensation: boolean) => {
      const index = new ToolSearchIndex({ tuning: { scriptCompensation } });
      index.upsertWorkload("news-cn", "中文新闻聚合服务", [
        {
          name: "get-weibo-news",
          description: "获取微博新闻热搜，包括时事热点、社会新闻、娱乐新闻等",
          inputSchema: object(),
        },
      ]);
      index.upsertWorkload("stocks", "Stock market data.", [
        {
          name: "get_ticker_news",
          description: "Get the latest news articles for a stock ticker symbol.",
          inputSchema: object({ ticker: { type: "string", description: "Ticker symbol" } }),
        },
      ]);
      return index;
    };
    // Both names say "get … news"; only the English description can add to that for an English query.
    expect(names(build(true).search("get news"))).toEqual(["news-cn_get-weibo-news", "stocks_get_ticker_news"]);
    expect(names(build(false).search("get news"))).toEqual(["stocks_get_ticker_news", "news-cn_get-weibo-news"]);
  });

  test("a misspelt query still finds the tool (vocabulary expansion)", () => {
    const index = groupIndex();
    expect(names(index.search("wether forcast", { limit: 1 }))).toEqual(["weather_get_forecast"]);
  });

  test("a huge query (a pasted document or image) costs no more than a normal one", () => {
    const index = groupIndex();
    index.rebuild();
    const junk = `${"iVBORw0KGgoAAAANSUhEUgAAAgAAAAIACAYAAAD0eNT6".repeat(20_000)} ${"qwzx".repeat(50_000)}`;
    const wordSoup = Array.from({ length: 500 }, (_, i) => `zq${i}xw${(i * 7919).toString(36)}`).join(" ");
    // Without the bounds on the query (a quadratic regex, a fuzzy scan per word) these took minutes: the
    // test's timeout is the check; the bench measures the real latency.
    expect(names(index.search(`weather forecast ${junk}`, { limit: 1 }))).toEqual(["weather_get_forecast"]);
    expect(index.search(wordSoup)).toEqual([]);
  });

  test("a query with nothing in common with any tool finds nothing", () => {
    expect(groupIndex().search("zzzz qqqq")).toEqual([]);
    expect(groupIndex().search("   ")).toEqual([]);
    expect(groupIndex().search("weather", { limit: 0 })).toEqual([]);
  });
});

describe("updates and policy", () => {
  test("the same tool name in two workloads stays two distinct results", () => {
    const index = groupIndex();
    index.upsertWorkload("desktop", "Desktop commander: files and processes.", [
      { name: "read_file", description: "Read a file from disk, with offsets.", inputSchema: object() },
    ]);
    const hits = index.search("read a file", { limit: 5 });
    expect(names(hits)).toContain("filesystem_read_file");
    expect(names(hits)).toContain("desktop_read_file");
    expect(index.lookup("desktop_read_file")?.tool.description).toBe("Read a file from disk, with offsets.");
    expect(index.lookup("filesystem_read_file")?.workload).toBe("filesystem");
  });

  test("the policy filter drops tools before the limit is taken", () => {
    const index = groupIndex();
    const unfiltered = names(index.search("file", { limit: 2 }));
    expect(unfiltered).toHaveLength(2);
    const allow = (name: string) => !unfiltered.includes(name);
    const filtered = names(index.search("file", { limit: 2, allow }));
    // Still two results: the next best, not the top two minus the denied ones.
    expect(filtered).toHaveLength(2);
    expect(filtered.some((name) => unfiltered.includes(name))).toBe(false);
  });

  test("an upsert or a removal shows in the next search", () => {
    const index = groupIndex();
    expect(index.search("translate text into French")).toEqual([]);
    index.upsertWorkload("translator", "Translation service.", [
      { name: "translate", description: "Translate text into another language.", inputSchema: object() },
    ]);
    expect(names(index.search("translate text into French", { limit: 1 }))).toEqual(["translator_translate"]);

    // The weather server changed its tools (list_changed): the old tool is gone, the new one found.
    index.upsertWorkload("weather", "Weather forecasts and alerts.", [
      { name: "get_air_quality", description: "Air quality index for a city.", inputSchema: object() },
    ]);
    expect(names(index.search("weather forecast"))).not.toContain("weather_get_forecast");
    expect(index.lookup("weather_get_forecast")).toBeUndefined();
    expect(names(index.search("air quality", { limit: 1 }))).toEqual(["weather_get_air_quality"]);

    index.removeWorkload("translator");
    expect(index.search("translate text into French")).toEqual([]);
    expect(
      index
        .workloads()
        .map((w) => w.name)
        .sort(),
    ).toEqual(["filesystem", "trends-hub", "weather"]);
    expect(index.toolCount).toBe(filesystem.length + 1 + trends.length);
  });
});
