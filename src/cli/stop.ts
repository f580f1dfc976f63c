/** `mcpmgr stop NAME`: stops the proxy and the server; the workload stays for `start`, its AI-client entries go. */
import { defineCommand } from "citty";
import { clientsSeeStopped } from "../workload/client-entries.ts";
import { stopSupervisor } from "../workload/supervisor-control.ts";
import { toCittyArgs, withExamples } from "./citty-args.ts";
import { log } from "./output.ts";
import { openStore, parseNamed } from "./workload-arg.ts";

const stopCommand = defineCommand({
  meta: { name: "stop", description: "Stop a running workload" },
  args: toCittyArgs({}, { NAME: { description: "Workload name", required: true, completes: "workloads" } }),
  async run({ rawArgs }) {
    const { name } = parseNamed(rawArgs, {}, "stop");
    const store = openStore();
    await store.getExisting(name);
    const stopped = await stopSupervisor(store, name, log);
    // The supervisor takes its entries out as it stops; one that had to be killed could not.
    await clientsSeeStopped(name, { log, paths: store.paths, env: process.env });
    log.info(stopped ? `stopped ${name}` : `${name} was not running`);
  },
});

export default withExamples(stopCommand, [
  {
    description: "Stop the workload 'fetch' (it stays listed; 'mcpmgr start fetch' starts it again)",
    command: "mcpmgr stop fetch",
  },
  { description: "Stop a background gateway", command: "mcpmgr stop gateway-work" },
]);
