/**
 * `mcpmgr start NAME` and `mcpmgr restart NAME`: (re)start a recorded workload (or background
 * gateway) on its port; the AI clients following its group get its entry back.
 */
import { defineCommand } from "citty";
import { clientsSeeStarted } from "../workload/client-entries.ts";
import { currentStatus, startSupervisor, stopSupervisor } from "../workload/supervisor-control.ts";
import { toCittyArgs } from "./citty-args.ts";
import { cliContext } from "./context.ts";
import { loginUrlRelay } from "./login-relay.ts";
import { log, printResult } from "./output.ts";
import { openStore, parseNamed, workloadUrl } from "./workload-arg.ts";

function command(restart: boolean) {
  const verb = restart ? "restart" : "start";
  return defineCommand({
    meta: { name: verb, description: restart ? "Stop and start a workload again" : "Start a stopped workload" },
    args: toCittyArgs({}, { NAME: { description: "Workload name", required: true } }),
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
}

export const start = command(false);
export const restart = command(true);
