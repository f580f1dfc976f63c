/**
 * `mcpmgr registry list|search|info`: browse the servers `mcpmgr run <name>` knows, from the
 * embedded catalog and the custom registry (MCPMGR_REGISTRY or "registry" in config.json).
 * `--format json` prints documents that are themselves valid registry input: `list` prints
 * {"servers": [...]} (`search` too, best match first) and `info` one entry, so either can seed a
 * custom registry file. `search` loads its index (registry-search.ts) only when it runs.
 */
import { defineCommand } from "citty";
import { parseArgv } from "../config/argv.ts";
import { formatOptions, registrySearchOptions } from "../config/command-options.ts";
import { McpmgrError } from "../errors.ts";
import { excerpt, printable } from "../printable.ts";
import { customRegistrySource, loadRegistry, type Registry } from "../registry/loader.ts";
import { embeddedTableText } from "../registry/embedded-table.ts" with { type: "macro" };
import { entryDetails, entryTable } from "../registry/describe.ts";
import { resolvePaths } from "../state/paths.ts";
import { routingCommand, toCittyArgs, withExamples } from "./citty-args.ts";
import { log, printLines, printResult } from "./output.ts";

async function openRegistry(): Promise<Registry> {
  const registry = await loadRegistry({ env: process.env, configDir: resolvePaths(process.env).configDir, fetch });
  if (registry.custom !== undefined)
    log.debug(`custom registry ${registry.custom.location} (from ${registry.custom.configuredBy})`);
  return registry;
}

const listCommand = defineCommand({
  meta: { name: "list", description: "List the servers in the registry" },
  args: toCittyArgs(formatOptions),
  async run({ rawArgs }) {
    const { values, positionals } = parseArgv(rawArgs, formatOptions, "registry list", false);
    if (positionals.length > 0) {
      throw new McpmgrError(
        "INVALID_ARGUMENT",
        `'mcpmgr registry list' takes no arguments (got ${positionals.join(" ")})`,
        {
          // The word is the user's: offered back only when it could be a registry name, never as shell text.
          hint: `to see one server, run 'mcpmgr registry info ${/^[A-Za-z0-9][A-Za-z0-9._/-]*$/.test(positionals[0] ?? "") ? positionals[0] : "NAME"}'`,
        },
      );
    }
    // The embedded catalog alone: its table was made when mcpmgr was built (embedded-table.ts).
    if (
      values.format !== "json" &&
      (await customRegistrySource({ env: process.env, configDir: resolvePaths(process.env).configDir })) === undefined
    ) {
      printResult(embeddedTableText());
      return;
    }
    const registry = await openRegistry();
    const entries = registry.list();
    if (values.format === "json") {
      printResult(JSON.stringify({ servers: entries }, null, 2));
      return;
    }
    printLines(entryTable(entries, registry));
    if (registry.custom !== undefined) {
      const count = entries.filter((entry) => registry.origin(entry.name) === "custom").length;
      log.info(
        `${count} of ${entries.length} servers (marked *) come from the custom registry ${registry.custom.location}`,
      );
    }
  },
});

const QUERY_MISSING = {
  message: "'mcpmgr registry search' needs words to look for",
  hint: "for example 'mcpmgr registry search github issues'; 'mcpmgr registry list' shows every server",
};

const searchCommand = defineCommand({
  meta: { name: "search", description: "Find servers in the registry by name, description, tags or tools" },
  args: toCittyArgs(registrySearchOptions, {
    WORDS: {
      description: "What to look for: one or more words",
      required: true,
      variadic: true,
      whenMissing: QUERY_MISSING,
    },
  }),
  async run({ rawArgs }) {
    const { values, positionals } = parseArgv(rawArgs, registrySearchOptions, "registry search", false);
    const query = positionals.join(" ").trim();
    if (query === "") throw new McpmgrError("MISSING_OPTION", QUERY_MISSING.message, { hint: QUERY_MISSING.hint });
    const registry = await openRegistry();
    const entries = registry.list();
    const { searchRegistry, serverNameSuggestion } = await import("./registry-search.ts");
    const found = searchRegistry(entries, query, values.limit);
    const suggestion = serverNameSuggestion(
      query,
      entries.map((entry) => entry.name),
      found,
    );
    if (values.format === "json") printResult(JSON.stringify({ servers: found }, null, 2));
    else if (found.length > 0) printLines(entryTable(found, registry));
    // Messages on stderr, so stdout stays the table (or the JSON) alone.
    // The query's start, on one line: a pasted page is not echoed back whole.
    if (found.length === 0)
      log.info(
        `no server in the registry matches '${printable(excerpt(query, 80))}'; 'mcpmgr registry list' shows all ${entries.length}`,
      );
    if (suggestion !== undefined) log.info(suggestion);
  },
});

const NAME_MISSING = {
  message: "'mcpmgr registry info' needs a server name",
  hint: "run 'mcpmgr registry list' to see the names",
};

const infoCommand = defineCommand({
  meta: { name: "info", description: "Show everything the registry says about one server" },
  args: toCittyArgs(formatOptions, {
    NAME: {
      description: "Server name (see 'mcpmgr registry list')",
      required: true,
      completes: "servers",
      whenMissing: NAME_MISSING,
    },
  }),
  async run({ rawArgs }) {
    const { values, positionals } = parseArgv(rawArgs, formatOptions, "registry info", false);
    const [name, ...extra] = positionals;
    if (name === undefined) throw new McpmgrError("MISSING_OPTION", NAME_MISSING.message, { hint: NAME_MISSING.hint });
    if (extra.length > 0) {
      throw new McpmgrError(
        "INVALID_ARGUMENT",
        `'mcpmgr registry info' takes one server name (got ${positionals.join(" ")})`,
        { hint: "ask for one server at a time" },
      );
    }
    const registry = await openRegistry();
    const entry = registry.get(name);
    if (values.format === "json") {
      printResult(JSON.stringify(entry, null, 2));
      return;
    }
    printLines(await entryDetails(entry, registry));
  },
});

const registryCommand = routingCommand(
  {
    meta: {
      name: "registry",
      description: "Browse the MCP server registry (embedded catalog plus your custom registry)",
    },
    subCommands: {
      list: withExamples(listCommand, [
        { description: "Every server 'mcpmgr run NAME' knows", command: "mcpmgr registry list" },
        {
          description: "As a registry document, to start a custom registry from",
          command: "mcpmgr registry list --format json",
        },
      ]),
      search: withExamples(searchCommand, [
        { description: "Servers for GitHub issues", command: "mcpmgr registry search github issues" },
        {
          description: "The three best matches as JSON",
          command: "mcpmgr registry search browser --limit 3 --format json",
        },
      ]),
      info: withExamples(infoCommand, [
        { description: "What the server 'github' needs and is allowed", command: "mcpmgr registry info github" },
        { description: "Its entry as JSON", command: "mcpmgr registry info github --format json" },
      ]),
    },
  },
  () =>
    new McpmgrError("INVALID_ARGUMENT", "'mcpmgr registry' needs a subcommand: list, search or info", {
      hint: "try 'mcpmgr registry list'",
    }),
);

export default withExamples(registryCommand, [
  { description: "Every server the registry knows", command: "mcpmgr registry list" },
  { description: "The servers that have to do with web pages", command: "mcpmgr registry search web page" },
  { description: "Everything about one of them", command: "mcpmgr registry info fetch" },
]);
