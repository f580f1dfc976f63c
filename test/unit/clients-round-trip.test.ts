/**
 * Round trips through a client's file (walk 4), on real files in a temporary HOME written the way
 * each client (or its user) writes them: a workload's entry added and removed again leaves the file
 * byte for byte as it was, the user's comments where they were while the entry is there; a
 * collection mcpmgr created goes with its last entry; a server name a file holds twice is left to
 * the user.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { clientById } from "../../src/clients/catalog.ts";
import { loadEditor } from "../../src/clients/formats/editor.ts";
import type { ClientConfigSync } from "../../src/clients/sync.ts";
import type { ClientId } from "../../src/clients/types.ts";
import { type ClientHome, clientSyncPerTest, localEndpoint } from "../support/client-home.ts";

setDefaultTimeout(60_000);

const fetch41001 = localEndpoint("fetch", 41001);
const docs41002 = localEndpoint("docs", 41002);

let h: ClientHome;
let sync: ClientConfigSync;
clientSyncPerTest((fresh) => ({ h, sync } = fresh));

function place(client: ClientId, text: string): string {
  const path = clientById(client).configPath(h.ctx);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  return path;
}

const fetchTable = `[mcp_servers.fetch]\nurl = "${fetch41001.url}"\n`;

describe("Codex config.toml: comments after the last server table", () => {
  test("a server's commented-out key stays in that server's table, a heading stays above its table", async () => {
    const seed = [
      'model = "gpt-5-codex"\n\n',
      '[mcp_servers.context7]\ncommand = "npx"\nargs = ["-y", "@upstash/context7-mcp"]\n',
      "# enabled = false   # back on when the quota resets\n\n",
      '# Projects I trust\n[projects."/home/me/app"]\ntrust_level = "trusted"\n',
    ].join("");
    const path = place("codex", seed);
    await sync.registerClient("codex", "default", [fetch41001]);
    // Uncommenting `enabled` still turns context7 off, not mcpmgr's server.
    expect(readFileSync(path, "utf8")).toBe(
      seed.replace("\n\n# Projects I trust", `\n\n${fetchTable}\n# Projects I trust`),
    );
    await sync.removeClient("codex");
    expect(readFileSync(path, "utf8")).toBe(seed);
    expect(h.warnings).toEqual([]);
  });

  test("a sub-table the user gave mcpmgr's server further down goes with it, and the comments above its table stay", async () => {
    const seed = [
      'model = "o3"\n\n',
      '[mcp_servers.context7]\ncommand = "npx"\n# enabled = false   # back on when the quota resets\n\n',
    ].join("");
    const tail = '\n# Projects I trust\n[projects."/home/me/app"]\ntrust_level = "trusted"\n';
    const path = place("codex", seed + tail);
    await sync.registerClient("codex", "default", [fetch41001]);
    // The user gives mcpmgr's server a header of their own, at the end of the file.
    const headers = '\n[mcp_servers.fetch.http_headers]\nX-Team = "blue"\n';
    writeFileSync(path, readFileSync(path, "utf8") + headers);
    await sync.removeClient("codex");
    // The commented-out key of context7 (toml_edit's decor of mcpmgr's table) is still there.
    expect(readFileSync(path, "utf8")).toBe(seed + tail);
  });

  test("a commented-out setting at the end of the top level stays outside mcpmgr's table, and no [mcp_servers] is left", async () => {
    const seed = 'model = "o3"\n# approval_policy = "never"\n';
    const path = place("codex", seed);
    await sync.registerClient("codex", "default", [fetch41001]);
    const added = readFileSync(path, "utf8");
    expect(added).toBe(`${seed}\n${fetchTable}`);
    // The line uncommented is a top-level setting again, as the user meant it.
    const toml = await loadEditor("toml");
    expect(toml.valueAt(added.replace("# approval", "approval"), ["approval_policy"])).toBe("never");
    await sync.removeClient("codex");
    expect(readFileSync(path, "utf8")).toBe(seed);
  });

  test("notes at the end of the file stay above mcpmgr's tables; removing them in either order restores the file", async () => {
    const seed = [
      'model = "gpt-5-codex"\r\n\r\n',
      '[mcp_servers.context7]\r\ncommand = "npx"\r\n',
      '# [mcp_servers.github]\r\n# command = "github-mcp"\r\n\r\n',
      "# keep this: notes about my setup",
    ].join("");
    const path = place("codex", seed);
    await sync.registerClient("codex", "default", [fetch41001, docs41002]);
    expect(readFileSync(path, "utf8")).toBe(
      `${seed}\r\n\r\n${fetchTable}\r\n[mcp_servers.docs]\r\nurl = "${docs41002.url}"`.replaceAll(/(?<!\r)\n/g, "\r\n"),
    );
    await sync.onWorkloadStopped({ name: "fetch" });
    await sync.onWorkloadStopped({ name: "docs" });
    expect(readFileSync(path, "utf8")).toBe(seed);
  });

  test("a comment the user writes above mcpmgr's table is theirs: it stays when the table goes", async () => {
    const seed = 'model = "o3"\n';
    const path = place("codex", seed);
    await sync.registerClient("codex", "default", [fetch41001]);
    const annotated = readFileSync(path, "utf8").replace(
      "[mcp_servers.fetch]",
      "# served by mcpmgr\n[mcp_servers.fetch]",
    );
    writeFileSync(path, annotated);
    await sync.removeClient("codex");
    expect(readFileSync(path, "utf8")).toBe(`${seed}\n# served by mcpmgr\n`);
  });
});

describe("a collection mcpmgr created goes with its last entry; one the user had stays as they wrote it", () => {
  const continueSeed = [
    "name: Local Config\nversion: 1.0.0\nschema: v1\n",
    "models:\n  - name: Claude   # the chat model\n    provider: anthropic\n    model: claude-sonnet-4-5\n",
  ].join("");

  test("Continue's config.yaml without mcpServers: no `mcpServers: []` is left behind, whichever entry goes last", async () => {
    const path = place("continue", continueSeed);
    await sync.registerClient("continue", "default", [fetch41001, docs41002]);
    expect(readFileSync(path, "utf8")).toBe(
      `${continueSeed}mcpServers:\n  - name: fetch\n    type: streamable-http\n    url: ${fetch41001.url}\n` +
        `  - name: docs\n    type: streamable-http\n    url: ${docs41002.url}\n`,
    );
    await sync.onWorkloadStopped({ name: "fetch" });
    await sync.onWorkloadStopped({ name: "docs" });
    expect(readFileSync(path, "utf8")).toBe(continueSeed);
    // Again, the other way round: the record of who made the key passes from entry to entry.
    await sync.registerClient("continue", "default", [fetch41001, docs41002]);
    await sync.onWorkloadStopped({ name: "docs" });
    await sync.removeClient("continue");
    expect(readFileSync(path, "utf8")).toBe(continueSeed);
    expect(h.warnings).toEqual([]);
  });

  test("Goose's config.yaml without extensions gets none back (CRLF kept)", async () => {
    const seed = "# goose configure wrote this\r\nGOOSE_PROVIDER: anthropic\r\nGOOSE_MODEL: claude-sonnet-4-5\r\n";
    const path = place("goose", seed);
    await sync.registerClient("goose", "default", [fetch41001]);
    expect(readFileSync(path, "utf8")).toStartWith(`${seed}extensions:\r\n  fetch:\r\n`);
    await sync.removeClient("goose");
    expect(readFileSync(path, "utf8")).toBe(seed);
  });

  test("a key the user had stays, written as it was: `mcpServers:`, `mcpServers: ~`, `extensions: {}  # none yet`", async () => {
    for (const [client, seed] of [
      ["continue", `${continueSeed}mcpServers:\n`],
      ["continue", `${continueSeed}mcpServers: ~\nrules:\n  - Be brief\n`],
      ["goose", "GOOSE_PROVIDER: anthropic\nextensions: {}  # none yet\n"],
    ] as const) {
      const path = place(client, seed);
      await sync.registerClient(client, "default", [fetch41001]);
      expect(readFileSync(path, "utf8")).toContain("fetch");
      await sync.removeClient(client);
      expect([client, readFileSync(path, "utf8")]).toEqual([client, seed]);
    }
  });

  test("a file whose only key it was keeps it: an empty YAML file is no mapping (Goose's `{}` becomes a block)", async () => {
    const path = place("goose", "{}\n");
    await sync.registerClient("goose", "default", [fetch41001]);
    await sync.removeClient("goose");
    expect(readFileSync(path, "utf8")).toBe("extensions: {}\n");
  });

  test("a comment the user put into the collection mcpmgr made stays, and so does the key above it", async () => {
    const path = place("continue", continueSeed);
    await sync.registerClient("continue", "default", [fetch41001]);
    const annotated = readFileSync(path, "utf8").replace("  - name: fetch", "  # my servers go here\n  - name: fetch");
    writeFileSync(path, annotated);
    await sync.removeClient("continue");
    expect(readFileSync(path, "utf8")).toBe(`${continueSeed}mcpServers: []\n  # my servers go here\n`);
  });

  test("a JSON file's servers object mcpmgr added goes too, with the file's own layout (`{\\n}` stays so)", async () => {
    for (const [client, seed] of [
      ["gemini-cli", '{\n  "theme": "GitHub",\n  "selectedAuthType": "gemini-api-key"\n}\n'],
      ["cursor", "{\n}\n"],
      ["vscode", '// my MCP servers\n{\n  "inputs": [],\n}\n'],
    ] as const) {
      const path = place(client, seed);
      await sync.registerClient(client, "default", [fetch41001]);
      await sync.removeClient(client);
      expect([client, readFileSync(path, "utf8")]).toEqual([client, seed]);
    }
  });

  test("braces around nothing but a comment on one line come back as written, with the comment where it was", async () => {
    for (const [client, seed] of [
      ["cursor", '{"mcpServers": {/* none yet */}}\n'],
      ["vscode", '{\n  "servers": { /* none yet */ },\n  "inputs": []\n}\n'],
      ["gemini-cli", "{/* my settings */}\n"],
    ] as const) {
      const path = place(client, seed);
      await sync.registerClient(client, "default", [fetch41001]);
      expect(readFileSync(path, "utf8")).toContain(fetch41001.url);
      await sync.removeClient(client);
      expect([client, readFileSync(path, "utf8")]).toEqual([client, seed]);
    }
    expect(h.warnings).toEqual([]);
  });
});

describe("an empty file mcpmgr's entries filled", () => {
  const note: Partial<Record<ClientId, string>> = {
    cursor: "// my servers, pinned\n",
    vscode: "// my servers, pinned\n",
    continue: "# my servers, pinned\n",
    goose: "# my servers, pinned\n",
    codex: "# my servers, pinned\n",
  };

  test("is empty again when the last entry goes, in either order; a comment written into it since stays", async () => {
    for (const [client, comment] of Object.entries(note) as [ClientId, string][]) {
      for (const [first, second] of [
        ["fetch", "docs"],
        ["docs", "fetch"],
      ]) {
        const path = place(client, "");
        await sync.registerClient(client, "default", [fetch41001, docs41002]);
        await sync.onWorkloadStopped({ name: first as string });
        await sync.onWorkloadStopped({ name: second as string });
        expect([client, first, readFileSync(path, "utf8")]).toEqual([client, first, ""]);
        await sync.removeClient(client);
      }
      const path = place(client, "");
      await sync.registerClient(client, "default", [fetch41001]);
      writeFileSync(path, comment + readFileSync(path, "utf8"));
      await sync.onWorkloadStopped({ name: "fetch" });
      const left = readFileSync(path, "utf8");
      expect([client, left.startsWith(comment), left.includes("fetch")]).toEqual([client, true, false]);
      await sync.removeClient(client);
    }
    expect(h.warnings).toEqual([]);
  });
});

describe("Continue: a server name the list holds twice", () => {
  const header = "name: Local Config\nversion: 1.0.0\nschema: v1\nmcpServers:\n";
  const mine = "  - name: fetch   # my own, from Continue's docs\n    command: uvx\n    args: [mcp-server-fetch]\n";
  const ours = (url: string) => `  - name: fetch\n    type: streamable-http\n    url: ${url}\n`;
  const fetch41002 = localEndpoint("fetch", 41002);

  test("mcpmgr never adds a second one: a server of yours with the workload's name is left alone, with a warning", async () => {
    const seed = header + mine;
    const path = place("continue", seed);
    const [report] = await sync.registerClient("continue", "default", [fetch41001]);
    expect(report?.action).toBe("skipped");
    expect(readFileSync(path, "utf8")).toBe(seed);
    expect(h.warnings).toEqual([
      `Continue (${path}): it already has a server named fetch that mcpmgr did not write; mcpmgr leaves it alone (rename one of them)`,
    ]);
  });

  for (const [where, arrange] of [
    ["above", (ourEntry: string) => mine + ourEntry],
    ["below", (ourEntry: string) => ourEntry + mine],
  ] as const) {
    test(`yours ${where} mcpmgr's: only mcpmgr's follows the workload and goes, yours stays byte for byte`, async () => {
      const path = place("continue", header);
      await sync.registerClient("continue", "default", [fetch41001]);
      writeFileSync(path, header + arrange(ours(fetch41001.url)));
      expect((await sync.onWorkloadStarted(fetch41002))[0]?.action).toBe("updated");
      expect(readFileSync(path, "utf8")).toBe(header + arrange(ours(fetch41002.url)));
      expect((await sync.onWorkloadStopped({ name: "fetch" }))[0]?.action).toBe("removed");
      expect(readFileSync(path, "utf8")).toBe(header + mine);
      expect(h.warnings).toHaveLength(2);
      expect(h.warnings[0]).toBe(
        `Continue (${path}): it has 2 servers named fetch: mcpmgr keeps its own in step and leaves the other alone (rename yours; the client may show both or only one)`,
      );
    });
  }

  test("two copies of mcpmgr's entry cannot be told apart: both stay, with a warning, until one is gone", async () => {
    const path = place("continue", header);
    await sync.registerClient("continue", "default", [fetch41001]);
    const copied = header + ours(fetch41001.url) + ours(fetch41001.url);
    writeFileSync(path, copied);
    const [report] = await sync.onWorkloadStopped({ name: "fetch" });
    expect(report?.action).toBe("skipped");
    expect(readFileSync(path, "utf8")).toBe(copied);
    expect(h.warnings[0]).toContain(
      "it has 2 servers named fetch, 2 of them as mcpmgr wrote its own; mcpmgr leaves them all alone",
    );
    // The record stays: once the user removed a copy, the next change takes the other one out.
    writeFileSync(path, header + ours(fetch41001.url));
    await sync.removeClient("continue");
    expect(readFileSync(path, "utf8")).toBe(header);
  });
});

describe("a file without a final line break", () => {
  test("keeps none through a workload's start, its move to another port and its stop (YAML and TOML)", async () => {
    const seeds = {
      continue: "name: Local Config\nversion: 1.0.0\nschema: v1\nmcpServers:\n  - name: SQLite\n    command: npx",
      goose: "GOOSE_PROVIDER: anthropic\r\nextensions:\r\n  developer:\r\n    enabled: true\r\n    type: builtin",
      codex: 'model = "o3"\n\n[mcp_servers.context7]\ncommand = "npx"',
    } as const;
    for (const [client, seed] of Object.entries(seeds) as [ClientId, string][]) {
      const path = place(client, seed);
      await sync.registerClient(client, "default", [fetch41001]);
      expect([client, readFileSync(path, "utf8").endsWith("\n")]).toEqual([client, false]);
      await sync.onWorkloadStarted(localEndpoint("fetch", 41002));
      await sync.onWorkloadStopped({ name: "fetch" });
      expect([client, readFileSync(path, "utf8")]).toEqual([client, seed]);
    }
    expect(h.warnings).toEqual([]);
  });
});

describe("Codex config.toml with its servers in an inline table", () => {
  test("mcpmgr's entry follows the workload to another port (toml_edit cannot reach into it by key), then goes", async () => {
    const seed = 'model = "o3"\nmcp_servers = { docs = { command = "docs-mcp" } }\n';
    const path = place("codex", seed);
    await sync.registerClient("codex", "default", [fetch41001]);
    const moved = await sync.onWorkloadStarted(localEndpoint("fetch", 41002));
    expect(moved[0]?.action).toBe("updated");
    const toml = await loadEditor("toml");
    expect(toml.valueAt(readFileSync(path, "utf8"), ["mcp_servers"])).toEqual({
      docs: { command: "docs-mcp" },
      fetch: { url: "http://127.0.0.1:41002/mcp" },
    });
    await sync.onWorkloadStopped({ name: "fetch" });
    expect(readFileSync(path, "utf8")).toBe(seed);
    expect(h.warnings).toEqual([]);
  });
});

describe("JSON: a server name an object holds twice", () => {
  test("Cursor's mcp.json with the user's own fetch after mcpmgr's: only mcpmgr's follows the workload and goes", async () => {
    const path = place("cursor", '{\n  "mcpServers": {}\n}\n');
    await sync.registerClient("cursor", "default", [fetch41001]);
    const mine = '    "fetch": { "command": "uvx", "args": ["mcp-server-fetch"] }\n';
    const ours = (url: string) => `    "fetch": {\n      "url": "${url}"\n    },\n`;
    const withMine = (url: string) => `{\n  "mcpServers": {\n${ours(url)}${mine}  }\n}\n`;
    writeFileSync(path, withMine(fetch41001.url));
    expect((await sync.onWorkloadStarted(localEndpoint("fetch", 41002)))[0]?.action).toBe("updated");
    expect(readFileSync(path, "utf8")).toBe(withMine("http://127.0.0.1:41002/mcp"));
    expect((await sync.onWorkloadStopped({ name: "fetch" }))[0]?.action).toBe("removed");
    expect(readFileSync(path, "utf8")).toBe(`{\n  "mcpServers": {\n${mine}  }\n}\n`);
    expect(h.warnings[0]).toContain("it has 2 servers named fetch: mcpmgr keeps its own in step");
  });
});
