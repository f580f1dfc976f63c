/**
 * Where each AI client keeps its MCP configuration on Linux, macOS and Windows (asked of the
 * pure path functions from one machine), the variables that move it, and how "installed" is
 * detected, on a real temporary HOME.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { allClients, clientById } from "../../src/clients/catalog.ts";
import { ClientConfigSync } from "../../src/clients/sync.ts";
import { CLIENT_IDS, type ClientContext, type ClientId } from "../../src/clients/types.ts";
import { resolvePaths } from "../../src/state/paths.ts";
import { type ClientHome, makeClientHome } from "../support/client-home.ts";

function context(platform: NodeJS.Platform, home: string, env: Record<string, string> = {}): ClientContext {
  return {
    home,
    platform,
    env,
    paths: resolvePaths({ MCPMGR_HOME: "/tmp/unused" }, "linux", "/tmp"),
    log: { warn: () => {}, info: () => {} },
    selfCommand: ["mcpmgr"],
  };
}

const linux = context("linux", "/home/me");
const mac = context("darwin", "/Users/me");
const windows = context("win32", "C:\\Users\\me", { APPDATA: "C:\\Users\\me\\AppData\\Roaming" });

const expected: Readonly<Record<ClientId, readonly [linux: string, mac: string, windows: string]>> = {
  "claude-code": ["/home/me/.claude.json", "/Users/me/.claude.json", "C:\\Users\\me\\.claude.json"],
  "claude-desktop": [
    "/home/me/.config/Claude/claude_desktop_config.json",
    "/Users/me/Library/Application Support/Claude/claude_desktop_config.json",
    "C:\\Users\\me\\AppData\\Roaming\\Claude\\claude_desktop_config.json",
  ],
  cursor: ["/home/me/.cursor/mcp.json", "/Users/me/.cursor/mcp.json", "C:\\Users\\me\\.cursor\\mcp.json"],
  vscode: [
    "/home/me/.config/Code/User/mcp.json",
    "/Users/me/Library/Application Support/Code/User/mcp.json",
    "C:\\Users\\me\\AppData\\Roaming\\Code\\User\\mcp.json",
  ],
  "vscode-insiders": [
    "/home/me/.config/Code - Insiders/User/mcp.json",
    "/Users/me/Library/Application Support/Code - Insiders/User/mcp.json",
    "C:\\Users\\me\\AppData\\Roaming\\Code - Insiders\\User\\mcp.json",
  ],
  windsurf: [
    "/home/me/.codeium/windsurf/mcp_config.json",
    "/Users/me/.codeium/windsurf/mcp_config.json",
    "C:\\Users\\me\\.codeium\\windsurf\\mcp_config.json",
  ],
  cline: [
    "/home/me/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
    "/Users/me/Library/Application Support/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
    "C:\\Users\\me\\AppData\\Roaming\\Code\\User\\globalStorage\\saoudrizwan.claude-dev\\settings\\cline_mcp_settings.json",
  ],
  "cline-cli": [
    "/home/me/.cline/data/settings/cline_mcp_settings.json",
    "/Users/me/.cline/data/settings/cline_mcp_settings.json",
    "C:\\Users\\me\\.cline\\data\\settings\\cline_mcp_settings.json",
  ],
  "roo-code": [
    "/home/me/.config/Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json",
    "/Users/me/Library/Application Support/Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json",
    "C:\\Users\\me\\AppData\\Roaming\\Code\\User\\globalStorage\\rooveterinaryinc.roo-cline\\settings\\mcp_settings.json",
  ],
  continue: [
    "/home/me/.continue/config.yaml",
    "/Users/me/.continue/config.yaml",
    "C:\\Users\\me\\.continue\\config.yaml",
  ],
  goose: [
    "/home/me/.config/goose/config.yaml",
    "/Users/me/.config/goose/config.yaml",
    "C:\\Users\\me\\AppData\\Roaming\\Block\\goose\\config\\config.yaml",
  ],
  zed: [
    "/home/me/.config/zed/settings.json",
    "/Users/me/.config/zed/settings.json",
    "C:\\Users\\me\\AppData\\Roaming\\Zed\\settings.json",
  ],
  codex: ["/home/me/.codex/config.toml", "/Users/me/.codex/config.toml", "C:\\Users\\me\\.codex\\config.toml"],
  "gemini-cli": [
    "/home/me/.gemini/settings.json",
    "/Users/me/.gemini/settings.json",
    "C:\\Users\\me\\.gemini\\settings.json",
  ],
  opencode: [
    "/home/me/.config/opencode/opencode.json",
    "/Users/me/.config/opencode/opencode.json",
    "C:\\Users\\me\\.config\\opencode\\opencode.json",
  ],
  "lm-studio": ["/home/me/.lmstudio/mcp.json", "/Users/me/.lmstudio/mcp.json", "C:\\Users\\me\\.lmstudio\\mcp.json"],
  "qwen-code": ["/home/me/.qwen/settings.json", "/Users/me/.qwen/settings.json", "C:\\Users\\me\\.qwen\\settings.json"],
};

describe("configuration files per platform", () => {
  test.each(CLIENT_IDS.map((id) => [id]))("%s", (id) => {
    const client = clientById(id);
    expect([client.configPath(linux), client.configPath(mac), client.configPath(windows)]).toEqual([...expected[id]]);
  });

  test("every client is in the table, with a display name, a format and its documentation", () => {
    expect(Object.keys(expected).sort()).toEqual([...CLIENT_IDS].sort());
    for (const client of allClients()) {
      expect(client.displayName).not.toBe("");
      expect(client.docs).toMatch(/^https:\/\//);
    }
  });
});

describe("variables that move the files", () => {
  test("XDG_CONFIG_HOME moves Linux desktop apps and XDG tools, not macOS app folders; a relative one is ignored", () => {
    const xdg = context("linux", "/home/me", { XDG_CONFIG_HOME: "/xdg" });
    expect(clientById("vscode").configPath(xdg)).toBe("/xdg/Code/User/mcp.json");
    expect(clientById("goose").configPath(xdg)).toBe("/xdg/goose/config.yaml");
    expect(clientById("zed").configPath(xdg)).toBe("/xdg/zed/settings.json");
    expect(clientById("opencode").configPath(xdg)).toBe("/xdg/opencode/opencode.json");
    expect(clientById("cursor").configPath(xdg)).toBe("/home/me/.cursor/mcp.json");
    const macXdg = context("darwin", "/Users/me", { XDG_CONFIG_HOME: "/xdg" });
    expect(clientById("vscode").configPath(macXdg)).toBe("/Users/me/Library/Application Support/Code/User/mcp.json");
    expect(clientById("zed").configPath(macXdg)).toBe("/Users/me/.config/zed/settings.json");
    expect(clientById("goose").configPath(macXdg)).toBe("/xdg/goose/config.yaml");
    const relative = context("linux", "/home/me", { XDG_CONFIG_HOME: "relative/dir" });
    expect(clientById("goose").configPath(relative)).toBe("/home/me/.config/goose/config.yaml");
  });

  test("CODEX_HOME, CLAUDE_CONFIG_DIR and CONTINUE_GLOBAL_DIR are honoured", () => {
    const moved = context("linux", "/home/me", {
      CODEX_HOME: "/opt/codex",
      CLAUDE_CONFIG_DIR: "/opt/claude",
      CONTINUE_GLOBAL_DIR: "/opt/continue",
    });
    expect(clientById("codex").configPath(moved)).toBe("/opt/codex/config.toml");
    expect(clientById("claude-code").configPath(moved)).toBe("/opt/claude/.claude.json");
    expect(clientById("continue").configPath(moved)).toBe("/opt/continue/config.yaml");
  });

  test("the Cline CLI's file: CLINE_MCP_SETTINGS_PATH, else CLINE_DATA_DIR, else CLINE_DIR's data folder; relative values ignored", () => {
    const cli = clientById("cline-cli");
    expect(cli.configPath(context("linux", "/home/me", { CLINE_DIR: "/opt/cline" }))).toBe(
      "/opt/cline/data/settings/cline_mcp_settings.json",
    );
    const data = context("linux", "/home/me", { CLINE_DIR: "/opt/cline", CLINE_DATA_DIR: "/srv/cline-data" });
    expect(cli.configPath(data)).toBe("/srv/cline-data/settings/cline_mcp_settings.json");
    const file = context("linux", "/home/me", {
      CLINE_DATA_DIR: "/srv/cline-data",
      CLINE_MCP_SETTINGS_PATH: "/etc/mcp.json",
    });
    expect(cli.configPath(file)).toBe("/etc/mcp.json");
    const relative = context("linux", "/home/me", { CLINE_DIR: "cline", CLINE_MCP_SETTINGS_PATH: "mcp.json" });
    expect(cli.configPath(relative)).toBe("/home/me/.cline/data/settings/cline_mcp_settings.json");
    // The extension keeps its own file in VS Code: none of these move it.
    expect(clientById("cline").configPath(file)).toBe(
      "/home/me/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
    );
  });

  test("on Windows, APPDATA is found whatever its case, and falls back to the profile's AppData\\Roaming", () => {
    const lower = context("win32", "C:\\Users\\me", { appdata: "D:\\Roaming" });
    expect(clientById("vscode").configPath(lower)).toBe("D:\\Roaming\\Code\\User\\mcp.json");
    const none = context("win32", "C:\\Users\\me");
    expect(clientById("claude-desktop").configPath(none)).toBe(
      "C:\\Users\\me\\AppData\\Roaming\\Claude\\claude_desktop_config.json",
    );
  });
});

describe("installed detection", () => {
  let h: ClientHome;
  afterEach(() => h.cleanup());

  /** The folder whose existence marks each client as installed, on Linux, relative to HOME. */
  const markers: Readonly<Record<ClientId, string>> = {
    "claude-code": ".claude",
    "claude-desktop": ".config/Claude",
    cursor: ".cursor",
    vscode: ".config/Code",
    "vscode-insiders": ".config/Code - Insiders",
    windsurf: ".codeium/windsurf",
    cline: ".config/Code/User/globalStorage/saoudrizwan.claude-dev",
    "cline-cli": ".cline",
    "roo-code": ".config/Code/User/globalStorage/rooveterinaryinc.roo-cline",
    continue: ".continue",
    goose: ".config/goose",
    zed: ".config/zed",
    codex: ".codex",
    "gemini-cli": ".gemini",
    opencode: ".config/opencode",
    "lm-studio": ".lmstudio",
    "qwen-code": ".qwen",
  };

  test.each(CLIENT_IDS.map((id) => [id]))("%s is installed once its folder exists, and only then", async (id) => {
    h = makeClientHome();
    const sync = new ClientConfigSync(h.ctx);
    const installed = async () => (await sync.status()).filter((row) => row.installed).map((row) => row.id);
    expect(await installed()).toEqual([]);
    mkdirSync(join(h.home, markers[id]), { recursive: true });
    const found = await installed();
    expect(found).toContain(id);
    // Cline and Roo Code live inside VS Code's folder: VS Code is installed with them.
    expect(found.filter((other) => other !== id)).toEqual(id === "cline" || id === "roo-code" ? ["vscode"] : []);
  });

  test("Claude Code also counts as installed with only ~/.claude.json", async () => {
    h = makeClientHome();
    const path = join(h.home, ".claude.json");
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, "{}\n");
    const status = await new ClientConfigSync(h.ctx).status();
    expect(status.filter((row) => row.installed).map((row) => row.id)).toEqual(["claude-code"]);
  });
});
