/**
 * The AI clients mcpmgr configures: where each keeps its MCP servers on Linux, macOS and
 * Windows, and the exact entry it expects for a workload. docs/clients.md is the same table
 * for people, with the documentation each shape was taken from.
 *
 * Most clients reach the workload's proxy by URL and need to know which transport it speaks
 * (streamable HTTP, or the deprecated HTTP+SSE); Claude Desktop only starts processes, so
 * its entry runs `mcpmgr proxy stdio NAME`, which looks the workload's current URL up when
 * the client starts it (relay-entry.ts).
 */
import { existsSync } from "node:fs";
import { posix, win32 } from "node:path";
import { appConfig, envDir, envValue, inHome, joinPath, xdgConfig } from "./locations.ts";
import { proxyStdioEntry } from "./relay-entry.ts";
import {
  CLIENT_IDS,
  type ClientContext,
  type ClientDefinition,
  type ClientId,
  type EntryShape,
  type RemoteTransport,
  type WorkloadEndpoint,
} from "./types.ts";

const BOTH: readonly RemoteTransport[] = ["streamable-http", "sse"];
const HTTP_ONLY: readonly RemoteTransport[] = ["streamable-http"];
const mcpServers = () => ({ kind: "map", path: ["mcpServers"] }) as const;

/** `{"type": <the client's name for the transport>, "url": URL}`, both kept in sync. */
function typedUrl(names: Readonly<Record<RemoteTransport, string>>): (workload: WorkloadEndpoint) => EntryShape {
  return (workload) => ({ value: { type: names[workload.transport], url: workload.url }, managed: ["type", "url"] });
}

/** `{<key>: URL}` for clients that tell the transport apart themselves. */
function urlOnly(key: string): (workload: WorkloadEndpoint) => EntryShape {
  return (workload) => ({ value: { [key]: workload.url }, managed: [key] });
}

/** Gemini CLI's notation (and Qwen Code's, a fork of it): `httpUrl` means streamable HTTP, `url` means SSE. */
function geminiEntry(workload: WorkloadEndpoint): EntryShape {
  return urlOnly(workload.transport === "sse" ? "url" : "httpUrl")(workload);
}

/** VS Code's user folder (Code, Code - Insiders), which extensions' global storage lives under too. */
function vscodeUser(ctx: ClientContext, product: string, ...parts: string[]): string {
  return appConfig(ctx, product, "User", ...parts);
}

function vscode(id: ClientId, displayName: string, product: string): ClientDefinition {
  return {
    id,
    displayName,
    format: "jsonc",
    configPath: (ctx) => vscodeUser(ctx, product, "mcp.json"),
    installMarkers: (ctx) => [appConfig(ctx, product)],
    collection: () => ({ kind: "map", path: ["servers"] }),
    transports: BOTH,
    entry: typedUrl({ "streamable-http": "http", sse: "sse" }),
    docs: "https://code.visualstudio.com/docs/copilot/reference/mcp-configuration",
  };
}

/** A VS Code extension that keeps its own MCP settings file in its global storage. */
function vscodeExtension(
  id: ClientId,
  displayName: string,
  extensionId: string,
  file: string,
  types: Readonly<Record<RemoteTransport, string>>,
  docs: string,
): ClientDefinition {
  return {
    id,
    displayName,
    format: "json",
    configPath: (ctx) => vscodeUser(ctx, "Code", "globalStorage", extensionId, "settings", file),
    installMarkers: (ctx) => [vscodeUser(ctx, "Code", "globalStorage", extensionId)],
    collection: mcpServers,
    transports: BOTH,
    entry: typedUrl(types),
    docs,
  };
}

/**
 * The Cline CLI's (and its SDK's) MCP settings: $CLINE_MCP_SETTINGS_PATH, else
 * $CLINE_DATA_DIR/settings/cline_mcp_settings.json, else the data folder under $CLINE_DIR
 * (default ~/.cline) — the order @cline/shared's storage paths resolve them in. A relative
 * value is ignored, as for every such variable here.
 */
function clineCliSettings(ctx: ClientContext): string {
  const file = envValue(ctx, "CLINE_MCP_SETTINGS_PATH");
  if (file !== undefined && (ctx.platform === "win32" ? win32 : posix).isAbsolute(file)) return file;
  return joinPath(ctx, clineCliDataDir(ctx), "settings", "cline_mcp_settings.json");
}

function clineCliDir(ctx: ClientContext): string {
  return envDir(ctx, "CLINE_DIR") ?? inHome(ctx, ".cline");
}

function clineCliDataDir(ctx: ClientContext): string {
  return envDir(ctx, "CLINE_DATA_DIR") ?? joinPath(ctx, clineCliDir(ctx), "data");
}

function claudeCodeDir(ctx: ClientContext): string | undefined {
  return envDir(ctx, "CLAUDE_CONFIG_DIR");
}

function codexHome(ctx: ClientContext): string {
  return envDir(ctx, "CODEX_HOME") ?? inHome(ctx, ".codex");
}

function continueHome(ctx: ClientContext): string {
  return envDir(ctx, "CONTINUE_GLOBAL_DIR") ?? inHome(ctx, ".continue");
}

function gooseDir(ctx: ClientContext): string {
  return ctx.platform === "win32" ? appConfig(ctx, "Block", "goose", "config") : xdgConfig(ctx, "goose");
}

function zedDir(ctx: ClientContext): string {
  if (ctx.platform === "win32") return appConfig(ctx, "Zed");
  // Zed keeps ~/.config/zed on macOS as well, not ~/Library.
  if (ctx.platform === "darwin") return inHome(ctx, ".config", "zed");
  return xdgConfig(ctx, "zed");
}

/** opencode reads the global opencode.json(c) from its XDG folder on every platform. */
function opencodeDir(ctx: ClientContext): string {
  return xdgConfig(ctx, "opencode");
}

const definitions: readonly ClientDefinition[] = [
  {
    id: "claude-code",
    displayName: "Claude Code",
    format: "json",
    // User scope: the top-level mcpServers of ~/.claude.json (or $CLAUDE_CONFIG_DIR/.claude.json).
    configPath: (ctx) => joinPath(ctx, claudeCodeDir(ctx) ?? ctx.home, ".claude.json"),
    installMarkers: (ctx) => [claudeCodeDir(ctx) ?? inHome(ctx, ".claude"), inHome(ctx, ".claude.json")],
    collection: mcpServers,
    transports: BOTH,
    entry: typedUrl({ "streamable-http": "http", sse: "sse" }),
    docs: "https://code.claude.com/docs/en/mcp",
  },
  {
    id: "claude-desktop",
    displayName: "Claude Desktop",
    format: "json",
    configPath: (ctx) => appConfig(ctx, "Claude", "claude_desktop_config.json"),
    installMarkers: (ctx) => [appConfig(ctx, "Claude")],
    collection: mcpServers,
    // `mcpmgr proxy stdio` relays to streamable HTTP; an SSE-only workload cannot be relayed.
    transports: HTTP_ONLY,
    stdioOnly: true,
    entry: proxyStdioEntry,
    docs: "https://modelcontextprotocol.io/docs/develop/connect-local-servers",
  },
  {
    id: "cursor",
    displayName: "Cursor",
    format: "json",
    configPath: (ctx) => inHome(ctx, ".cursor", "mcp.json"),
    installMarkers: (ctx) => [inHome(ctx, ".cursor")],
    collection: mcpServers,
    transports: BOTH,
    entry: urlOnly("url"),
    docs: "https://cursor.com/docs/context/mcp",
  },
  vscode("vscode", "VS Code", "Code"),
  vscode("vscode-insiders", "VS Code Insiders", "Code - Insiders"),
  {
    id: "windsurf",
    displayName: "Windsurf",
    format: "json",
    configPath: (ctx) => inHome(ctx, ".codeium", "windsurf", "mcp_config.json"),
    installMarkers: (ctx) => [inHome(ctx, ".codeium", "windsurf")],
    collection: mcpServers,
    transports: BOTH,
    entry: urlOnly("serverUrl"),
    docs: "https://docs.windsurf.com/windsurf/cascade/mcp",
  },
  vscodeExtension(
    "cline",
    "Cline",
    "saoudrizwan.claude-dev",
    "cline_mcp_settings.json",
    { "streamable-http": "streamableHttp", sse: "sse" },
    "https://docs.cline.bot/mcp/configuring-mcp-servers",
  ),
  {
    // Its own file, not the extension's: the CLI (npm package `cline`) reads only this one.
    id: "cline-cli",
    displayName: "Cline CLI",
    format: "json",
    configPath: clineCliSettings,
    installMarkers: (ctx) => [clineCliDir(ctx), clineCliDataDir(ctx)],
    collection: mcpServers,
    transports: BOTH,
    // The form `cline mcp add` writes (the flat one of the extension is read too, as legacy).
    entry: (workload) => ({
      value: { transport: { type: workload.transport === "sse" ? "sse" : "streamableHttp", url: workload.url } },
      managed: ["transport"],
    }),
    docs: "https://docs.cline.bot/cline-cli/getting-started",
  },
  vscodeExtension(
    "roo-code",
    "Roo Code",
    "rooveterinaryinc.roo-cline",
    "mcp_settings.json",
    { "streamable-http": "streamable-http", sse: "sse" },
    "https://docs.roocode.com/features/mcp/using-mcp-in-roo",
  ),
  {
    id: "continue",
    displayName: "Continue",
    format: "yaml",
    configPath: (ctx) => joinPath(ctx, continueHome(ctx), "config.yaml"),
    installMarkers: (ctx) => [continueHome(ctx)],
    collection: () => ({ kind: "list", path: ["mcpServers"], nameKey: "name" }),
    transports: BOTH,
    entry: (workload) => ({
      value: { name: workload.name, type: workload.transport, url: workload.url },
      managed: ["name", "type", "url"],
    }),
    // A new config.yaml must name itself; Continue rejects one without these.
    newFileText: "name: Local Config\nversion: 1.0.0\nschema: v1\n",
    refuse: (ctx, exists) => {
      const yaml = joinPath(ctx, continueHome(ctx), "config.yaml");
      const json = joinPath(ctx, continueHome(ctx), "config.json");
      // Continue reads config.yaml instead of config.json when both exist: creating it would hide the user's settings.
      return !exists(yaml) && exists(json)
        ? `${json} is Continue's old configuration format; mcpmgr writes config.yaml, which would replace it (migrate to config.yaml first: https://docs.continue.dev/reference/yaml-migration)`
        : undefined;
    },
    docs: "https://docs.continue.dev/customize/deep-dives/mcp",
  },
  {
    id: "goose",
    displayName: "Goose",
    format: "yaml",
    configPath: (ctx) => joinPath(ctx, gooseDir(ctx), "config.yaml"),
    installMarkers: (ctx) => [gooseDir(ctx)],
    collection: () => ({ kind: "map", path: ["extensions"] }),
    // Goose dropped SSE extensions: streamable_http, stdio, builtin and platform remain.
    transports: HTTP_ONLY,
    entry: (workload) => ({
      value: {
        type: "streamable_http",
        name: workload.name,
        uri: workload.url,
        enabled: true,
        description: `mcpmgr workload ${workload.name}`,
        timeout: 300,
        headers: {},
        envs: {},
        env_keys: [],
      },
      managed: ["type", "name", "uri"],
    }),
    docs: "https://block.github.io/goose/docs/guides/config-files",
  },
  {
    id: "zed",
    displayName: "Zed",
    format: "jsonc",
    configPath: (ctx) => joinPath(ctx, zedDir(ctx), "settings.json"),
    installMarkers: (ctx) => [zedDir(ctx)],
    collection: () => ({ kind: "map", path: ["context_servers"] }),
    transports: HTTP_ONLY,
    entry: urlOnly("url"),
    docs: "https://zed.dev/docs/ai/mcp",
  },
  {
    id: "codex",
    displayName: "Codex CLI",
    format: "toml",
    configPath: (ctx) => joinPath(ctx, codexHome(ctx), "config.toml"),
    installMarkers: (ctx) => [codexHome(ctx)],
    collection: () => ({ kind: "map", path: ["mcp_servers"] }),
    // Codex speaks stdio and streamable HTTP only.
    transports: HTTP_ONLY,
    entry: urlOnly("url"),
    docs: "https://developers.openai.com/codex/mcp",
  },
  {
    id: "gemini-cli",
    displayName: "Gemini CLI",
    format: "json",
    configPath: (ctx) => inHome(ctx, ".gemini", "settings.json"),
    installMarkers: (ctx) => [inHome(ctx, ".gemini")],
    collection: mcpServers,
    transports: BOTH,
    entry: geminiEntry,
    docs: "https://geminicli.com/docs/tools/mcp-server",
  },
  {
    id: "opencode",
    displayName: "opencode",
    format: "jsonc",
    // opencode.json, or opencode.jsonc when that is the one the user has.
    configPath: (ctx) => {
      const json = joinPath(ctx, opencodeDir(ctx), "opencode.json");
      const jsonc = joinPath(ctx, opencodeDir(ctx), "opencode.jsonc");
      return !existsSync(json) && existsSync(jsonc) ? jsonc : json;
    },
    installMarkers: (ctx) => [opencodeDir(ctx)],
    // opencode 2 keeps servers under mcp.servers and still reads opencode 1's servers straight under mcp.
    collection: (valueAt) => {
      // A "servers" that is there but no object is a broken opencode 2 collection (an opencode 1 server
      // is an object): refused with a warning, as every client's, not written around in the other layout.
      const servers = valueAt(["mcp", "servers"]);
      const v2 = servers !== undefined;
      return { kind: "map", path: v2 ? ["mcp", "servers"] : ["mcp"] };
    },
    transports: BOTH,
    entry: (workload) => ({ value: { type: "remote", url: workload.url }, managed: ["type", "url"] }),
    docs: "https://opencode.ai/docs/mcp-servers",
  },
  {
    id: "lm-studio",
    displayName: "LM Studio",
    format: "json",
    configPath: (ctx) => inHome(ctx, ".lmstudio", "mcp.json"),
    installMarkers: (ctx) => [inHome(ctx, ".lmstudio")],
    collection: mcpServers,
    transports: BOTH,
    entry: urlOnly("url"),
    docs: "https://lmstudio.ai/docs/app/mcp",
  },
  {
    id: "qwen-code",
    displayName: "Qwen Code",
    format: "json",
    // User scope; a project's .qwen/settings.json is never touched.
    configPath: (ctx) => inHome(ctx, ".qwen", "settings.json"),
    installMarkers: (ctx) => [inHome(ctx, ".qwen")],
    collection: mcpServers,
    transports: BOTH,
    entry: geminiEntry,
    docs: "https://qwenlm.github.io/qwen-code-docs/en/users/features/mcp/",
  },
];

const byId = new Map(definitions.map((definition) => [definition.id, definition]));

export function allClients(): readonly ClientDefinition[] {
  return definitions;
}

export function isClientId(text: string): text is ClientId {
  return (CLIENT_IDS as readonly string[]).includes(text);
}

export function clientById(id: ClientId): ClientDefinition {
  return byId.get(id) as ClientDefinition;
}
