/**
 * `mcpmgr start NAME` and `mcpmgr restart NAME`: (re)start a recorded workload (or background
 * gateway) on its port; the AI clients following its group get its entry back.
 */
import { defineCommand } from "citty";
import { WorkloadStore } from "../state/workloads.ts";
import { startRecorded } from "../workload/lifecycle.ts";
import { type Example, toCittyArgs, withExamples } from "./citty-args.ts";
import { cliContext } from "./context.ts";
import { startRelay } from "./start-relay.ts";
import { log, printResult } from "./output.ts";
import { parseNamed, workloadUrl } from "./workload-arg.ts";

function command(restart: boolean, examples: readonly Example[]) {
  const verb = restart ? "restart" : "start";
  const definition = defineCommand({
    meta: { name: verb, description: restart ? "Stop and start a workload again" : "Start a stopped workload" },
    args: toCittyArgs(
      {},
      {
        NAME: { description: "Workload name", required: true, completes: restart ? "workloads" : "stopped-workloads" },
      },
    ),
    async run({ rawArgs }) {
      const { name } = parseNamed(rawArgs, {}, verb);
      const ctx = cliContext();
      const relay = startRelay(new WorkloadStore(ctx.paths).logFiles(name, "proxy"));
      const { record, alreadyRunning } = await startRecorded(name, { restart, whileWaiting: relay.whileWaiting }, ctx);
      if (!alreadyRunning) await relay.ready();
      // The URL either way: `URL=$(mcpmgr start NAME)` must not depend on whether it ran already.
      log.info(`${name} is ${alreadyRunning ? "already running" : "running"}; MCP clients connect to:`);
      printResult(workloadUrl(record));
    },
  });
  return withExamples(definition, examples);
}

export const start = command(false, [
  { description: "Start the stopped workload 'fetch' on its port", command: "mcpmgr start fetch" },
  { description: "Start a stopped background gateway", command: "mcpmgr start gateway-work" },
]);
export const restart = command(true, [
  { description: "Restart 'fetch', for example after changing a secret it uses", command: "mcpmgr restart fetch" },
  { description: "Restart a background gateway", command: "mcpmgr restart gateway-work" },
]);
