/**
 * The vocabulary of AI-client configuration: what a workload looks like to a client, what a
 * client is (where its file lives, how servers are written in it), and the context every
 * function gets injected (home, platform, environment, mcpmgr's folders, a logger) so the
 * whole module is testable for Linux, macOS and Windows from any machine.
 */
import type { Env, McpmgrPaths } from "../state/paths.ts";

/** The transports an MCP client can reach a workload's proxy with. */
export type RemoteTransport = "streamable-http" | "sse";

/** A running workload as clients see it. */
export interface WorkloadEndpoint {
  readonly name: string;
  readonly group: string;
  readonly url: string;
  readonly transport: RemoteTransport;
  /** The group's background gateway: only clients that reach the group through its gateway get it. */
  readonly gateway?: boolean;
  /** A foreground run (no workload record): the process serving it, whose life is the entry's. */
  readonly pid?: number;
  /**
   * When the recorded workload was created: which workload of that name this is. Keys the user
   * added to its entry come back after a stop only for the same one, never for a workload removed
   * and run again under its name (another server, whose tools the user never approved).
   */
  readonly createdAt?: string;
}

export interface ClientLogger {
  warn(message: string): void;
  info(message: string): void;
}

export interface ClientContext {
  readonly home: string;
  readonly platform: NodeJS.Platform;
  readonly env: Env;
  readonly paths: McpmgrPaths;
  readonly log: ClientLogger;
  /**
   * How a client starts this mcpmgr: the absolute executable, plus the script for a source
   * run (`bun /abs/src/main.ts`). Only stdio entries (Claude Desktop) use it.
   */
  readonly selfCommand: readonly string[];
  /**
   * Warn about a broken client file even when its state was warned about before, and remember nothing
   * (broken-file-notice.ts): `client register`, where the user asked about that client, and a supervisor,
   * whose warnings go to a log the terminal's command must not be silenced by.
   */
  readonly alwaysWarn?: boolean;
  /** Said when a stdio entry is written: why `selfCommand` may not outlive this run (npx's cache, bunx's temporary folder). */
  readonly selfCommandCaveat?: string;
}

export type ConfigFormat = "json" | "jsonc" | "yaml" | "toml";

/** Where servers live in a client's file. */
export type ServerCollection =
  /** An object keyed by server name: `{"mcpServers": {"NAME": {...}}}`. */
  | { readonly kind: "map"; readonly path: readonly string[] }
  /** A list of objects that carry their name: `mcpServers: [{name: NAME, ...}]`. */
  | { readonly kind: "list"; readonly path: readonly string[]; readonly nameKey: string };

/**
 * One server entry as mcpmgr writes it. `value` is the whole entry for a new one; of it only
 * the `managed` keys are kept in sync afterwards (the URL, the transport). The rest are
 * written once and then left to the user and the client (Goose's `enabled` toggle).
 */
export interface EntryShape {
  readonly value: Readonly<Record<string, unknown>>;
  readonly managed: readonly string[];
}

export const CLIENT_IDS = [
  "claude-code",
  "claude-desktop",
  "cursor",
  "vscode",
  "vscode-insiders",
  "windsurf",
  "cline",
  "cline-cli",
  "roo-code",
  "continue",
  "goose",
  "zed",
  "codex",
  "gemini-cli",
  "opencode",
  "lm-studio",
  "qwen-code",
] as const;
export type ClientId = (typeof CLIENT_IDS)[number];

export interface ClientDefinition {
  readonly id: ClientId;
  readonly displayName: string;
  readonly format: ConfigFormat;
  /** The file mcpmgr edits, for ctx.platform. */
  configPath(ctx: ClientContext): string;
  /** Folders whose existence means the client is installed (any one is enough). */
  installMarkers(ctx: ClientContext): readonly string[];
  /**
   * Where servers live; `valueAt` reads a value of the file (as plain data, undefined when
   * missing), for clients whose layout depends on its version.
   */
  collection(valueAt: (path: readonly string[]) => unknown): ServerCollection;
  /** The transports its configuration can express, for a workload's URL. */
  readonly transports: readonly RemoteTransport[];
  /** True when it only starts servers as processes: its entry runs `mcpmgr proxy stdio NAME`. */
  readonly stdioOnly?: boolean;
  entry(workload: WorkloadEndpoint, ctx: ClientContext): EntryShape;
  /** The text a new file starts from, when the client needs more than the servers in it. */
  newFileText?: string;
  /** Why mcpmgr must not touch the file at all right now (e.g. a legacy config would be shadowed). */
  refuse?(ctx: ClientContext, exists: (path: string) => boolean): string | undefined;
  /** Where the format is documented (docs/clients.md cites it too). */
  readonly docs: string;
}
