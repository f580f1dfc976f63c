/**
 * `mcpmgr group create|list|rm`: named collections of workloads. `default` always exists;
 * `run --group` only accepts a group that exists; AI clients are registered per group.
 */
import { defineCommand } from "citty";
import { parseArgv } from "../config/argv.ts";
import { formatOptions as listOptions, groupRmOptions as rmOptions, noOptions } from "../config/command-options.ts";
import { McpmgrError } from "../errors.ts";
import { GroupStore } from "../state/groups.ts";
import { groupOverview, removeGroup } from "../workload/groups.ts";
import { routingCommand, toCittyArgs, withExamples } from "./citty-args.ts";
import { cliContext } from "./context.ts";
import { log, printResult, printTable } from "./output.ts";
import { openStore, parseNamed } from "./workload-arg.ts";

const groupName = { what: "group NAME", afterDashes: true } as const;

const nameArg = { NAME: { description: "Group name (lowercase letters, digits and '-')", required: true } };
// `default` cannot be removed: not offered.
const existingGroupArg = { NAME: { ...nameArg.NAME, completes: "removable-groups" } } as const;

function openGroups(): GroupStore {
  return new GroupStore(openStore().paths);
}

const create = withExamples(
  defineCommand({
    meta: { name: "create", description: "Create a group" },
    args: toCittyArgs(noOptions, nameArg),
    async run({ rawArgs }) {
      const { name } = parseNamed(rawArgs, noOptions, "group create", groupName);
      await openGroups().create(name);
      log.success(`created group ${name} (run workloads in it with 'mcpmgr run ... --group ${name}')`);
    },
  }),
  [
    { description: "Create the group 'work'", command: "mcpmgr group create work" },
    { description: "Run a workload in it", command: "mcpmgr run github --group work" },
  ],
);

const list = withExamples(
  defineCommand({
    meta: { name: "list", description: "List the groups, their workloads and the AI clients registered for them" },
    args: toCittyArgs(listOptions),
    async run({ rawArgs }) {
      const parsed = parseArgv(rawArgs, listOptions, "group list", false);
      if (parsed.positionals.length > 0) {
        throw new McpmgrError("INVALID_ARGUMENT", "'mcpmgr group list' takes no arguments", {
          hint: "run 'mcpmgr group list' or 'mcpmgr group list --format json'",
        });
      }
      const rows = await groupOverview(openStore().paths);
      if (parsed.values.format === "json") return printResult(JSON.stringify(rows, null, 2));
      printTable(
        ["NAME", "WORKLOADS", "CLIENTS"],
        rows.map((row) => [row.name, String(row.workloads.length), row.clients.join(",") || "-"]),
      );
    },
  }),
  [
    { description: "The groups, how many workloads each has and its AI clients", command: "mcpmgr group list" },
    { description: "With the workloads' names, as JSON", command: "mcpmgr group list --format json" },
  ],
);

const rm = withExamples(
  defineCommand({
    meta: { name: "rm", description: "Remove a group (refused while it has workloads, unless --with-workloads)" },
    args: toCittyArgs(rmOptions, existingGroupArg),
    async run({ rawArgs }) {
      const { name, values } = parseNamed(rawArgs, rmOptions, "group rm", groupName);
      // Its workloads go (when asked), its entries leave every AI client following it, then the group.
      await removeGroup(name, { withWorkloads: values["with-workloads"] }, cliContext());
      log.success(`removed group ${name}`);
    },
  }),
  [
    { description: "Remove the empty group 'work'", command: "mcpmgr group rm work" },
    { description: "Remove it with its workloads", command: "mcpmgr group rm work --with-workloads" },
  ],
);

const subCommands = { create, list, rm };

const groupCommand = routingCommand({
  meta: { name: "group", description: "Manage groups of workloads" },
  subCommands,
});

export default withExamples(groupCommand, [
  { description: "Create the group 'work'", command: "mcpmgr group create work" },
  { description: "See the groups and their AI clients", command: "mcpmgr group list" },
  { description: "Serve the group on one endpoint", command: "mcpmgr gateway work --detach" },
]);
