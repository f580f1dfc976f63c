/**
 * `mcpmgr stop`: stops the proxy and the server of one NAME, several, `--all` or `--group G`
 * (cli/lifecycle-batch.ts); the workloads stay for `start`, their AI-client entries go.
 */
import { defineCommand } from "citty";
import { stopOptions as table } from "../config/command-options.ts";
import { toCittyArgs, withExamples } from "./citty-args.ts";
import { cliContext } from "./context.ts";
import { stopOne } from "./lifecycle-actions.ts";
import { parseTargets, runSelection } from "./lifecycle-batch.ts";

const stopCommand = defineCommand({
  meta: { name: "stop", description: "Stop running workloads (NAME..., --all, --group)" },
  args: toCittyArgs(table, {
    "NAME...": {
      description: "Workload names (several are stopped side by side, gateways last)",
      required: false,
      variadic: true,
      completes: "live-workloads",
    },
  }),
  async run({ rawArgs }) {
    const targets = parseTargets(rawArgs, table, "stop");
    if ("one" in targets) return stopOne(targets.one, cliContext());
    await runSelection("stop", targets.selection, stopOne);
  },
});

export default withExamples(stopCommand, [
  {
    description: "Stop 'fetch' and 'github' (they stay listed; 'mcpmgr start fetch github' starts them again)",
    command: "mcpmgr stop fetch github",
  },
  {
    description: "Stop every running workload (they stay listed; stopped ones are started by 'mcpmgr start --all' too)",
    command: "mcpmgr stop --all",
  },
  {
    description: "Stop the running workloads of the group 'work', its gateway last",
    command: "mcpmgr stop --group work",
  },
]);
