/**
 * `mcpmgr start` and `mcpmgr restart`: (re)start recorded workloads (or background gateways) on their
 * ports, one NAME, several, `--all` or `--group G` (cli/lifecycle-batch.ts); the AI clients following
 * their groups get their entries back.
 */
import { defineCommand } from "citty";
import { restartOptions, startOptions } from "../config/command-options.ts";
import { type Example, toCittyArgs, withExamples } from "./citty-args.ts";
import { cliContext } from "./context.ts";
import { startOne } from "./lifecycle-actions.ts";
import { parseTargets, runSelection } from "./lifecycle-batch.ts";

function command(restart: boolean, examples: readonly Example[]) {
  const verb = restart ? "restart" : "start";
  const table = restart ? restartOptions : startOptions;
  const definition = defineCommand({
    meta: {
      name: verb,
      description: restart
        ? "Stop and start workloads again (NAME..., --all, --group)"
        : "Start stopped workloads (NAME..., --all, --group)",
    },
    args: toCittyArgs(table, {
      "NAME...": {
        description: restart
          ? "Workload names (several are restarted side by side, gateways last)"
          : "Workload names (several are started side by side, gateways first)",
        required: false,
        variadic: true,
        completes: restart ? "workloads" : "stopped-workloads",
      },
    }),
    async run({ rawArgs }) {
      const targets = parseTargets(rawArgs, table, verb);
      if ("one" in targets) return startOne(targets.one, restart, cliContext());
      await runSelection(verb, targets.selection, (name, ctx) => startOne(name, restart, ctx, true));
    },
  });
  return withExamples(definition, examples);
}

export const start = command(false, [
  {
    description: "Start the stopped workloads 'fetch' and 'github' on their ports",
    command: "mcpmgr start fetch github",
  },
  {
    description: "After a reboot: start every workload that does not run (failed, stopped), gateways first",
    command: "mcpmgr start --all",
  },
  { description: "Start the workloads of the group 'work' that do not run", command: "mcpmgr start --group work" },
]);
export const restart = command(true, [
  { description: "Restart 'fetch', for example after changing a secret it uses", command: "mcpmgr restart fetch" },
  {
    description: "After an upgrade: restart every running workload on the new version",
    command: "mcpmgr restart --all",
  },
  { description: "Restart the running workloads of the group 'work'", command: "mcpmgr restart --group work" },
]);
