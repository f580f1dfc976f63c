/**
 * The format editors on their own: each edit changes our entry and nothing else, byte for
 * byte (comments, spacing, quoting, line endings, trailing commas), and a file that does not
 * parse, or whose servers are not where the client keeps them, is refused with a one-line reason.
 */
import { describe, expect, test } from "bun:test";
import { ConfigParseError, loadEditor } from "../../src/clients/formats/editor.ts";
import type { ServerCollection } from "../../src/clients/types.ts";

const servers: ServerCollection = { kind: "map", path: ["mcpServers"] };
const json = await loadEditor("json");
const jsonc = await loadEditor("jsonc");
const yaml = await loadEditor("yaml");
const toml = await loadEditor("toml");

function parseFailure(run: () => unknown): string {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigParseError);
    const message = (err as Error).message;
    expect(message).not.toContain("\n");
    return message;
  }
  throw new Error("expected a ConfigParseError");
}

describe("JSON", () => {
  const seed = `{
    "theme": "dark",
    "mcpServers": {
        "docs": {"command": "npx", "args": ["-y", "docs-mcp"]},
        "search": {
            "url": "https://search.example/mcp"
        }
    }
}
`;

  test("a new entry goes after the last one, in the file's own indentation; removing it restores the file", () => {
    const added = json.insertEntry(seed, servers, "fetch", { type: "http", url: "http://127.0.0.1:8080/mcp" });
    expect(added).toBe(`{
    "theme": "dark",
    "mcpServers": {
        "docs": {"command": "npx", "args": ["-y", "docs-mcp"]},
        "search": {
            "url": "https://search.example/mcp"
        },
        "fetch": {
            "type": "http",
            "url": "http://127.0.0.1:8080/mcp"
        }
    }
}
`);
    expect(json.removeEntry(added, servers, "fetch")).toBe(seed);
  });

  test("setting one key replaces that value only", () => {
    const added = json.insertEntry(seed, servers, "fetch", { type: "http", url: "http://127.0.0.1:8080/mcp" });
    const moved = json.setEntryKey(added, servers, "fetch", "url", "http://127.0.0.1:9090/mcp");
    expect(moved).toBe(added.replace("127.0.0.1:8080", "127.0.0.1:9090"));
    expect(json.removeEntryKey(moved, servers, "fetch", "type")).toBe(
      moved.replace(`"type": "http",\n            `, ""),
    );
  });

  test("entries are read by name, foreign ones included", () => {
    expect([...json.entries(seed, servers).keys()]).toEqual(["docs", "search"]);
    expect(json.entries(seed, servers).get("search")).toEqual({ url: "https://search.example/mcp" });
    expect(json.entries('{"theme": "dark"}', servers).size).toBe(0);
  });

  test("a missing collection is created next to the other settings", () => {
    const text = `{\n  "theme": "dark"\n}\n`;
    expect(json.insertEntry(text, servers, "fetch", { url: "u" })).toBe(
      `{\n  "theme": "dark",\n  "mcpServers": {\n    "fetch": {\n      "url": "u"\n    }\n  }\n}\n`,
    );
  });

  test("an empty file, an empty object and an empty collection", () => {
    expect(json.insertEntry("", servers, "fetch", { url: "u" })).toBe(
      `{\n  "mcpServers": {\n    "fetch": {\n      "url": "u"\n    }\n  }\n}\n`,
    );
    expect(json.insertEntry("{}\n", servers, "fetch", { url: "u" })).toBe(
      `{\n  "mcpServers": {\n    "fetch": {\n      "url": "u"\n    }\n  }\n}\n`,
    );
    const empty = `{\n  "mcpServers": {}\n}\n`;
    const added = json.insertEntry(empty, servers, "fetch", { url: "u" });
    expect(added).toBe(`{\n  "mcpServers": {\n    "fetch": {\n      "url": "u"\n    }\n  }\n}\n`);
    expect(json.removeEntry(added, servers, "fetch")).toBe(empty);
  });

  test("removing the last entry takes the comma before it; removing the first keeps the rest valid", () => {
    const two = `{\n  "mcpServers": {\n    "a": {"url": "1"},\n    "b": {"url": "2"}\n  }\n}\n`;
    expect(json.removeEntry(two, servers, "b")).toBe(`{\n  "mcpServers": {\n    "a": {"url": "1"}\n  }\n}\n`);
    expect(json.removeEntry(two, servers, "a")).toBe(`{\n  "mcpServers": {\n    "b": {"url": "2"}\n  }\n}\n`);
    expect(json.removeEntry(two, servers, "absent")).toBe(two);
  });

  test("an object written on one line stays on one line", () => {
    const inline = `{"mcpServers": {"a": {"url": "1"}}}`;
    const added = json.insertEntry(inline, servers, "b", { url: "2" });
    expect(added).toBe(`{"mcpServers": {"a": {"url": "1"}, "b": {"url":"2"}}}`);
    expect(json.removeEntry(added, servers, "b")).toBe(inline);
    expect(json.removeEntry(added, servers, "a")).toBe(`{"mcpServers": {"b": {"url":"2"}}}`);
  });

  test("CRLF line endings and tab indentation are kept", () => {
    const windows = '{\r\n\t"mcpServers": {\r\n\t\t"a": {\r\n\t\t\t"url": "1"\r\n\t\t}\r\n\t}\r\n}\r\n';
    const added = json.insertEntry(windows, servers, "b", { url: "2" });
    expect(added).toBe(
      '{\r\n\t"mcpServers": {\r\n\t\t"a": {\r\n\t\t\t"url": "1"\r\n\t\t},\r\n\t\t"b": {\r\n\t\t\t"url": "2"\r\n\t\t}\r\n\t}\r\n}\r\n',
    );
    expect(json.removeEntry(added, servers, "b")).toBe(windows);
  });

  test("a comment the user put in a plain-JSON client's file is kept", () => {
    const text = '{\n  // mine\n  "mcpServers": {\n    "a": {"url": "1"}\n  }\n}\n';
    const added = json.insertEntry(text, servers, "b", { url: "2" });
    expect(added).toBe(
      '{\n  // mine\n  "mcpServers": {\n    "a": {"url": "1"},\n    "b": {\n      "url": "2"\n    }\n  }\n}\n',
    );
    expect(json.removeEntry(added, servers, "b")).toBe(text);
  });

  test("only the way to the collection is read as nodes: the same answers as the whole tree gives", () => {
    // A server list deeper in the file (Claude Code's per-project servers) is not the collection;
    // a key there twice counts as JSON.parse counts it (the last one).
    const text =
      '{\n  "projects": {"/p": {"mcpServers": {"nested": {"url": "0"}}}},\n  "mcpServers": {"old": {"url": "1"}},\n' +
      '  "list": [1, {"mcpServers": 2}],\n  "mcpServers": {\n    "a": {"url": "2", "args": [1, [2]]}\n  }\n}\n';
    expect([...json.entries(text, servers).entries()]).toEqual([["a", { url: "2", args: [1, [2]] }]]);
    expect(json.valueAt(text, ["mcpServers"])).toEqual((json.parse(text) as { mcpServers: unknown }).mcpServers);
    expect(json.valueAt(text, ["projects", "/p", "mcpServers"])).toEqual({ nested: { url: "0" } });
    expect(json.valueAt(text, ["list", "x"])).toBeUndefined();
    expect(json.valueAt(text, ["absent"])).toBeUndefined();
    const added = json.insertEntry(text, servers, "b", { url: "3" });
    expect(added).toBe(text.replace("[1, [2]]}\n", '[1, [2]]},\n    "b": {\n      "url": "3"\n    }\n'));
    expect(json.setEntryKey(added, servers, "b", "url", "4")).toBe(added.replace('"url": "3"', '"url": "4"'));
    expect(json.removeEntry(added, servers, "b")).toBe(text);
    // A syntax error anywhere, even far from the collection, refuses the file.
    expect(parseFailure(() => json.entries(text.replace('"/p": {', '"/p": {,'), servers))).toMatch(
      /^it is not valid JSON/,
    );
  });

  test("broken JSON and a collection of the wrong type are refused with the place", () => {
    expect(parseFailure(() => json.entries('{\n  "mcpServers": {\n    "a": \n}', servers))).toMatch(
      /^it is not valid JSON \(line 4, column 1: .+\)$/,
    );
    expect(parseFailure(() => json.parse('{ "a": 1 } }'))).toContain("line 1, column 12");
    expect(parseFailure(() => json.insertEntry('{"mcpServers": []}', servers, "x", {}))).toBe(
      '"mcpServers" is not an object',
    );
    expect(parseFailure(() => json.insertEntry("[1, 2]", servers, "x", {}))).toBe("the top level is not an object");
  });
});

describe("JSON with comments", () => {
  const seed = `// Zed settings
{
  "theme": "One Dark", // the user's theme
  /* servers I added myself */
  "context_servers": {
    "local": {
      "command": "my-server", // keep this comment
      "args": [],
    },
  },
}
`;
  const zed: ServerCollection = { kind: "map", path: ["context_servers"] };

  test("comments stay, the file's trailing-comma habit is followed, removal restores every byte", () => {
    const added = jsonc.insertEntry(seed, zed, "fetch", { url: "http://127.0.0.1:8080/mcp" });
    expect(added).toBe(`// Zed settings
{
  "theme": "One Dark", // the user's theme
  /* servers I added myself */
  "context_servers": {
    "local": {
      "command": "my-server", // keep this comment
      "args": [],
    },
    "fetch": {
      "url": "http://127.0.0.1:8080/mcp"
    },
  },
}
`);
    expect(jsonc.removeEntry(added, zed, "fetch")).toBe(seed);
  });

  test("nesting is counted as jsonc-parser reads the file, not as JSON.parse would (the bridge's scanner's reading)", () => {
    const deep = `${"[".repeat(200_000)}${"]".repeat(200_000)}`;
    // A string broken at its line's end: jsonc-parser goes on parsing after it, and its tree would overflow the stack.
    expect(parseFailure(() => jsonc.parse(`{"a": "oops\n "b": ${deep}}`))).toContain("deeper than 512 levels (line 2");
    // A quote in a comment opens no string, so what follows is counted.
    expect(parseFailure(() => jsonc.parse(`{\n // don't say "hi\n "a": ${deep}}`))).toContain(
      "deeper than 512 levels (line 3",
    );
    // Brackets in a comment are no nesting.
    expect(jsonc.parse(`{\n // ${"[".repeat(2_000)}\n "a": 1}`)).toEqual({ a: 1 });
  });

  test("a comment trailing the last entry stays with that entry's line", () => {
    const text = `{\n  "servers": {\n    "a": {"url": "1"} // mine\n  }\n}\n`;
    const vscode: ServerCollection = { kind: "map", path: ["servers"] };
    const added = jsonc.insertEntry(text, vscode, "b", { url: "2" });
    expect(added).toBe(
      `{\n  "servers": {\n    "a": {"url": "1"}, // mine\n    "b": {\n      "url": "2"\n    }\n  }\n}\n`,
    );
    expect(jsonc.removeEntry(added, vscode, "b")).toBe(text);
  });
});

describe("JSON with comments: an empty collection holding comments", () => {
  const vscode: ServerCollection = { kind: "map", path: ["servers"] };

  test("a comment on the brace's line stays there: the entry goes after it, and removing the entry restores the file", () => {
    const text = `{\n  "servers": { // none yet\n  },\n  "inputs": []\n}\n`;
    const added = jsonc.insertEntry(text, vscode, "fetch", { url: "u" });
    expect(added).toBe(
      `{\n  "servers": { // none yet\n    "fetch": {\n      "url": "u"\n    }\n  },\n  "inputs": []\n}\n`,
    );
    expect(jsonc.removeEntry(added, vscode, "fetch")).toBe(text);
  });

  test("comment lines inside the braces stay where they are", () => {
    const text = `{\n  "servers": {\n    // add servers here\n  }\n}\n`;
    const added = jsonc.insertEntry(text, vscode, "fetch", { url: "u" });
    expect(jsonc.entries(added, vscode).get("fetch")).toEqual({ url: "u" });
    expect(jsonc.removeEntry(added, vscode, "fetch")).toBe(text);
  });
});

describe("YAML", () => {
  const goose: ServerCollection = { kind: "map", path: ["extensions"] };
  const continueList: ServerCollection = { kind: "list", path: ["mcpServers"], nameKey: "name" };
  const seed = `# Goose configuration
GOOSE_PROVIDER: anthropic    # chosen in goose configure
GOOSE_MODEL: 'claude-sonnet'
extensions:
  developer:
    bundled: true
    enabled: true
    name: developer
    type: builtin

  # my file server
  filesystem:
    type: stdio
    cmd: npx
    args: ["-y", '@modelcontextprotocol/server-filesystem', /tmp]
GOOSE_SEARCH_PATHS:
- /usr/local/bin
`;

  test("a new extension goes after the last one; comments, quoting and flow lists stay; removal restores the file", () => {
    const added = yaml.insertEntry(seed, goose, "fetch", {
      type: "streamable_http",
      name: "fetch",
      uri: "http://127.0.0.1:8080/mcp",
      enabled: true,
      headers: {},
    });
    expect(added).toBe(`# Goose configuration
GOOSE_PROVIDER: anthropic    # chosen in goose configure
GOOSE_MODEL: 'claude-sonnet'
extensions:
  developer:
    bundled: true
    enabled: true
    name: developer
    type: builtin

  # my file server
  filesystem:
    type: stdio
    cmd: npx
    args: ["-y", '@modelcontextprotocol/server-filesystem', /tmp]
  fetch:
    type: streamable_http
    name: fetch
    uri: http://127.0.0.1:8080/mcp
    enabled: true
    headers: {}
GOOSE_SEARCH_PATHS:
- /usr/local/bin
`);
    const moved = yaml.setEntryKey(added, goose, "fetch", "uri", "http://127.0.0.1:9090/mcp");
    expect(moved).toBe(added.replace("127.0.0.1:8080", "127.0.0.1:9090"));
    expect(yaml.entries(moved, goose).get("fetch")).toMatchObject({ uri: "http://127.0.0.1:9090/mcp", enabled: true });
    expect(yaml.removeEntry(moved, goose, "fetch")).toBe(seed);
  });

  test("a missing, empty, null or `{}` collection becomes a block one", () => {
    const entry = { a: 1 };
    expect(yaml.insertEntry("", goose, "x", entry)).toBe("extensions:\n  x:\n    a: 1\n");
    // A file without a final line break keeps none.
    expect(yaml.insertEntry("other: 1", goose, "x", entry)).toBe("other: 1\nextensions:\n  x:\n    a: 1");
    expect(yaml.insertEntry("extensions:\nother: 1\n", goose, "x", entry)).toBe(
      "extensions:\n  x:\n    a: 1\nother: 1\n",
    );
    expect(yaml.insertEntry("extensions: ~\n", goose, "x", entry)).toBe("extensions:\n  x:\n    a: 1\n");
    const flow = "extensions: {} # none yet\nother: 1\n";
    const added = yaml.insertEntry(flow, goose, "x", entry);
    expect(added).toBe("extensions: # none yet\n  x:\n    a: 1\nother: 1\n");
    expect(yaml.removeEntry(added, goose, "x")).toBe("extensions: {} # none yet\nother: 1\n");
  });

  test("list entries (Continue) are found by name, added after the last item, removed cleanly", () => {
    const text = `name: Local Config
version: 1.0.0
schema: v1
mcpServers:
  # the docs server
  - name: docs
    command: npx
    args:
      - -y
      - docs-mcp
models: []
`;
    const added = yaml.insertEntry(text, continueList, "fetch", {
      name: "fetch",
      type: "streamable-http",
      url: "http://127.0.0.1:8080/mcp",
    });
    expect(added).toBe(`name: Local Config
version: 1.0.0
schema: v1
mcpServers:
  # the docs server
  - name: docs
    command: npx
    args:
      - -y
      - docs-mcp
  - name: fetch
    type: streamable-http
    url: http://127.0.0.1:8080/mcp
models: []
`);
    expect([...yaml.entries(added, continueList).keys()]).toEqual(["docs", "fetch"]);
    const moved = yaml.setEntryKey(added, continueList, "fetch", "type", "sse");
    expect(moved).toBe(added.replace("type: streamable-http", "type: sse"));
    expect(yaml.removeEntry(moved, continueList, "fetch")).toBe(text);
    expect(yaml.removeEntry(yaml.removeEntry(added, continueList, "fetch"), continueList, "docs")).toBe(
      "name: Local Config\nversion: 1.0.0\nschema: v1\nmcpServers: []\n  # the docs server\nmodels: []\n",
    );
  });

  test("broken YAML, flow collections with entries and wrong types are refused", () => {
    expect(parseFailure(() => yaml.parse("a: [1,\nb: 2\n"))).toMatch(
      /^it is not valid YAML \(line \d+, column \d+: .+\)$/,
    );
    expect(parseFailure(() => yaml.insertEntry("extensions: {a: {b: 1}}\n", goose, "x", {}))).toContain("flow style");
    expect(parseFailure(() => yaml.entries("extensions: [1]\n", goose))).toBe('"extensions" is not a mapping');
    expect(parseFailure(() => yaml.parse("- a\n- b\n"))).toBe("its top level is not a mapping");
    // Valid YAML, but two documents: said in the user's terms, not the library's (no "use parseAllDocuments()").
    expect(parseFailure(() => yaml.parse("a: 1\n---\nb: 2\n"))).toBe(
      "it holds more than one YAML document (a second one starts with --- at line 2), where the client reads one",
    );
  });
});

describe("TOML", () => {
  const codex: ServerCollection = { kind: "map", path: ["mcp_servers"] };
  const seed = `# Codex settings
model = "gpt-5"   # the default model
approval_policy = "on-request"

[mcp_servers.docs] # my own server
command = "npx"
args = ["-y", "docs-mcp"]

[profiles.fast]
model = "gpt-5-mini"
`;

  test("a new server table goes next to the other servers; comments stay; removal restores the file", () => {
    const added = toml.insertEntry(seed, codex, "fetch", { url: "http://127.0.0.1:8080/mcp" });
    expect(added).toBe(`# Codex settings
model = "gpt-5"   # the default model
approval_policy = "on-request"

[mcp_servers.docs] # my own server
command = "npx"
args = ["-y", "docs-mcp"]

[mcp_servers.fetch]
url = "http://127.0.0.1:8080/mcp"

[profiles.fast]
model = "gpt-5-mini"
`);
    const moved = toml.setEntryKey(added, codex, "fetch", "url", "http://127.0.0.1:9090/mcp");
    expect(moved).toBe(added.replace("127.0.0.1:8080", "127.0.0.1:9090"));
    expect(toml.entries(moved, codex).get("fetch")).toEqual({ url: "http://127.0.0.1:9090/mcp" });
    expect(toml.removeEntry(moved, codex, "fetch")).toBe(seed);
  });

  test("broken TOML and a non-table mcp_servers are refused in one line", () => {
    expect(parseFailure(() => toml.parse('model = "gpt-5\n'))).toMatch(
      /^it is not valid TOML \(line 1, column \d+: .+\)$/,
    );
    expect(parseFailure(() => toml.insertEntry('mcp_servers = "none"\n', codex, "x", { url: "u" }))).toBe(
      '"mcp_servers" is not a table',
    );
  });
});
