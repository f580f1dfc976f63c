/**
 * `mcpmgr rm`: stops workloads if needed and removes their records, logs and AI-client entries: one
 * NAME, several, `--all` or `--group G` (cli/lifecycle-batch.ts). Removing every workload takes
 * `--all` spelled out: a bare `rm` is refused, never read as "every workload", and no pattern widens
 * the names given.
 */
import { defineCommand } from "citty";
import { rmOptions as table } from "../config/command-options.ts";
import { toCittyArgs, withExamples } from "./citty-args.ts";
import { cliContext } from "./context.ts";
import { removeOne } from "./lifecycle-actions.ts";
import { parseTargets, runSelection } from "./lifecycle-batch.ts";

const rmCommand = defineCommand({
  meta: { name: "rm", description: "Remove workloads, stopping them first (NAME..., --all, --group)" },
  args: toCittyArgs(table, {
    "NAME...": {
      description: "Workload names (several are removed side by side, gateways last)",
      required: false,
      variadic: true,
      completes: "workloads",
    },
  }),
  async run({ rawArgs }) {
    const targets = parseTargets(rawArgs, table, "rm");
    if ("one" in targets) return removeOne(targets.one, cliContext());
    await runSelection("rm", targets.selection, removeOne);
  },
});

export default withExamples(rmCommand, [
  { description: "Stop the workloads 'fetch' and 'github' and forget them", command: "mcpmgr rm fetch github" },
  { description: "Remove the workloads of the group 'work' (the group stays)", command: "mcpmgr rm --group work" },
  { description: "Remove every workload of this home (no undo)", command: "mcpmgr rm --all" },
]);
