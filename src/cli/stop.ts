/** `mcpmgr stop NAME`: stops the proxy and the server; the workload stays for `start`. */
import { defineCommand } from "citty";
import { stopSupervisor } from "../workload/supervisor-control.ts";
import { toCittyArgs } from "./citty-args.ts";
import { log } from "./output.ts";
import { openStore, parseNamed } from "./workload-arg.ts";

export default defineCommand({
  meta: { name: "stop", description: "Stop a running workload" },
  args: toCittyArgs({}, { NAME: { description: "Workload name", required: true } }),
  async run({ rawArgs }) {
    const { name } = parseNamed(rawArgs, {}, "stop");
    const store = openStore();
    await store.getExisting(name);
    log.info((await stopSupervisor(store, name, log)) ? `stopped ${name}` : `${name} was not running`);
  },
});
