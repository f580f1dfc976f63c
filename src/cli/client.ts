/**
 * `mcpmgr client status|register|remove|list-registered-clients|setup`: AI clients (Claude
 * Code, Cursor, VS Code, ...) follow groups, and mcpmgr keeps their configuration files in
 * step with the group's running workloads. The logic is in workload/client-registration.ts
 * and src/clients; this is argv, the setup questions and printing.
 */
import { defineCommand } from "citty";
import { warnedInThisRun } from "../clients/broken-file-notice.ts";
import { clientById, isClientId } from "../clients/catalog.ts";
import { CLIENT_IDS, type ClientId } from "../clients/types.ts";
import { parseArgv } from "../config/argv.ts";
import {
  clientRegisterOptions as registerOptions,
  clientRemoveOptions as removeOptions,
  formatOptions as statusOptions,
  noOptions,
} from "../config/command-options.ts";
import type { OptionTable } from "../config/option-spec.ts";
import { closeMatches, didYouMean } from "../close-matches.ts";
import { McpmgrError } from "../errors.ts";
import { DEFAULT_GROUP } from "../state/groups.ts";
import {
  clientStatus,
  groupNames,
  installedClientIds,
  registerClient,
  unregisterClient,
} from "../workload/client-registration.ts";
import { registeredClients } from "../workload/groups.ts";
import { routingCommand, toCittyArgs, withExamples } from "./citty-args.ts";
import { cliContext } from "./context.ts";
import { log, printResult, printTable } from "./output.ts";
import { openStore, parseNamed } from "./workload-arg.ts";

/** A followed group as the GROUPS column shows it: `team (gateway)` when reached through its gateway. */
function groupCell(groups: readonly string[], viaGateway: readonly string[]): string {
  return groups.map((group) => (viaGateway.includes(group) ? `${group} (gateway)` : group)).join(",") || "-";
}

const clientArg = {
  CLIENT: { description: `AI client: ${CLIENT_IDS.join(", ")}`, required: true, completes: CLIENT_IDS },
};

function noArguments(positionals: readonly string[], command: string): void {
  if (positionals.length > 0) {
    throw new McpmgrError("INVALID_ARGUMENT", `'mcpmgr ${command}' takes no arguments`, {
      hint: `see 'mcpmgr ${command} --help'`,
    });
  }
}

/**
 * What people call some clients, which spelling alone maps wrongly or not at all: `code` (VS Code's command)
 * is nearest to codex, and `claude` to neither Claude client in particular.
 */
const CLIENT_NICKNAMES: Readonly<Record<string, readonly string[]>> = {
  code: ["vscode"],
  "vs-code": ["vscode"],
  copilot: ["vscode"],
  "github-copilot": ["vscode"],
  "code-insiders": ["vscode-insiders"],
  claude: ["claude-code", "claude-desktop"],
  "claude-cli": ["claude-code"],
  gemini: ["gemini-cli"],
  qwen: ["qwen-code"],
  roo: ["roo-code"],
  lmstudio: ["lm-studio"],
};

/** The one CLIENT argument, checked against the supported clients. */
function clientFrom<T extends OptionTable>(rawArgs: readonly string[], table: T, command: string) {
  const parsed = parseNamed(rawArgs, table, command, { what: "CLIENT", afterDashes: true });
  if (!isClientId(parsed.name)) {
    // The nearest name first, as for mistyped commands and registry names (shell-completion.md).
    // An own key only: "constructor" or "__proto__" looked up the object's prototype (an unexpected error).
    const nickname = parsed.name.toLowerCase();
    const suggestion = didYouMean(
      (Object.hasOwn(CLIENT_NICKNAMES, nickname) ? CLIENT_NICKNAMES[nickname] : undefined) ??
        closeMatches(parsed.name, CLIENT_IDS, { nearestOnly: true }),
    );
    throw new McpmgrError("INVALID_ARGUMENT", `${JSON.stringify(parsed.name)} is not a client mcpmgr knows`, {
      hint: suggestion
        ? `${suggestion} 'mcpmgr client status' lists every client mcpmgr knows`
        : `use one of ${CLIENT_IDS.join(", ")}; 'mcpmgr client status' shows which are installed`,
    });
  }
  return { ...parsed, client: parsed.name };
}

const status = defineCommand({
  meta: {
    name: "status",
    description: "Show every supported AI client: installed or not, its groups, its config file",
  },
  args: toCittyArgs(statusOptions),
  async run({ rawArgs }) {
    const parsed = parseArgv(rawArgs, statusOptions, "client status", false);
    noArguments(parsed.positionals, "client status");
    // Entries of workloads that no longer run (a killed supervisor) go first, so the status is true.
    const rows = await clientStatus(cliContext());
    // A broken file is warned about once by start and stop; here, every time (unless the prune above just did).
    for (const row of rows) {
      if (row.problem !== undefined && !warnedInThisRun(row.configPath))
        log.warn(`${row.displayName} (${row.configPath}): ${row.problem}`);
    }
    if (parsed.values.format === "json") return printResult(JSON.stringify(rows, null, 2));
    printTable(
      ["CLIENT", "INSTALLED", "GROUPS", "CONFIG"],
      rows.map((row) => [row.id, row.installed ? "yes" : "no", groupCell(row.groups, row.viaGateway), row.configPath]),
    );
  },
});

async function register(client: ClientId, group: string, gateway = false): Promise<void> {
  const { displayName, file, written, skipped } = await registerClient(client, group, { gateway }, cliContext());
  // Workloads that could not be written were warned about: the last line must not say none runs.
  const notes = [
    ...(written > 0 ? [`${written} running workload(s) in ${file}`] : []),
    ...(skipped > 0 ? [`${skipped} running workload(s) not written, see the warning above`] : []),
  ];
  const outcome = notes.length > 0 ? ` (${notes.join("; ")})` : " (no workload of it runs yet)";
  log.success(
    gateway
      ? `${displayName} reaches group ${group} through its gateway (${skipped > 0 ? "not written, see the warning above" : `in ${file}`})`
      : `${displayName} follows group ${group}${outcome}`,
  );
}

const registerCommand = defineCommand({
  meta: {
    name: "register",
    description:
      "Let an AI client follow a group: its running workloads are written into the client's configuration (a client not installed here is refused)",
  },
  args: toCittyArgs(registerOptions, clientArg),
  async run({ rawArgs }) {
    const { client, values } = clientFrom(rawArgs, registerOptions, "client register");
    await register(client, values.group, values.gateway);
  },
});

const remove = defineCommand({
  meta: {
    name: "remove",
    description: "Stop an AI client following a group (every group without --group); mcpmgr's entries go",
  },
  args: toCittyArgs(removeOptions, clientArg),
  async run({ rawArgs }) {
    const { client, values } = clientFrom(rawArgs, removeOptions, "client remove");
    const left = await unregisterClient(client, values.group, cliContext());
    const name = clientById(client).displayName;
    if (left.length === 0) return log.info(`${name} follows no group; nothing changed`);
    log.success(`${name} no longer follows group${left.length > 1 ? "s" : ""} ${left.join(", ")}`);
  },
});

const listRegistered = defineCommand({
  meta: {
    name: "list-registered-clients",
    description: "List the AI clients registered for any group, with the groups each follows",
  },
  args: toCittyArgs(statusOptions),
  async run({ rawArgs }) {
    const parsed = parseArgv(rawArgs, statusOptions, "client list-registered-clients", false);
    noArguments(parsed.positionals, "client list-registered-clients");
    const rows = await registeredClients(openStore().paths);
    if (parsed.values.format === "json") return printResult(JSON.stringify(rows, null, 2));
    if (rows.length === 0) return log.info("no AI client is registered (see 'mcpmgr client register --help')");
    printTable(
      ["CLIENT", "GROUPS"],
      rows.map((row) => [row.client, groupCell(row.groups, row.viaGateway)]),
    );
  },
});

const setup = defineCommand({
  meta: { name: "setup", description: "Choose installed AI clients and a group interactively, and register them" },
  args: toCittyArgs(noOptions),
  async run({ rawArgs }) {
    const parsed = parseArgv(rawArgs, noOptions, "client setup", false);
    noArguments(parsed.positionals, "client setup");
    const ctx = cliContext();
    const installed = installedClientIds(ctx);
    // client register refuses a client that is not installed: none to offer.
    if (installed.length === 0)
      throw new McpmgrError("INVALID_ARGUMENT", "no supported AI client looks installed here", {
        hint: "install one and start it once (it makes its folder), then run 'mcpmgr client setup' again; 'mcpmgr client status' lists the clients mcpmgr knows",
      });
    if (!process.stdin.isTTY || !process.stderr.isTTY) {
      throw new McpmgrError(
        "MISSING_OPTION",
        "'mcpmgr client setup' asks its questions in a terminal, and this is not one",
        {
          hint: `register each client instead: mcpmgr client register CLIENT [--group GROUP] (installed here: ${installed.join(", ")})`,
        },
      );
    }
    const { createConsola } = await import("consola");
    const ask = createConsola({ stdout: process.stderr, stderr: process.stderr });
    const chosen = await ask.prompt("Which AI clients should follow a group?", {
      type: "multiselect",
      options: installed.map((id) => ({ value: id, label: clientById(id).displayName, hint: id })),
      required: false,
      cancel: "symbol",
    });
    if (typeof chosen === "symbol") throw cancelledError();
    const clients = (chosen as unknown as readonly (string | { value: string })[]).map((item) =>
      typeof item === "string" ? item : item.value,
    );
    if (clients.length === 0) return log.info("no client chosen; nothing changed");
    const groups = await groupNames(ctx);
    const group =
      groups.length === 1
        ? DEFAULT_GROUP
        : await ask.prompt("Which group should they follow?", {
            type: "select",
            options: groups,
            initial: DEFAULT_GROUP,
            cancel: "symbol",
          });
    if (typeof group === "symbol") throw cancelledError();
    for (const client of clients) if (isClientId(client)) await register(client, String(group));
  },
});

function cancelledError(): McpmgrError {
  // 130, as for Ctrl-C at any prompt (the prompt takes the key, so no SIGINT ends the process).
  return new McpmgrError("CANCELLED", "setup cancelled; nothing changed", {
    hint: "run 'mcpmgr client setup' again, or 'mcpmgr client register CLIENT'",
    exitCode: 130,
  });
}

const subCommands = {
  status: withExamples(status, [
    {
      description: "Which AI clients are installed, what they follow, where their files are",
      command: "mcpmgr client status",
    },
    { description: "The same as JSON", command: "mcpmgr client status --format json" },
  ]),
  register: withExamples(registerCommand, [
    {
      description: "Let Claude Code follow the default group's running workloads",
      command: "mcpmgr client register claude-code",
    },
    { description: "Let Cursor follow the group 'work'", command: "mcpmgr client register cursor --group work" },
    {
      description: "Give VS Code the group's background gateway as its one entry",
      command: "mcpmgr client register vscode --group work --gateway",
    },
  ]),
  remove: withExamples(remove, [
    { description: "Cursor follows no group any more", command: "mcpmgr client remove cursor" },
    { description: "Only stop it following 'work'", command: "mcpmgr client remove cursor --group work" },
  ]),
  "list-registered-clients": withExamples(listRegistered, [
    { description: "The registered AI clients and their groups", command: "mcpmgr client list-registered-clients" },
    { description: "As JSON", command: "mcpmgr client list-registered-clients --format json" },
  ]),
  setup: withExamples(setup, [
    { description: "Pick clients and a group from menus, in a terminal", command: "mcpmgr client setup" },
    { description: "Without a terminal, register each client instead", command: "mcpmgr client register claude-code" },
  ]),
};

const clientCommand = routingCommand({
  meta: { name: "client", description: "Keep AI clients' MCP configuration in step with a group's workloads" },
  subCommands,
});

export default withExamples(clientCommand, [
  { description: "See which AI clients are installed and what they follow", command: "mcpmgr client status" },
  { description: "Let Claude Code follow the default group", command: "mcpmgr client register claude-code" },
  { description: "Choose clients interactively", command: "mcpmgr client setup" },
]);
