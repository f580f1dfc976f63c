/** `mcpmgr rm NAME`: stops the workload if needed and removes its record, logs and AI-client entries. */
import { defineCommand } from "citty";
import { clientsSeeStopped } from "../workload/client-entries.ts";
import { stopSupervisor } from "../workload/supervisor-control.ts";
import { toCittyArgs, withExamples } from "./citty-args.ts";
import { log } from "./output.ts";
import { openStore, parseNamed } from "./workload-arg.ts";

const rmCommand = defineCommand({
  meta: { name: "rm", description: "Remove a workload (stopping it first)" },
  args: toCittyArgs({}, { NAME: { description: "Workload name", required: true, completes: "workloads" } }),
  async run({ rawArgs }) {
    const { name } = parseNamed(rawArgs, {}, "rm");
    const store = openStore();
    await store.getExisting(name).catch(async (err) => {
      // A corrupt record must still be removable: only a truly unknown name is an error.
      if ((err as { code?: string }).code !== "STATE_CORRUPT") throw err;
    });
    await stopSupervisor(store, name, log).catch(() => false);
    await clientsSeeStopped(name, { log, paths: store.paths, env: process.env });
    await store.remove(name);
    log.info(`removed ${name}`);
  },
});

export default withExamples(rmCommand, [
  { description: "Stop the workload 'fetch' and forget it", command: "mcpmgr rm fetch" },
  { description: "Remove a background gateway", command: "mcpmgr rm gateway-work" },
]);
