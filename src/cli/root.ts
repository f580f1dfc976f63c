/**
 * The `mcpmgr` root command. Each subcommand's module loads only when that subcommand runs
 * (or shows its own help); the root's help lists them from the summaries below, so
 * `mcpmgr --help` loads none of them. test/unit/root-command.test.ts checks every summary
 * against the meta of the command it stands for. Each command's examples live in its own
 * module; the root's, below, are those `mcpmgr --help` shows.
 */
import { defineCommand, type CommandDef } from "citty";
import { version } from "../version.ts";
import { type HelpSubCommands, withExamples, withSubCommandSummaries } from "./citty-args.ts";

interface Subcommand {
  readonly description: string;
  readonly hidden?: true;
  /**
   * Keeps running (serves MCP traffic, follows a log), or runs a hot loop long enough for the JIT to
   * pay (the overlay walk over tens of thousands of entries): the JIT gets its normal policy back when it loads.
   */
  readonly longRunning?: true;
  // biome-ignore lint/suspicious/noExplicitAny: citty's CommandDef is invariant in its args
  readonly load: () => Promise<CommandDef<any>>;
}

export const subcommands: Readonly<Record<string, Subcommand>> = {
  run: {
    longRunning: true,
    description:
      "Run an MCP server (registry name, image, npx:// uvx:// go:// package, exported config or URL) behind an HTTP proxy",
    load: () => import("./run.ts").then((m) => m.default),
  },
  proxy: {
    longRunning: true,
    description:
      "Run a transparent HTTP proxy in front of an MCP server endpoint (no workload is created); 'mcpmgr proxy stdio' relays one over stdio",
    load: () => import("./proxy.ts").then((m) => m.default),
  },
  gateway: {
    longRunning: true,
    description:
      "Serve one MCP endpoint for a group's running workloads (tools and prompts named <workload>_<name>), in the foreground or with --detach in the background",
    load: () => import("./gateway.ts").then((m) => m.default),
  },
  list: { description: "List workloads and their status", load: () => import("./list.ts").then((m) => m.default) },
  stop: {
    description: "Stop running workloads (NAME..., --all, --group)",
    load: () => import("./stop.ts").then((m) => m.default),
  },
  start: {
    description: "Start stopped workloads (NAME..., --all, --group)",
    load: () => import("./start.ts").then((m) => m.start),
  },
  restart: {
    description: "Stop and start workloads again (NAME..., --all, --group)",
    load: () => import("./start.ts").then((m) => m.restart),
  },
  rm: {
    description: "Remove workloads, stopping them first (NAME..., --all, --group)",
    load: () => import("./rm.ts").then((m) => m.default),
  },
  logs: {
    description:
      "Show a workload's logs: the server's output, each run opened by a timed 'mcpmgr: ---- NAME starts' line (a gateway's or a remote's: its proxy log)",
    longRunning: true,
    load: () => import("./logs.ts").then((m) => m.default),
  },
  export: {
    description: "Write a workload's configuration to a file",
    load: () => import("./export.ts").then((m) => m.default),
  },
  secret: {
    description: "Manage secrets for MCP servers (encrypted file or environment; see MCPMGR_SECRETS_PROVIDER)",
    load: () => import("./secret.ts").then((m) => m.default),
  },
  registry: {
    description: "Browse the MCP server registry (embedded catalog plus your custom registry)",
    load: () => import("./registry.ts").then((m) => m.default),
  },
  group: { description: "Manage groups of workloads", load: () => import("./group.ts").then((m) => m.default) },
  client: {
    description: "Keep AI clients' MCP configuration in step with a group's workloads",
    load: () => import("./client.ts").then((m) => m.default),
  },
  completion: {
    description: "Print the shell completion script for bash, zsh, fish or PowerShell",
    load: () => import("./completion.ts").then((m) => m.default),
  },
  version: {
    description: "Show the version, commit, build date and runtime (for bug reports)",
    load: () => import("./version.ts").then((m) => m.default),
  },
  __supervise: {
    description: "internal: serve a detached workload",
    hidden: true,
    longRunning: true,
    load: () => import("./supervise.ts").then((m) => m.default),
  },
  "__cedar-evaluator": {
    description: "internal: decide Cedar policies for every workload",
    hidden: true,
    longRunning: true,
    load: () => import("./cedar-evaluator.ts").then((m) => m.default),
  },
  "__resolve-overlays": {
    description: "internal: walk mounts for ignore overlays",
    hidden: true,
    longRunning: true,
    load: () => import("./resolve-overlays.ts").then((m) => m.default),
  },
  __complete: {
    description: "internal: names for shell completion",
    hidden: true,
    load: () => import("./complete-names.ts").then((m) => m.default),
  },
};

const entries = Object.entries(subcommands);

/**
 * The executable starts with JavaScriptCore's tier-up thresholds raised (scripts/compile.ts,
 * jitPolicy), so that a one-shot command runs in the interpreter and exits before any JIT
 * thread starts. A command that keeps running wants the JIT on its hot paths (the proxy):
 * the normal policy is back as soon as its module loads. (From source, the policy is normal.)
 */
function withNormalJit(load: Subcommand["load"]): Subcommand["load"] {
  return () => {
    Bun.unsafe.setJITPolicy(1);
    return load();
  };
}

const summaries: HelpSubCommands = Object.fromEntries(
  entries.map(([name, { description, hidden }]) => [name, { meta: { name, description, hidden } }]),
);

export const rootCommand = withExamples(
  withSubCommandSummaries(
    defineCommand({
      meta: {
        name: "mcpmgr",
        version,
        description: "Run MCP servers safely behind a fast streaming proxy",
      },
      args: {
        help: { type: "boolean", alias: "h", description: "Show this help" },
        debug: { type: "boolean", description: "Print debug output", default: false },
        version: { type: "boolean", description: "Print the version and exit" },
      },
      subCommands: Object.fromEntries(
        entries.map(([name, { load, longRunning }]) => [name, longRunning ? withNormalJit(load) : load]),
      ),
    }),
    summaries,
  ),
  [
    { description: "Run the fetch server from the registry in the background", command: "mcpmgr run fetch" },
    { description: "See what runs, and the URL MCP clients use", command: "mcpmgr list" },
    {
      description: "Let Claude Code follow the workloads of the default group",
      command: "mcpmgr client register claude-code",
    },
  ],
);
