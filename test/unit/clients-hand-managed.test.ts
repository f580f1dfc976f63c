/**
 * Client files a user manages by hand (walk 3), on real files in a temporary HOME: valid but
 * unusual YAML and TOML (a document end marker, a flow-style top level, mixed line endings, a file
 * of comments only) is either edited with every byte outside mcpmgr's entry kept, or refused with
 * one warning and left exactly as it was; never turned into a file the client (or mcpmgr) can no
 * longer read. So is a file in another encoding. Dotfile managers' links (hard links, links into
 * a store nobody may write, loops), a shared group, and a client uninstalled while registered.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  linkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { clientById } from "../../src/clients/catalog.ts";
import { loadEditor } from "../../src/clients/formats/editor.ts";
import type { ClientConfigSync } from "../../src/clients/sync.ts";
import type { ClientId } from "../../src/clients/types.ts";
import { type ClientHome, clientSyncPerTest, localEndpoint } from "../support/client-home.ts";

setDefaultTimeout(60_000);

const fetch41001 = localEndpoint("fetch", 41001);

let h: ClientHome;
let sync: ClientConfigSync;
clientSyncPerTest((fresh) => ({ h, sync } = fresh));

function place(client: ClientId, text: string): string {
  const path = clientById(client).configPath(h.ctx);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  return path;
}

describe("YAML written by hand", () => {
  test("a document end marker (...) keeps the servers inside the document, where the client reads them", async () => {
    const seed =
      "---\n# Continue\nname: Local Config\nversion: 1.0.0\nschema: v1\nmodels: []\n...\n# notes after the document\n";
    const path = place("continue", seed);
    const [report] = await sync.registerClient("continue", "default", [fetch41001]);
    expect(report?.action).toBe("added");
    const text = readFileSync(path, "utf8");
    // One document (a second one makes Continue's parser, and mcpmgr's, refuse the file), holding the entry.
    expect(parseYaml(text).mcpServers).toEqual([{ name: "fetch", type: "streamable-http", url: fetch41001.url }]);
    expect(text.endsWith("...\n# notes after the document\n")).toBe(true);
    await sync.removeClient("continue");
    expect(readFileSync(path, "utf8")).toBe(seed);
    expect(h.warnings).toEqual([]);
  });

  test("a file whose top level is written in flow style (JSON is YAML too) is refused, and left as it is", async () => {
    const seeds: Record<"goose" | "continue", string> = {
      // The collection is there, empty: the block would go inside the braces.
      goose: '{"GOOSE_PROVIDER": "openai", "extensions": {}}\n',
      // No collection yet: a key after the closing brace.
      continue: "{name: Local Config, version: 1.0.0, schema: v1}\n",
    };
    for (const [client, seed] of Object.entries(seeds) as ["goose" | "continue", string][]) {
      const path = place(client, seed);
      const [report] = await sync.registerClient(client, "default", [fetch41001]);
      expect([client, report?.action]).toEqual([client, "skipped"]);
      expect(readFileSync(path, "utf8")).toBe(seed);
    }
    expect(h.warnings).toHaveLength(2);
    for (const warning of h.warnings) expect(warning).toContain("its top level is written in flow style");
  });

  test("an empty configuration written as {} (as a YAML library writes one) gets the servers in block style", async () => {
    const path = place("goose", "# goose settings\n{}\n");
    const [report] = await sync.registerClient("goose", "default", [fetch41001]);
    expect(report?.action).toBe("added");
    const text = readFileSync(path, "utf8");
    expect(text.startsWith("# goose settings\nextensions:\n")).toBe(true);
    expect(Object.keys(parseYaml(text).extensions)).toEqual(["fetch"]);
    expect(h.warnings).toEqual([]);
  });

  test("a key written twice (the clients' YAML readers refuse such a file) is refused with one line, the file untouched", async () => {
    const seeds: Record<"goose" | "continue", string> = {
      // mcpmgr put its entry into the first, which a lenient reader would not even read.
      continue:
        "name: Local Config\nversion: 1.0.0\nschema: v1\nmcpServers:\n  - name: docs\n    command: npx\nmcpServers: []\n",
      goose: "extensions:\n  developer:\n    enabled: true\nGOOSE_MODEL: o3\nextensions: {}\n",
    };
    for (const [client, seed] of Object.entries(seeds) as ["goose" | "continue", string][]) {
      const path = place(client, seed);
      const [report] = await sync.registerClient(client, "default", [fetch41001]);
      expect([client, report?.action]).toEqual([client, "skipped"]);
      expect(readFileSync(path, "utf8")).toBe(seed);
    }
    expect(h.warnings).toHaveLength(2);
    for (const warning of h.warnings)
      expect(warning).toMatch(
        /: it is not valid YAML \(line \d+, column 1: Map keys must be unique\); mcpmgr left it unchanged/,
      );
  });

  test("a mapping used as a key (valid YAML) is edited without the YAML library's warning on the terminal", async () => {
    const warnings: string[] = [];
    const listen = (warning: Error) => warnings.push(warning.message);
    process.on("warning", listen);
    try {
      const seed = "name: Local Config\nversion: 1.0.0\nschema: v1\n? [a, b]\n: pair\n";
      const path = place("continue", seed);
      await sync.registerClient("continue", "default", [fetch41001]);
      await sync.removeClient("continue");
      expect(readFileSync(path, "utf8")).toBe(seed);
      expect((await loadEditor("yaml")).parse(seed)).toMatchObject({ "[ a, b ]": "pair" });
      await Bun.sleep(0); // a process warning is emitted on the next tick
    } finally {
      process.off("warning", listen);
    }
    expect(warnings).toEqual([]);
    expect(h.warnings).toEqual([]);
  });
});

describe("TOML written by hand", () => {
  test("a Codex config.toml mixing line endings keeps every line's own ending, a multi-line string's too", async () => {
    // Mostly LF, with lines pasted from a Windows editor (and a CRLF inside a multi-line string).
    const seed = [
      '# Codex\nmodel = "o3"\r\n',
      'instructions = """\r\nBe brief.\nBe kind.\r\n"""\n\n',
      '[mcp_servers.mine]\r\ncommand = "npx"   # mine\nargs = ["-y", "foo"]\n\n',
      '[profiles.fast]\r\nmodel = "gpt-5"\n',
    ].join("");
    const path = place("codex", seed);
    const [report] = await sync.registerClient("codex", "default", [fetch41001]);
    expect(report?.action).toBe("added");
    const text = readFileSync(path, "utf8");
    // Every line of the seed as it was, mcpmgr's table in the file's usual ending (LF) before the next table.
    expect(text).toBe(
      seed.replace("[profiles.fast]", `[mcp_servers.fetch]\nurl = "${fetch41001.url}"\n\n[profiles.fast]`),
    );
    await sync.removeClient("codex");
    expect(readFileSync(path, "utf8")).toBe(seed);
    expect(h.warnings).toEqual([]);
  });
});

describe("TOML with nothing but comments", () => {
  test("a config.toml whose every line is commented out keeps them first: mcpmgr's tables go after them", async () => {
    const seed = '# model = "o3"\n# approval_policy = "never"\n\n# [profiles.fast]\n# model = "gpt-5"\n';
    const path = place("codex", seed);
    await sync.registerClient("codex", "default", [fetch41001]);
    // Uncommenting a line later keeps its meaning: it is not inside mcpmgr's table.
    // No `[mcp_servers]` parent header: TOML makes the parent table, and none is left behind.
    expect(readFileSync(path, "utf8")).toBe(`${seed}\n[mcp_servers.fetch]\nurl = "${fetch41001.url}"\n`);
    await sync.removeClient("codex");
    expect(readFileSync(path, "utf8")).toBe(seed);
    expect(h.warnings).toEqual([]);
  });
});

describe("a client uninstalled while registered", () => {
  test("its removed folder is not made again by the next start; registering it again writes it", async () => {
    const path = place("windsurf", '{\n  "mcpServers": {}\n}\n');
    const folder = dirname(path);
    await sync.registerClient("windsurf", "default", [fetch41001]);
    await sync.onWorkloadStopped({ name: "fetch" });
    // Windsurf uninstalled, its folder with it.
    rmSync(folder, { recursive: true });
    const [report] = await sync.onWorkloadStarted(fetch41001);
    expect(report?.action).toBe("skipped");
    expect(existsSync(folder)).toBe(false);
    expect(h.warnings).toEqual([expect.stringContaining("it looks uninstalled")]);
    expect(h.warnings[0]).toContain("'mcpmgr client remove windsurf'");
    expect((await sync.status()).find((status) => status.id === "windsurf")?.installed).toBe(false);

    // Asked for by name: written, folder and all.
    const [again] = await sync.registerClient("windsurf", "default", [fetch41001]);
    expect(again?.action).toBe("added");
    expect(JSON.parse(readFileSync(path, "utf8")).mcpServers.fetch).toEqual({ serverUrl: fetch41001.url });
  });

  test("a client registered before it is installed still gets the first workload that starts", async () => {
    await sync.registerClient("cursor", "default", []);
    const [report] = await sync.onWorkloadStarted(fetch41001);
    expect(report?.action).toBe("added");
    expect(h.warnings).toEqual([]);
  });
});

describe("files in another encoding than UTF-8", () => {
  test("a Latin-1 byte in a comment is never turned into U+FFFD: the file is left alone, byte for byte, with one warning", async () => {
    const seeds: Partial<Record<ClientId, Buffer>> = {
      codex: Buffer.from('# Caf\xe9 settings\nmodel = "o3"\n', "latin1"),
      vscode: Buffer.from('{\n  // r\xe9sum\xe9\n  "servers": {}\n}\n', "latin1"),
    };
    for (const [client, bytes] of Object.entries(seeds) as [ClientId, Buffer][]) {
      const path = clientById(client).configPath(h.ctx);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, bytes);
      const [report] = await sync.registerClient(client, "default", [fetch41001]);
      expect([client, report?.action]).toEqual([client, "skipped"]);
      expect(readFileSync(path).equals(bytes)).toBe(true);
      // No backup of a text that is not the file.
      expect(existsSync(join(h.ctx.paths.dataDir, "client-backups", client))).toBe(false);
    }
    expect(h.warnings).toEqual([
      expect.stringContaining("it is not UTF-8 text (line 1 holds a byte that is not"),
      expect.stringContaining("it is not UTF-8 text (line 2 holds a byte that is not"),
    ]);
  });

  // Said to be "another encoding, such as Latin-1?" (with its byte order mark), or a syntax error (without).
  test("a UTF-16 file is named as such and left alone, byte for byte", async () => {
    const json = '{\r\n  "servers": {}\r\n}\r\n';
    const path = clientById("vscode").configPath(h.ctx);
    mkdirSync(dirname(path), { recursive: true });
    for (const bytes of [
      Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(json, "utf16le")]),
      Buffer.from(json, "utf16le").swap16(),
    ]) {
      writeFileSync(path, bytes);
      const [report] = await sync.registerClient("vscode", "default", [fetch41001]);
      expect(report?.action).toBe("skipped");
      expect(readFileSync(path).equals(bytes)).toBe(true);
    }
    expect(h.warnings).toEqual([
      expect.stringContaining("it is UTF-16 text, not UTF-8"),
      expect.stringContaining("it is UTF-16 text, not UTF-8"),
    ]);
  });

  test("a byte order mark and characters beyond ASCII in UTF-8 are kept as they are", async () => {
    const seed = '\uFEFF{\n  // résumé ✓ 日本\n  "mcpServers": {}\n}\n';
    const path = place("cursor", seed);
    await sync.registerClient("cursor", "default", [fetch41001]);
    await sync.removeClient("cursor");
    expect(readFileSync(path, "utf8")).toBe(seed);
    expect(h.warnings).toEqual([]);
  });
});

/**
 * A folder nobody may write into, even root (who ignores permission bits): immutable, as a Nix
 * store's folders are read-only to everyone.
 */
function unwritable(dir: string): () => void {
  if (process.getuid?.() !== 0) {
    chmodSync(dir, 0o555);
    return () => chmodSync(dir, 0o755);
  }
  expect(Bun.spawnSync(["chattr", "+i", dir]).exitCode).toBe(0);
  return () => {
    Bun.spawnSync(["chattr", "-i", dir]);
  };
}

describe("links a dotfile manager made", () => {
  test("a hard-linked file is edited through its inode: the dotfiles folder's name sees every change", async () => {
    const kept = join(h.home, "dotfiles", "cursor-mcp.json");
    mkdirSync(dirname(kept), { recursive: true });
    const seed = '{\n  // mine\n  "mcpServers": {}\n}\n';
    writeFileSync(kept, seed);
    const path = clientById("cursor").configPath(h.ctx);
    mkdirSync(dirname(path), { recursive: true });
    linkSync(kept, path);
    const inode = statSync(kept).ino;
    await sync.registerClient("cursor", "default", [fetch41001]);
    expect([statSync(path).ino, statSync(path).nlink]).toEqual([inode, 2]);
    expect(JSON.parse(readFileSync(kept, "utf8").replace("// mine", "")).mcpServers.fetch).toEqual({
      url: fetch41001.url,
    });
    await sync.removeClient("cursor");
    expect(readFileSync(kept, "utf8")).toBe(seed);
    expect(statSync(path).ino).toBe(inode);
    expect(h.warnings).toEqual([]);
  });

  test("a hard-linked file the disk cannot take the new version of is put back as it was, never left cut or padded", () => {
    // A file size limit (ulimit -f, 4 KiB) stands in for a full disk: the write stops part way, as
    // it does on a full one, and the file must be the user's version again, byte for byte.
    const home = mkdtempSync(join(tmpdir(), "mcpmgr-client-full-"));
    try {
      const kept = join(home, "dotfiles", "cursor-mcp.json");
      mkdirSync(dirname(kept), { recursive: true });
      // 4,070 bytes: the entry takes it past the limit, the backup of it stays within.
      const seed = `{\n  // ${"n".repeat(4041)}\n  "mcpServers": {}\n}\n`;
      expect(seed.length).toBe(4070);
      writeFileSync(kept, seed);
      const path = join(home, ".cursor", "mcp.json");
      mkdirSync(dirname(path));
      linkSync(kept, path);
      const register = resolve(import.meta.dir, "../fixtures/clients-writer/register-once.ts");
      const edit = Bun.spawnSync(
        ["bash", "-c", 'ulimit -f 4; trap "" XFSZ; exec "$0" "$@"', process.execPath, register, home, "cursor"],
        { env: { PATH: process.env.PATH, BUN_RUNTIME_TRANSPILER_CACHE_PATH: "0" } },
      );
      expect(edit.exitCode).toBe(0);
      expect(JSON.parse(edit.stdout.toString()).action).toBe("skipped");
      expect(edit.stderr.toString()).toContain("cannot update it: EFBIG");
      expect(readFileSync(kept, "utf8")).toBe(seed);
      expect([statSync(path).ino, statSync(path).nlink]).toEqual([statSync(kept).ino, 2]);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  test("a link into a folder that cannot be written (a Nix store) is one warning saying so, naming where it links", async () => {
    const store = join(h.home, "store", "abc-home-manager-files");
    mkdirSync(store, { recursive: true });
    const target = join(store, "mcp.json");
    const seed = '{\n  "mcpServers": {}\n}\n';
    writeFileSync(target, seed);
    const link = clientById("cursor").configPath(h.ctx);
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(target, link);
    const restore = unwritable(store);
    try {
      const [report] = await sync.registerClient("cursor", "default", [fetch41001]);
      expect(report?.action).toBe("skipped");
    } finally {
      restore();
    }
    expect(readFileSync(target, "utf8")).toBe(seed);
    expect(h.warnings).toHaveLength(1);
    expect(h.warnings[0]).toContain(`it links to ${target}, and its folder ${store} cannot be written (`);
    expect(h.warnings[0]).toContain("mcpmgr left it unchanged (make that folder writable, or add the server where");
  });

  test("a file where the client's folder belongs is one warning naming it, not an errno", async () => {
    // A dotfiles script that wrote ~/.cursor as a file.
    writeFileSync(join(h.home, ".cursor"), "notes\n");
    const [report] = await sync.registerClient("cursor", "default", [fetch41001]);
    expect(report?.action).toBe("skipped");
    expect(h.warnings).toEqual([
      expect.stringContaining(`${join(h.home, ".cursor")} is a file where a folder on the way to it belongs`),
    ]);
    expect(readFileSync(join(h.home, ".cursor"), "utf8")).toBe("notes\n");
  });

  test("a loop of links is one warning naming it, not an errno", async () => {
    const link = clientById("gemini-cli").configPath(h.ctx);
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync("other.json", link);
    symlinkSync("settings.json", join(dirname(link), "other.json"));
    const [report] = await sync.registerClient("gemini-cli", "default", [fetch41001]);
    expect(report?.action).toBe("skipped");
    expect(h.warnings).toEqual([expect.stringContaining(`its symlinks form a loop (${link} leads back to itself)`)]);
  });
});

describe("ownership", () => {
  const EDIT = resolve(import.meta.dir, "../fixtures/clients-writer/register-once.ts");

  test("a user's file shared through one of their groups stays in that group, not the user's primary one", () => {
    // A user (nobody, uid 65534, primary group 65534) who is also in group 100, as root makes them here.
    const home = mkdtempSync(join(tmpdir(), "mcpmgr-client-group-"));
    try {
      chmodSync(home, 0o755);
      const path = join(home, ".cursor", "mcp.json");
      mkdirSync(dirname(path));
      writeFileSync(path, '{\n  "mcpServers": {}\n}\n');
      for (const file of [home, dirname(path), path]) chownSync(file, 65534, 65534);
      chownSync(path, 65534, 100);
      chmodSync(path, 0o660);
      const asUser =
        process.getuid?.() === 0 ? ["setpriv", "--reuid=65534", "--regid=65534", "--groups=100", "--"] : [];
      const edit = Bun.spawnSync([...asUser, process.execPath, EDIT, home, "cursor"], {
        env: { PATH: process.env.PATH },
      });
      expect([edit.exitCode, edit.stderr.toString()]).toEqual([0, ""]);
      expect(JSON.parse(edit.stdout.toString()).action).toBe("added");
      const after = statSync(path);
      expect([after.uid, after.gid, after.mode & 0o777]).toEqual([65534, 100, 0o660]);
      expect(JSON.parse(readFileSync(path, "utf8")).mcpServers.cw.url).toBe("http://127.0.0.1:41001/mcp");
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
