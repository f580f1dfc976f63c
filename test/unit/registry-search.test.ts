/**
 * `registry search` ranking on the real embedded catalog: queries whose best server is obvious to a
 * reader of the catalog (a server's own name, a word only one server's description or tags use, a tool
 * only one server declares), and the "did you mean" for a mistyped server name.
 */
import { describe, expect, test } from "bun:test";
import { searchRegistry, serverNameSuggestion } from "../../src/cli/registry-search.ts";
import { embeddedEntries } from "../../src/registry/loader.ts";
import type { RegistryEntry } from "../../src/registry/entry.ts";

const catalog = embeddedEntries();
const names = catalog.map((entry) => entry.name);
const best = (query: string) => searchRegistry(catalog, query, 10)[0]?.name;

describe("searchRegistry on the embedded catalog", () => {
  test.each([
    ["github", "github"],
    ["playwright", "playwright"],
    ["sequential thinking", "sequential-thinking"],
    ["aws documentation", "aws-documentation"],
    ["home assistant", "hass-mcp"],
  ])("a server's own name: %s → %s", (query, expected) => {
    expect(best(query)).toBe(expected);
  });

  test.each([
    // Words of one server's description or tags only.
    ["IANA time zones", "time"],
    ["vulnerabilities in packages", "osv"],
    ["kubeconfig", "k8s"],
    ["confluence", "atlassian"],
    ["knowledge graph", "memory"],
    ["smart home devices", "hass-mcp"],
  ])("description or tags: %s → %s", (query, expected) => {
    expect(best(query)).toBe(expected);
  });

  test.each([
    // Tools that one server declares.
    ["git_commit", "git"],
    ["brave_news_search", "brave-search"],
    ["semgrep_scan", "semgrep"],
    ["get_image_manifest", "oci-registry"],
    ["list_pipelines", "buildkite"],
  ])("a declared tool: %s → %s", (query, expected) => {
    expect(best(query)).toBe(expected);
  });

  test("misspelt and inflected words still find the server (the index's fuzzy terms and stems)", () => {
    expect(best("filesytem")).toBe("filesystem");
    expect(best("browsers")).toBe("playwright");
  });

  test("best match first, each server once, at most the limit", () => {
    const found = searchRegistry(catalog, "documentation", 10).map((entry) => entry.name);
    expect(found.length).toBeGreaterThanOrEqual(3);
    expect(new Set(found).size).toBe(found.length);
    expect(found).toEqual(expect.arrayContaining(["context7", "context7-remote", "aws-documentation", "terraform"]));
    expect(searchRegistry(catalog, "documentation", 2).map((entry) => entry.name)).toEqual(found.slice(0, 2));
  });

  test("nothing matches words no server uses, nor a query of stop words only", () => {
    expect(searchRegistry(catalog, "xyzzy quux", 10)).toEqual([]);
    expect(searchRegistry(catalog, "the of and", 10)).toEqual([]);
    expect(searchRegistry([], "github", 10)).toEqual([]);
  });

  test("a server that declares no tools is found by its name and description", () => {
    const bare: RegistryEntry = {
      name: "acme-ledger",
      description: "Bookkeeping for the Acme company",
      transport: "stdio",
      source: { npx: "@acme/ledger-mcp@1.0.0" },
      permissions: "none",
      env: [],
      args: [],
      tools: [],
      tags: ["finance"],
    };
    const withBare = [...catalog, bare];
    expect(searchRegistry(withBare, "acme ledger", 10)[0]?.name).toBe("acme-ledger");
    expect(searchRegistry(withBare, "bookkeeping", 10)[0]?.name).toBe("acme-ledger");
    expect(searchRegistry(withBare, "finance", 10)[0]?.name).toBe("acme-ledger");
  });
});

describe("serverNameSuggestion", () => {
  test("a query word one edit from a server name that was not found", () => {
    expect(serverNameSuggestion("tme", names, [])).toBe("did you mean time?");
    expect(serverNameSuggestion("fech", names, [])).toBe("did you mean fetch?");
  });

  test("nothing when the server is already shown, the word is a name, or nothing is close", () => {
    const github = catalog.filter((entry) => entry.name === "github");
    expect(serverNameSuggestion("githb", names, github)).toBeUndefined();
    expect(serverNameSuggestion("github", names, [])).toBeUndefined();
    expect(serverNameSuggestion("xyzzyq", names, [])).toBeUndefined();
  });
});
