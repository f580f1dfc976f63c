/**
 * AI-client configuration following workloads, for every supported client, on real files in a
 * temporary HOME: the exact file after a workload starts, after it moves to another port,
 * and after it stops (the user's file back byte for byte), starting from a realistic file
 * with comments and the user's own servers. Then the safety rules: foreign and hand-edited
 * entries are never touched, a file that does not parse is left alone with one warning, the
 * file keeps its permissions, the first version is backed up once, symlinks stay symlinks.
 */
import { describe, expect, test, setDefaultTimeout } from "bun:test";
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { allClients, clientById } from "../../src/clients/catalog.ts";
import { ClientConfigSync } from "../../src/clients/sync.ts";
import { CLIENT_IDS, type ClientId, type WorkloadEndpoint } from "../../src/clients/types.ts";
import { ClientRegistrationStore } from "../../src/state/client-registrations.ts";
import { GroupStore } from "../../src/state/groups.ts";
import {
  type ClientHome,
  clientSyncPerTest,
  fixtureFile,
  localEndpoint,
  makeClientHome,
} from "../support/client-home.ts";
import { rejection } from "../support/errors.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const fetch41001 = localEndpoint("fetch", 41001);
const fetch41002: WorkloadEndpoint = { ...fetch41001, url: "http://127.0.0.1:41002/mcp" };

let h: ClientHome;
let sync: ClientConfigSync;
clientSyncPerTest((fresh) => ({ h, sync } = fresh));

describe.each(CLIENT_IDS.map((id) => [id]))("%s", (client: ClientId) => {
  test("a started workload is added, follows a new URL, and goes on stop; everything else stays byte for byte", async () => {
    const path = h.seed(client);
    const seed = readFileSync(path, "utf8");
    const added = fixtureFile("expected", client);
    const reports = await sync.registerClient(client, "default", [fetch41001]);
    expect(reports).toEqual([{ client, workload: "fetch", file: path, action: "added" }]);
    expect(h.read(client)).toBe(added);

    const moved = await sync.onWorkloadStarted(fetch41002);
    // Claude Desktop's entry names the workload, not its URL: nothing to change.
    expect(moved[0]?.action).toBe(client === "claude-desktop" ? "unchanged" : "updated");
    expect(h.read(client)).toBe(client === "claude-desktop" ? added : added.replace(":41001/", ":41002/"));

    expect((await sync.onWorkloadStopped({ name: "fetch" }))[0]?.action).toBe("removed");
    const after = h.read(client);
    // Gemini CLI's seed had no mcpServers at all: the collection mcpmgr made goes with its last entry.
    expect(after).toBe(seed);
    expect(h.warnings).toEqual([]);
  });

  test("a client without a configuration file gets a new one holding only the entry, and nothing else", async () => {
    await sync.registerClient(client, "default", []);
    expect(existsSync(clientById(client).configPath(h.ctx))).toBe(false);
    await sync.onWorkloadStarted(fetch41001);
    const text = h.read(client);
    const definition = clientById(client);
    const { value } = definition.entry(fetch41001, h.ctx);
    const { loadEditor } = await import("../../src/clients/formats/editor.ts");
    const editor = await loadEditor(definition.format);
    const collection = definition.collection((path) => editor.valueAt(text, path));
    expect([...editor.entries(text, collection).entries()]).toEqual([["fetch", value]]);
    expect((statSync(definition.configPath(h.ctx)).mode & 0o777).toString(8)).toBe("600");
  });
});

describe("entries mcpmgr did not write", () => {
  test("a foreign entry with the workload's name is left alone, with a warning, and is not removed on stop", async () => {
    const path = h.seed("cursor");
    const foreign = readFileSync(path, "utf8").replace('"browser"', '"fetch"');
    writeFileSync(path, foreign);
    const [report] = await sync.registerClient("cursor", "default", [fetch41001]);
    expect(report?.action).toBe("skipped");
    expect(h.warnings).toHaveLength(1);
    expect(h.warnings[0]).toContain("already has a server named fetch that mcpmgr did not write");
    expect(h.warnings[0]).toContain(path);
    await sync.onWorkloadStopped({ name: "fetch" });
    expect(readFileSync(path, "utf8")).toBe(foreign);
  });

  test("an entry changed by hand is no longer mcpmgr's: not updated, not removed", async () => {
    h.seed("windsurf");
    await sync.registerClient("windsurf", "default", [fetch41001]);
    const edited = h.read("windsurf").replace("http://127.0.0.1:41001/mcp", "http://my-proxy:9000/mcp");
    writeFileSync(clientById("windsurf").configPath(h.ctx), edited);
    const [report] = await sync.onWorkloadStarted(fetch41002);
    expect(report?.action).toBe("skipped");
    expect(h.warnings[0]).toContain("changed by hand");
    await sync.onWorkloadStopped({ name: "fetch" });
    expect(h.read("windsurf")).toBe(edited);
    expect((await sync.status()).find((row) => row.id === "windsurf")?.entries).toEqual([]);
  });

  test("keys a client adds to mcpmgr's entry (Cline's autoApprove, disabled) survive a URL change", async () => {
    await sync.registerClient("cline", "default", [fetch41001]);
    const path = clientById("cline").configPath(h.ctx);
    const toggled = h
      .read("cline")
      .replace('"url": "http://127.0.0.1:41001/mcp"', '"url": "http://127.0.0.1:41001/mcp",\n      "disabled": true');
    writeFileSync(path, toggled);
    await sync.onWorkloadStarted(fetch41002);
    expect(h.read("cline")).toBe(toggled.replace(":41001/", ":41002/"));
    expect(h.warnings).toEqual([]);
  });
});

describe("files mcpmgr cannot read", () => {
  test("a file that does not parse is left exactly as it is, with one warning and no backup; once fixed, it is updated", async () => {
    const path = h.seed("vscode");
    const broken = readFileSync(path, "utf8").replace('"type": "http",', '"type": "http",,');
    writeFileSync(path, broken);
    const [report] = await sync.registerClient("vscode", "default", [fetch41001]);
    expect(report?.action).toBe("skipped");
    expect(readFileSync(path, "utf8")).toBe(broken);
    expect(h.warnings).toHaveLength(1);
    expect(h.warnings[0]).toMatch(
      /^VS Code \(.+mcp\.json\): it is not valid JSON with comments \(line 9, column 22: property name expected\); mcpmgr left it unchanged/,
    );
    expect(existsSync(join(h.ctx.paths.dataDir, "client-backups", "vscode", "mcp.json"))).toBe(false);

    writeFileSync(path, fixtureFile("seed", "vscode"));
    await sync.onWorkloadStarted(fetch41001);
    expect(h.read("vscode")).toBe(fixtureFile("expected", "vscode"));
  });

  test("servers kept somewhere unexpected (a list where an object belongs) are refused, the file untouched", async () => {
    const path = clientById("lm-studio").configPath(h.ctx);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, '{"mcpServers": []}\n');
    await sync.registerClient("lm-studio", "default", [fetch41001]);
    expect(readFileSync(path, "utf8")).toBe('{"mcpServers": []}\n');
    expect(h.warnings[0]).toContain('"mcpServers" is not an object');
  });

  test.each([["5"], ["null"], ['"x"'], ["[]"]])(
    "opencode's mcp.servers that is %s is refused with one warning, the file untouched (not written in the opencode 1 layout beside it)",
    async (servers) => {
      const path = clientById("opencode").configPath(h.ctx);
      mkdirSync(dirname(path), { recursive: true });
      const text = `{"mcp": {"servers": ${servers}}}\n`;
      writeFileSync(path, text);
      await sync.registerClient("opencode", "default", [fetch41001]);
      expect(readFileSync(path, "utf8")).toBe(text);
      expect(h.warnings).toHaveLength(1);
      expect(h.warnings[0]).toContain("servers");
    },
  );

  test.each(CLIENT_IDS.map((id) => [id]))(
    "%s: an empty (0-byte) file is taken as an empty configuration, and is empty again once the last entry goes",
    async (client) => {
      const path = clientById(client as ClientId).configPath(h.ctx);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, "");
      await sync.registerClient(client as ClientId, "default", [fetch41001]);
      expect(h.warnings).toEqual([]);
      expect(readFileSync(path, "utf8")).toContain(client === "claude-desktop" ? '"fetch"' : fetch41001.url);
      await sync.onWorkloadStopped({ name: "fetch" });
      expect(readFileSync(path, "utf8")).toBe("");
    },
  );

  test("a file nested far too deep is refused like a broken one: the other clients are still updated, the file untouched", async () => {
    const path = clientById("cursor").configPath(h.ctx);
    mkdirSync(dirname(path), { recursive: true });
    const bomb = `${"[".repeat(200_000)}${"]".repeat(200_000)}\n`;
    writeFileSync(path, bomb);
    h.seed("vscode");
    await sync.registerClient("cursor", "default", []);
    await sync.registerClient("vscode", "default", []);
    const reports = await sync.onWorkloadStarted(fetch41001);
    expect(reports.map((report) => [report.client, report.action])).toEqual([
      ["cursor", "skipped"],
      ["vscode", "added"],
    ]);
    expect(h.read("vscode")).toBe(fixtureFile("expected", "vscode"));
    expect(readFileSync(path, "utf8")).toBe(bomb);
    expect(h.warnings).toHaveLength(1);
    expect(h.warnings[0]).toMatch(
      /^Cursor \(.+mcp\.json\): it nests arrays and objects deeper than 512 levels \(line 1, column 513\).*; mcpmgr left it unchanged/,
    );
  });

  test("a file nested too deep after mcpmgr wrote its entry: removing the client warns, and does not fail", async () => {
    const path = h.seed("cursor");
    await sync.registerClient("cursor", "default", [fetch41001]);
    const bomb = `{"mcpServers": ${"[".repeat(100_000)}${"]".repeat(100_000)}}`;
    writeFileSync(path, bomb);
    const [report] = await sync.removeClient("cursor");
    expect(report?.action).toBe("skipped");
    expect(readFileSync(path, "utf8")).toBe(bomb);
    expect(h.warnings).toEqual([expect.stringContaining("deeper than 512 levels")]);
  });

  test("brackets in comments and strings do not count as nesting", async () => {
    const path = h.seed("vscode");
    const seed = readFileSync(path, "utf8");
    const noisy = `// ${"[".repeat(2_000)}\n${seed.replace("{", `{\n  "note": "${"{".repeat(2_000)}",`)}`;
    writeFileSync(path, noisy);
    const [report] = await sync.registerClient("vscode", "default", [fetch41001]);
    expect(report?.action).toBe("added");
    expect(h.warnings).toEqual([]);
  });

  test("a named pipe or a folder where the file belongs is refused at once, with one warning; other clients are updated", async () => {
    const pipe = clientById("cursor").configPath(h.ctx);
    mkdirSync(dirname(pipe), { recursive: true });
    // Reading a named pipe waits for a writer: the edit must not wait with it.
    expect(Bun.spawnSync(["mkfifo", pipe]).exitCode).toBe(0);
    const folder = clientById("lm-studio").configPath(h.ctx);
    mkdirSync(folder, { recursive: true });
    h.seed("vscode");
    for (const client of ["cursor", "lm-studio", "vscode"] as const) await sync.registerClient(client, "default", []);
    const reports = await Promise.race([
      sync.onWorkloadStarted(fetch41001),
      Bun.sleep(10_000).then(() => "still waiting" as const),
    ]);
    if (reports === "still waiting") throw new Error("the edit waited for the named pipe");
    expect(reports.map((report) => [report.client, report.action])).toEqual([
      ["cursor", "skipped"],
      ["lm-studio", "skipped"],
      ["vscode", "added"],
    ]);
    expect(lstatSync(pipe).isFIFO()).toBe(true);
    expect(lstatSync(folder).isDirectory()).toBe(true);
    expect(h.warnings).toEqual([
      expect.stringMatching(/^Cursor \(.+\): it is a named pipe, not a regular file; mcpmgr left it unchanged$/),
      expect.stringMatching(/^LM Studio \(.+\): it is a directory, not a regular file; mcpmgr left it unchanged$/),
    ]);
  });

  test("Continue's old config.json is never shadowed by a new config.yaml", async () => {
    const dir = join(h.home, ".continue");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "config.json"), '{"models": []}\n');
    const [report] = await sync.registerClient("continue", "default", [fetch41001]);
    expect(report?.action).toBe("skipped");
    expect(existsSync(join(dir, "config.yaml"))).toBe(false);
    expect(h.warnings[0]).toContain("config.json is Continue's old configuration format");
  });
});

describe("writing other programs' files", () => {
  test("an empty collection written over several lines keeps its form after an add and a remove (review 9 F10)", async () => {
    const path = clientById("opencode").configPath(h.ctx);
    mkdirSync(dirname(path), { recursive: true });
    const multiLine = `{\n  "$schema": "https://opencode.ai/config.json",\n  "mcp": {\n  }\n}\n`;
    writeFileSync(path, multiLine);
    await sync.registerClient("opencode", "default", [fetch41001]);
    expect(h.read("opencode")).toContain(`"fetch": {`);
    await sync.onWorkloadStopped({ name: "fetch" });
    expect(h.read("opencode")).toBe(multiLine);

    // Two entries, taken out in the order they did not go in: the form goes with the last one.
    const search: WorkloadEndpoint = { ...fetch41001, name: "search", url: "http://127.0.0.1:41011/mcp" };
    await sync.onWorkloadStarted(fetch41001);
    await sync.onWorkloadStarted(search);
    await sync.onWorkloadStopped({ name: "fetch" });
    await sync.onWorkloadStopped({ name: "search" });
    expect(h.read("opencode")).toBe(multiLine);

    // `{}` stays `{}`.
    const compact = multiLine.replace("{\n  }", "{}");
    writeFileSync(path, compact);
    await sync.onWorkloadStarted(fetch41001);
    await sync.onWorkloadStopped({ name: "fetch" });
    expect(h.read("opencode")).toBe(compact);
    expect(h.warnings).toEqual([]);
  });

  test("the file keeps its permission bits, and the first version is backed up once", async () => {
    const path = h.seed("claude-code");
    chmodSync(path, 0o640);
    await sync.registerClient("claude-code", "default", [fetch41001]);
    expect(statSync(path).mode & 0o777).toBe(0o640);
    const backup = join(h.ctx.paths.dataDir, "client-backups", "claude-code", ".claude.json");
    expect(readFileSync(backup, "utf8")).toBe(fixtureFile("seed", "claude-code"));
    expect(statSync(backup).mode & 0o777).toBe(0o600);
    expect(h.infos.some((line) => line.includes(backup))).toBe(true);

    await sync.onWorkloadStarted(fetch41002);
    await sync.onWorkloadStopped({ name: "fetch" });
    expect(readFileSync(backup, "utf8")).toBe(fixtureFile("seed", "claude-code"));
    expect(statSync(path).mode & 0o777).toBe(0o640);
  });

  // These run as root (as the suite does): mcpmgr under sudo, editing a user's files.
  test("run as root, a user's file stays the user's: owner, group and mode kept", async () => {
    expect(process.getuid?.()).toBe(0);
    const path = h.seed("claude-code");
    chownSync(h.home, 61234, 61234);
    chownSync(path, 61234, 61235);
    chmodSync(path, 0o640);
    await sync.registerClient("claude-code", "default", [fetch41001]);
    await sync.onWorkloadStarted(fetch41002);
    const info = statSync(path);
    expect([info.uid, info.gid, info.mode & 0o777]).toEqual([61234, 61235, 0o640]);
    expect(h.read("claude-code")).toContain(":41002/");
  });

  test("run as root, a new file (and its folder) under a user's home belongs to the home's owner", async () => {
    chownSync(h.home, 61234, 61234);
    await sync.registerClient("cursor", "default", [fetch41001]);
    const path = clientById("cursor").configPath(h.ctx);
    for (const made of [path, dirname(path)]) {
      const info = statSync(made);
      expect([made, info.uid, info.gid]).toEqual([made, 61234, 61234]);
    }
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  test("run as root, a link out of the user's home is not followed: one warning, nothing written, other clients updated", async () => {
    chownSync(h.home, 61234, 61234);
    const outside = mkdtempSync(join(tmpdir(), "mcpmgr-outside-"));
    try {
      const daemon = join(outside, "daemon.json");
      writeFileSync(daemon, '{"debug": true}\n');
      const link = clientById("cursor").configPath(h.ctx);
      mkdirSync(dirname(link), { recursive: true });
      symlinkSync(daemon, link);
      const zed = h.seed("zed");
      chownSync(zed, 61234, 61234);
      await sync.registerClient("cursor", "default", []);
      await sync.registerClient("zed", "default", []);
      const reports = await sync.onWorkloadStarted(fetch41001);
      expect(reports.find((r) => r.client === "cursor")?.action).toBe("skipped");
      expect(reports.find((r) => r.client === "zed")?.action).toBe("added");
      expect(readFileSync(daemon, "utf8")).toBe('{"debug": true}\n');
      expect(h.warnings).toHaveLength(1);
      expect(h.warnings[0]).toContain(daemon);
      expect(h.warnings[0]).toContain("outside the home");
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  test("run as root, a file in the home that another user owns is left alone", async () => {
    chownSync(h.home, 61234, 61234);
    const path = h.seed("claude-code");
    chownSync(path, 61299, 61299);
    const before = readFileSync(path, "utf8");
    const [report] = await sync.registerClient("claude-code", "default", [fetch41001]);
    expect(report?.action).toBe("skipped");
    expect(readFileSync(path, "utf8")).toBe(before);
    expect(h.warnings[0]).toContain("belongs to uid 61299");
  });

  test("a byte order mark (as Windows editors write) is kept, and the file edited as any other", async () => {
    for (const client of ["cursor", "vscode", "continue", "codex"] as const) {
      const path = h.seed(client);
      writeFileSync(path, `\uFEFF${fixtureFile("seed", client)}`);
      const [added] = await sync.registerClient(client, "default", [fetch41001]);
      expect(added?.action).toBe("added");
      expect(readFileSync(path, "utf8")).toBe(`\uFEFF${fixtureFile("expected", client)}`);
      await sync.removeClient(client);
      expect(readFileSync(path, "utf8")).toBe(`\uFEFF${fixtureFile("seed", client)}`);
    }
    expect(h.warnings).toEqual([]);
  });

  test("a file with Windows line endings keeps them on every line, the user's and mcpmgr's", async () => {
    const crlf = (text: string) => text.replace(/\r?\n/g, "\r\n");
    for (const client of CLIENT_IDS) {
      const path = h.seed(client);
      writeFileSync(path, crlf(fixtureFile("seed", client)));
      await sync.registerClient(client, "default", [fetch41001]);
      expect([client, readFileSync(path, "utf8")]).toEqual([client, crlf(fixtureFile("expected", client))]);
      await sync.removeClient(client);
      expect([client, readFileSync(path, "utf8")]).toEqual([client, crlf(fixtureFile("seed", client))]);
    }
  });

  test("a file mcpmgr created is not backed up later: a note says there was no earlier version", async () => {
    await sync.registerClient("cursor", "default", [fetch41001]);
    await sync.onWorkloadStopped({ name: "fetch" });
    const dir = join(h.ctx.paths.dataDir, "client-backups", "cursor");
    expect(existsSync(join(dir, "mcp.json"))).toBe(false);
    expect(readFileSync(join(dir, "mcp.json.created"), "utf8")).toContain("mcpmgr created");
  });

  test("nothing is rewritten when nothing changes", async () => {
    const path = h.seed("zed");
    await sync.registerClient("zed", "default", [fetch41001]);
    const before = statSync(path);
    const [report] = await sync.onWorkloadStarted(fetch41001);
    expect(report?.action).toBe("unchanged");
    const after = statSync(path);
    expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
  });

  test("a symlinked configuration file stays a symlink; its target is edited", async () => {
    const target = join(h.home, "dotfiles", "cursor-mcp.json");
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, fixtureFile("seed", "cursor"));
    const link = clientById("cursor").configPath(h.ctx);
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(target, link);
    await sync.registerClient("cursor", "default", [fetch41001]);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readlinkSync(link)).toBe(target);
    expect(readFileSync(target, "utf8")).toBe(fixtureFile("expected", "cursor"));
  });
});

describe("transports", () => {
  const legacy: WorkloadEndpoint = {
    name: "legacy",
    group: "default",
    url: "http://127.0.0.1:41003/sse",
    transport: "sse",
  };

  test("an SSE workload reaches the clients that can express it, and is skipped with a warning by the others", async () => {
    for (const client of CLIENT_IDS) await sync.registerClient(client, "default", []);
    const reports = await sync.onWorkloadStarted(legacy);
    const skipped = reports.filter((report) => report.action === "skipped").map((report) => report.client);
    expect(skipped.sort()).toEqual(["claude-desktop", "codex", "goose", "zed"]);
    expect(h.warnings).toHaveLength(4);
    expect(h.warnings.find((line) => line.startsWith("Codex CLI"))).toContain(
      "cannot connect to legacy, which speaks SSE (the deprecated HTTP+SSE transport) (it accepts streamable HTTP only)",
    );
    expect(JSON.parse(h.read("claude-code")).mcpServers.legacy).toEqual({ type: "sse", url: legacy.url });
    expect(JSON.parse(h.read("vscode")).servers.legacy).toEqual({ type: "sse", url: legacy.url });
    expect(JSON.parse(h.read("cline")).mcpServers.legacy).toEqual({ type: "sse", url: legacy.url });
    expect(JSON.parse(h.read("gemini-cli")).mcpServers.legacy).toEqual({ url: legacy.url });
    expect(h.read("continue")).toContain("  - name: legacy\n    type: sse\n    url: http://127.0.0.1:41003/sse\n");
  });

  test("Gemini CLI's key follows the transport: url for SSE, httpUrl for streamable HTTP", async () => {
    await sync.registerClient("gemini-cli", "default", [legacy]);
    expect(JSON.parse(h.read("gemini-cli")).mcpServers.legacy).toEqual({ url: legacy.url });
    await sync.onWorkloadStarted({ ...legacy, url: "http://127.0.0.1:41003/mcp", transport: "streamable-http" });
    expect(JSON.parse(h.read("gemini-cli")).mcpServers.legacy).toEqual({ httpUrl: "http://127.0.0.1:41003/mcp" });
  });

  test("Claude Desktop's entry runs mcpmgr proxy stdio, with MCPMGR_HOME when mcpmgr has one", async () => {
    const withHome = makeClientHome({ MCPMGR_HOME: "/srv/mcpmgr" });
    try {
      await new ClientConfigSync(withHome.ctx).registerClient("claude-desktop", "default", [fetch41001]);
      expect(JSON.parse(withHome.read("claude-desktop")).mcpServers.fetch).toEqual({
        command: "/opt/mcpmgr/bin/mcpmgr",
        args: ["proxy", "stdio", "fetch"],
        env: { MCPMGR_HOME: "/srv/mcpmgr" },
      });
    } finally {
      withHome.cleanup();
    }
  });

  test("Claude Desktop's entry names a relative MCPMGR_HOME by its absolute path (the client runs it from elsewhere)", async () => {
    const withHome = makeClientHome({ MCPMGR_HOME: "state/mcpmgr" });
    try {
      await new ClientConfigSync(withHome.ctx).registerClient("claude-desktop", "default", [fetch41001]);
      expect(JSON.parse(withHome.read("claude-desktop")).mcpServers.fetch.env).toEqual({
        MCPMGR_HOME: join(process.cwd(), "state", "mcpmgr"),
      });
    } finally {
      withHome.cleanup();
    }
  });

  test("opencode's opencode.jsonc is used when it is the file the user has", async () => {
    const jsonc = join(h.home, ".config", "opencode", "opencode.jsonc");
    mkdirSync(dirname(jsonc), { recursive: true });
    writeFileSync(jsonc, fixtureFile("seed", "opencode"));
    expect(clientById("opencode").configPath(h.ctx)).toBe(jsonc);
    await sync.registerClient("opencode", "default", [fetch41001]);
    expect(readFileSync(jsonc, "utf8")).toBe(fixtureFile("expected", "opencode"));
    expect(existsSync(join(h.home, ".config", "opencode", "opencode.json"))).toBe(false);
  });

  test("opencode 1 files (servers straight under mcp) are written in that layout", async () => {
    const path = clientById("opencode").configPath(h.ctx);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(
      path,
      '{\n  "mcp": {\n    "jira": { "type": "remote", "url": "https://jira/mcp", "enabled": true }\n  }\n}\n',
    );
    await sync.registerClient("opencode", "default", [fetch41001]);
    expect(JSON.parse(h.read("opencode")).mcp.fetch).toEqual({ type: "remote", url: fetch41001.url });
  });
});

describe("registrations", () => {
  test("a client follows only the groups it is registered for; removing a group's registration takes its entries", async () => {
    await new GroupStore(h.ctx.paths).create("team-a");
    const teamA: WorkloadEndpoint = {
      name: "search",
      group: "team-a",
      url: "http://127.0.0.1:41010/mcp",
      transport: "streamable-http",
    };
    await sync.registerClient("cursor", "default", [fetch41001, teamA]);
    expect(Object.keys(JSON.parse(h.read("cursor")).mcpServers)).toEqual(["fetch"]);
    await sync.registerClient("cursor", "team-a", [fetch41001, teamA]);
    expect(Object.keys(JSON.parse(h.read("cursor")).mcpServers)).toEqual(["fetch", "search"]);
    expect((await sync.onWorkloadStarted({ ...teamA, name: "other", group: "elsewhere" })).length).toBe(0);

    await sync.removeClient("cursor", "team-a");
    expect(Object.keys(JSON.parse(h.read("cursor")).mcpServers)).toEqual(["fetch"]);
    const registrations = await new ClientRegistrationStore(h.ctx.paths).read();
    expect(registrations.clients.cursor?.groups).toEqual(["default"]);

    await sync.removeClient("cursor");
    // mcpmgr created the file and its mcpServers: the collection goes with the last entry.
    expect(h.read("cursor")).toBe("{}\n");
    expect((await new ClientRegistrationStore(h.ctx.paths).read()).clients).toEqual({});
  });

  test("registering for a group that does not exist is refused", async () => {
    const err = await rejection(sync.registerClient("cursor", "nope", []), "GROUP_NOT_FOUND");
    expect(err.hint).toContain("mcpmgr group create nope");
  });

  test("forgetting a group removes its entries from every client and every registration for it", async () => {
    await new GroupStore(h.ctx.paths).create("team-b");
    const teamB: WorkloadEndpoint = { ...fetch41001, name: "b-server", group: "team-b" };
    await sync.registerClient("cursor", "team-b", [teamB]);
    await sync.registerClient("codex", "team-b", [teamB]);
    await sync.registerClient("codex", "default", [fetch41001]);
    await sync.forgetGroup("team-b");
    expect(h.read("cursor")).toBe("{}\n");
    expect(h.read("codex")).not.toContain("b-server");
    expect(h.read("codex")).toContain("[mcp_servers.fetch]");
    const status = await sync.status();
    expect(status.find((row) => row.id === "codex")?.groups).toEqual(["default"]);
    expect(status.find((row) => row.id === "cursor")?.groups).toEqual([]);
  });

  test("status lists every client with its file, its groups and mcpmgr's entries", async () => {
    await sync.registerClient("goose", "default", [fetch41001]);
    const status = await sync.status();
    expect(status.map((row) => row.id)).toEqual(allClients().map((client) => client.id));
    expect(status.find((row) => row.id === "goose")).toEqual({
      id: "goose",
      displayName: "Goose",
      installed: true,
      configPath: join(h.home, ".config", "goose", "config.yaml"),
      groups: ["default"],
      viaGateway: [],
      entries: ["fetch"],
    });
  });
});

describe("through the group's gateway", () => {
  const gateway: WorkloadEndpoint = {
    name: "gateway-default",
    group: "default",
    url: "http://127.0.0.1:41020/mcp",
    transport: "streamable-http",
    gateway: true,
  };
  const search: WorkloadEndpoint = { ...fetch41001, name: "search", url: "http://127.0.0.1:41011/mcp" };
  // The collection mcpmgr made goes with its last entry: none left reads as no servers.
  const servers = () => (JSON.parse(h.read("cursor")).mcpServers ?? {}) as Record<string, unknown>;

  test("is refused while no gateway of the group runs, and nothing changes", async () => {
    await sync.registerClient("cursor", "default", [fetch41001]);
    const before = h.read("cursor");
    const err = await rejection(
      sync.registerClient("cursor", "default", [fetch41001], { gateway: true }),
      "GATEWAY_NOT_RUNNING",
    );
    expect(err.hint).toContain("mcpmgr gateway default --detach");
    expect(h.read("cursor")).toBe(before);
    expect((await sync.status()).find((row) => row.id === "cursor")?.viaGateway).toEqual([]);
  });

  test("one entry for the gateway; switching takes the workloads' entries out, and back", async () => {
    await sync.registerClient("cursor", "default", [fetch41001, gateway]);
    expect(servers()).toEqual({ fetch: { url: fetch41001.url } });
    // A per-workload client never gets the gateway, even when it starts.
    expect(await sync.onWorkloadStarted(gateway)).toEqual([]);

    const switched = await sync.registerClient("cursor", "default", async () => [fetch41001, gateway], {
      gateway: true,
    });
    expect(switched.map((report) => `${report.action} ${report.workload}`)).toEqual([
      "removed fetch",
      "added gateway-default",
    ]);
    expect(servers()).toEqual({ "gateway-default": { url: gateway.url } });
    expect((await sync.status()).find((row) => row.id === "cursor")?.viaGateway).toEqual(["default"]);
    // Workloads of the group that start now are the gateway's business.
    expect(await sync.onWorkloadStarted(search)).toEqual([]);
    expect(servers()).toEqual({ "gateway-default": { url: gateway.url } });
    await sync.onWorkloadStopped({ name: "gateway-default" });
    expect(servers()).toEqual({});
    expect((await sync.onWorkloadStarted(gateway))[0]?.action).toBe("added");

    await sync.registerClient("cursor", "default", [fetch41001, search, gateway]);
    expect(servers()).toEqual({ fetch: { url: fetch41001.url }, search: { url: search.url } });
    expect((await new ClientRegistrationStore(h.ctx.paths).read()).clients.cursor).toEqual({ groups: ["default"] });
  });

  test("two gateways of one group: register refuses, and a second one that starts later is skipped with a warning (review 9 F18)", async () => {
    const second: WorkloadEndpoint = { ...gateway, name: "gw2", url: "http://127.0.0.1:41021/mcp" };
    await sync.registerClient("cursor", "default", [fetch41001]);
    const before = h.read("cursor");
    const err = await rejection(
      sync.registerClient("cursor", "default", [gateway, second], { gateway: true }),
      "GATEWAY_AMBIGUOUS",
    );
    expect(err.message).toBe(
      "group default has 2 background gateways running (gateway-default, gw2), and a client gets one",
    );
    expect(err.hint).toContain("mcpmgr stop gw2");
    expect(h.read("cursor")).toBe(before);

    await sync.registerClient("cursor", "default", [gateway], { gateway: true });
    expect(servers()).toEqual({ "gateway-default": { url: gateway.url } });
    const skipped = await sync.onWorkloadStarted(second);
    expect(skipped.map((report) => report.action)).toEqual(["skipped"]);
    expect(h.warnings).toEqual([
      expect.stringContaining("it reaches group default through the gateway gateway-default already"),
    ]);
    expect(servers()).toEqual({ "gateway-default": { url: gateway.url } });
    // The client follows whichever runs: with the first one stopped, the second is written.
    await sync.onWorkloadStopped({ name: "gateway-default" });
    expect((await sync.onWorkloadStarted(second))[0]?.action).toBe("added");
    expect(servers()).toEqual({ gw2: { url: second.url } });
  });

  test("removing the client or forgetting the group drops the gateway way with it", async () => {
    await sync.registerClient("cursor", "default", [gateway], { gateway: true });
    await sync.removeClient("cursor", "default");
    expect(servers()).toEqual({});
    expect((await new ClientRegistrationStore(h.ctx.paths).read()).clients).toEqual({});
  });
});

describe("live entries", () => {
  test("a foreground run's entry carries its pid, and only a stop with that pid takes it out", async () => {
    await sync.registerClient("cursor", "default", []);
    await sync.onWorkloadStarted({ ...fetch41001, pid: 4242 });
    const owned = (await new ClientRegistrationStore(h.ctx.paths).read()).owned.cursor ?? {};
    expect(Object.values(owned)[0]?.fetch?.pid).toBe(4242);
    expect(await sync.onWorkloadStopped({ name: "fetch" })).toEqual([]);
    expect(await sync.onWorkloadStopped({ name: "fetch", pid: 4243 })).toEqual([]);
    expect((await sync.onWorkloadStopped({ name: "fetch", pid: 4242 }))[0]?.action).toBe("removed");
    expect(h.read("cursor")).toBe("{}\n");
  });

  test("an entry is recorded before it is written, so a crash in between never leaves one mcpmgr would disown", async () => {
    await sync.registerClient("cursor", "default", []);
    const store = new ClientRegistrationStore(h.ctx.paths);
    const path = clientById("cursor").configPath(h.ctx);
    // Looks at both files between every step of the change, as a crash at any point would leave them.
    const seen: string[] = [];
    let watching = true;
    const look = async () => {
      while (watching) {
        const written = existsSync(path) && readFileSync(path, "utf8").includes('"fetch"');
        if (written) seen.push((await store.read()).owned.cursor ? "recorded" : "not recorded");
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    const looking = look();
    await sync.onWorkloadStarted(fetch41001);
    watching = false;
    await looking;
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.filter((state) => state !== "recorded")).toEqual([]);
  });

  test("pruning takes out exactly the entries whose workload is not live, asking once per entry", async () => {
    await sync.registerClient("cursor", "default", [fetch41001, { ...fetch41001, name: "search" }]);
    await sync.registerClient("vscode", "default", [fetch41001]);
    const asked: string[] = [];
    const reports = await sync.pruneEntries(async (name) => {
      asked.push(name);
      return name === "search";
    });
    expect(asked.sort()).toEqual(["fetch", "fetch", "search"]);
    expect(reports.map((report) => `${report.action} ${report.client} ${report.workload}`).sort()).toEqual([
      "removed cursor fetch",
      "removed vscode fetch",
    ]);
    expect(Object.keys(JSON.parse(h.read("cursor")).mcpServers)).toEqual(["search"]);
    expect(await sync.pruneEntries(async () => true)).toEqual([]);
  });
});
