/** `mcpmgr rm NAME`: stops the workload if needed and removes its record, logs and AI-client entries. */
import { defineCommand } from "citty";
import { resolvePaths } from "../state/paths.ts";
import { removeRecorded } from "../workload/lifecycle.ts";
import { toCittyArgs, withExamples } from "./citty-args.ts";
import { log } from "./output.ts";
import { parseNamed } from "./workload-arg.ts";

const rmCommand = defineCommand({
  meta: { name: "rm", description: "Remove a workload (stopping it first)" },
  args: toCittyArgs({}, { NAME: { description: "Workload name", required: true, completes: "workloads" } }),
  async run({ rawArgs }) {
    const { name } = parseNamed(rawArgs, {}, "rm");
    await removeRecorded(name, { log, paths: resolvePaths(), env: process.env });
    log.info(`removed ${name}`);
  },
});

export default withExamples(rmCommand, [
  { description: "Stop the workload 'fetch' and forget it", command: "mcpmgr rm fetch" },
  { description: "Remove a background gateway", command: "mcpmgr rm gateway-work" },
]);
