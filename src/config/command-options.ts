/**
 * The option tables of the management commands (list, logs, secret, registry, group, client, version):
 * small, and sharing `--format`. The bigger commands have their own files (run-options.ts,
 * proxy-options.ts, gateway-options.ts).
 */
import * as v from "valibot";
import { booleanOption, type OptionTable, stringOption } from "./option-spec.ts";
import { nonEmpty, oneOf } from "./values.ts";

export const noOptions = {} as const satisfies OptionTable;

export const formatOptions = {
  format: stringOption({
    description: "Output format: text or json",
    valueHint: "text|json",
    default: "text",
    schema: oneOf(["text", "json"] as const),
    hint: "use --format text or --format json",
  }),
} as const satisfies OptionTable;

/** `mcpmgr registry search`: `--limit` servers at most (1-1000; the registry is small, the bound keeps it a number). */
export const registrySearchOptions = {
  ...formatOptions,
  limit: stringOption({
    description: "Show at most this many servers (1-1000), best match first",
    valueHint: "n",
    default: "10",
    schema: v.pipe(
      v.string(),
      v.trim(),
      v.regex(/^\d{1,4}$/, "must be a whole number from 1 to 1000"),
      v.transform(Number),
      v.minValue(1, "must be a whole number from 1 to 1000"),
      v.maxValue(1000, "must be a whole number from 1 to 1000"),
    ),
    hint: "use --limit 5, or 'mcpmgr registry list' for every server",
  }),
} as const satisfies OptionTable;

/** `mcpmgr list`. */
export const listOptions = {
  ...formatOptions,
  group: stringOption({ description: "Only workloads of this group", valueHint: "group", schema: nonEmpty }),
} as const satisfies OptionTable;

/** `mcpmgr logs`. */
export const logsOptions = {
  follow: booleanOption({
    short: "f",
    description: "Keep printing new output until Ctrl-C (or until the workload is removed)",
    default: false,
  }),
  proxy: booleanOption({ description: "Show the proxy's log instead of the server's", default: false }),
} as const satisfies OptionTable;

/** `mcpmgr group rm`. */
export const groupRmOptions = {
  "with-workloads": booleanOption({
    description: "Also stop and remove the group's workloads (a group with workloads is refused without it)",
    default: false,
  }),
} as const satisfies OptionTable;

/** `mcpmgr secret delete`. */
export const secretDeleteOptions = {
  force: booleanOption({
    description:
      "Delete it even when recorded workloads use it (they then fail at their next start or restart until it is set again)",
    default: false,
  }),
} as const satisfies OptionTable;

/** `mcpmgr client register`. */
export const clientRegisterOptions = {
  group: stringOption({
    description: "Group whose workloads the client gets",
    valueHint: "group",
    default: "default", // state/groups.ts DEFAULT_GROUP, as for `run --group`
    schema: nonEmpty,
  }),
  gateway: booleanOption({
    description:
      "Give the client the group's one running background gateway (one entry) instead of each workload (start one with 'mcpmgr gateway GROUP --detach'; a foreground gateway gets no entry)",
    default: false,
  }),
} as const satisfies OptionTable;

/** `mcpmgr client remove`. */
export const clientRemoveOptions = {
  group: stringOption({
    description: "Stop following only this group",
    valueHint: "group",
    defaultText: "every group the client follows",
    schema: nonEmpty,
  }),
} as const satisfies OptionTable;

/** `mcpmgr start|restart|stop|rm`: the workloads named, or `--all` of them, or a group's (cli/lifecycle-batch.ts). */
function lifecycleOptions(all: string, group: string) {
  return {
    all: booleanOption({ description: all, default: false }),
    group: stringOption({ description: group, valueHint: "group", schema: nonEmpty }),
  } as const satisfies OptionTable;
}

export const startOptions = lifecycleOptions(
  "Start every workload that does not run: failed (as a reboot leaves them) and stopped on purpose alike (gateways first)",
  "Start the workloads of this group that do not run",
);
export const restartOptions = lifecycleOptions(
  "Restart every running workload, gateways last (stopped ones stay stopped: 'mcpmgr start --all' starts them)",
  "Restart the running workloads of this group",
);
export const stopOptions = lifecycleOptions(
  "Stop every running workload (gateways last)",
  "Stop the running workloads of this group",
);
export const rmOptions = lifecycleOptions(
  "Remove every workload of this home, stopping those that run (there is no undo)",
  "Remove every workload of this group; the group stays ('mcpmgr group rm' removes it)",
);
