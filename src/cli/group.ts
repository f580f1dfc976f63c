/**
 * `mcpmgr group create|list|rm`: named collections of workloads. `default` always exists;
 * `run --group` only accepts a group that exists; AI clients are registered per group.
 */
import { defineCommand } from "citty";
import { ClientConfigSync } from "../clients/sync.ts";
import { parseArgv } from "../config/argv.ts";
import { booleanOption, type OptionTable, stringOption } from "../config/option-spec.ts";
import { oneOf } from "../config/values.ts";
import { McpmgrError } from "../errors.ts";
import { ClientRegistrationStore } from "../state/client-registrations.ts";
import { GroupStore } from "../state/groups.ts";
import { toCittyArgs } from "./citty-args.ts";
import { cliClientContext } from "./client-context.ts";
import { log, printResult, printTable } from "./output.ts";
import { stopSupervisor } from "./supervisor-control.ts";
import { openStore } from "./workload-arg.ts";

const noOptions = {} as const satisfies OptionTable;
const listOptions = {
  format: stringOption({
    description: "Output format: text or json",
    valueHint: "text|json",
    default: "text",
    schema: oneOf(["text", "json"] as const),
  }),
} as const satisfies OptionTable;
const rmOptions = {
  "with-workloads": booleanOption({
    description: "Also stop and remove the group's workloads (a group with workloads is refused without it)",
    default: false,
  }),
} as const satisfies OptionTable;

const nameArg = { NAME: { description: "Group name (lowercase letters, digits and '-')", required: true } };

function openGroups(): GroupStore {
  return new GroupStore(openStore().paths);
}

/** The one NAME a subcommand takes. */
function groupName<T extends OptionTable>(rawArgs: readonly string[], table: T, command: string) {
  const parsed = parseArgv(rawArgs, table, command, false);
  const [name, ...rest] = [...parsed.positionals, ...parsed.passthrough];
  if (name === undefined) {
    throw new McpmgrError("MISSING_OPTION", "missing the group NAME", { hint: `usage: mcpmgr ${command} NAME` });
  }
  if (rest.length > 0) {
    throw new McpmgrError("INVALID_ARGUMENT", `unexpected argument ${JSON.stringify(rest[0])}`, {
      hint: `usage: mcpmgr ${command} NAME`,
    });
  }
  return { ...parsed, name };
}

const create = defineCommand({
  meta: { name: "create", description: "Create a group" },
  args: toCittyArgs(noOptions, nameArg),
  async run({ rawArgs }) {
    const { name } = groupName(rawArgs, noOptions, "group create");
    await openGroups().create(name);
    log.success(`created group ${name} (run workloads in it with 'mcpmgr run ... --group ${name}')`);
  },
});

const list = defineCommand({
  meta: { name: "list", description: "List the groups, their workloads and the AI clients registered for them" },
  args: toCittyArgs(listOptions),
  async run({ rawArgs }) {
    const parsed = parseArgv(rawArgs, listOptions, "group list", false);
    if (parsed.positionals.length > 0) {
      throw new McpmgrError("INVALID_ARGUMENT", "'mcpmgr group list' takes no arguments", {
        hint: "run 'mcpmgr group list' or 'mcpmgr group list --format json'",
      });
    }
    const store = openStore();
    const registrations = await new ClientRegistrationStore(store.paths).read();
    const clientsOf = (group: string) =>
      Object.entries(registrations.clients)
        .filter(([, record]) => record.groups.includes(group))
        .map(([client]) => client)
        .sort();
    const rows = (await new GroupStore(store.paths).list()).map((group) => ({
      name: group.name,
      workloads: group.workloads,
      clients: clientsOf(group.name),
      ...(group.createdAt ? { createdAt: group.createdAt } : {}),
    }));
    if (parsed.values.format === "json") return printResult(JSON.stringify(rows, null, 2));
    printTable(
      ["NAME", "WORKLOADS", "CLIENTS"],
      rows.map((row) => [row.name, String(row.workloads.length), row.clients.join(",") || "-"]),
    );
  },
});

const rm = defineCommand({
  meta: { name: "rm", description: "Remove a group (refused while it has workloads, unless --with-workloads)" },
  args: toCittyArgs(rmOptions, nameArg),
  async run({ rawArgs }) {
    const { name, values } = groupName(rawArgs, rmOptions, "group rm");
    const store = openStore();
    const groups = new GroupStore(store.paths, { workloads: store });
    const group = await groups.removable(name, { withWorkloads: values["with-workloads"] });
    for (const workload of group.workloads) {
      await stopSupervisor(store, workload).catch(() => false);
      await store.remove(workload);
      log.info(`removed workload ${workload}`);
    }
    // Its entries go from every AI client following it, and no client follows it any more.
    await new ClientConfigSync(cliClientContext()).forgetGroup(name);
    await groups.remove(name);
    log.success(`removed group ${name}`);
  },
});

const subCommands = { create, list, rm };

export default defineCommand({
  meta: { name: "group", description: "Manage groups of workloads" },
  subCommands,
  // citty runs this after a subcommand too; it only has work when none was named.
  run({ rawArgs }) {
    const first = rawArgs.find((arg) => !arg.startsWith("-"));
    if (first !== undefined && Object.hasOwn(subCommands, first)) return;
    throw new McpmgrError("INVALID_ARGUMENT", "no group command given", {
      hint: "use 'mcpmgr group create|list|rm', see 'mcpmgr group --help'",
    });
  },
});
