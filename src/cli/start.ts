/**
 * `mcpmgr start NAME` and `mcpmgr restart NAME`: (re)start a recorded workload (or background
 * gateway) on its port; the AI clients following its group get its entry back.
 */
import { defineCommand } from "citty";
import { clientsSeeStarted } from "../workload/client-entries.ts";
import { currentStatus, startSupervisor, stopSupervisor } from "../workload/supervisor-control.ts";
import { type Example, toCittyArgs, withExamples } from "./citty-args.ts";
import { cliContext } from "./context.ts";
import { loginUrlRelay } from "./login-relay.ts";
import { log, printResult } from "./output.ts";
import { openStore, parseNamed, workloadUrl } from "./workload-arg.ts";

function command(restart: boolean, examples: readonly Example[]) {
  const verb = restart ? "restart" : "start";
  const definition = defineCommand({
    meta: { name: verb, description: restart ? "Stop and start a workload again" : "Start a stopped workload" },
    args: toCittyArgs({}, { NAME: { description: "Workload name", required: true, completes: "workloads" } }),
    async run({ rawArgs }) {
      const { name } = parseNamed(rawArgs, {}, verb);
      const store = openStore();
      const record = await store.getExisting(name);
      if (restart) await stopSupervisor(store, name, log);
      else {
        const status = await currentStatus(store, name);
        if (
          status?.state === "running" ||
          status?.state === "restarting" ||
          (status?.state === "starting" && status.pid !== undefined)
        ) {
          log.info(`${name} is already running`);
          return;
        }
      }
      const ctx = cliContext();
      await startSupervisor(store, name, ctx, { whileWaiting: loginUrlRelay(store.proxyLogPath(name)) });
      await clientsSeeStarted(record, ctx);
      log.info(`${name} is running; MCP clients connect to:`);
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
