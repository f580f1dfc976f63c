/** `mcpmgr stop NAME`: stops the proxy and the server; the workload stays for `start`, its AI-client entries go. */
import { defineCommand } from "citty";
import { resolvePaths } from "../state/paths.ts";
import { stopRecorded } from "../workload/lifecycle.ts";
import { toCittyArgs, withExamples } from "./citty-args.ts";
import { log } from "./output.ts";
import { parseNamed } from "./workload-arg.ts";

const stopCommand = defineCommand({
  meta: { name: "stop", description: "Stop a running workload" },
  args: toCittyArgs({}, { NAME: { description: "Workload name", required: true, completes: "live-workloads" } }),
  async run({ rawArgs }) {
    const { name } = parseNamed(rawArgs, {}, "stop");
    const stopped = await stopRecorded(name, { log, paths: resolvePaths(), env: process.env });
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
