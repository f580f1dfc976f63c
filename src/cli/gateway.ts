/**
 * `mcpmgr gateway GROUP`: one MCP endpoint for a group's running workloads, in the
 * foreground like `proxy` (prints the URL, serves /health, stops gracefully on a signal).
 * The start sequence is workload/gateway.ts.
 */
import { defineCommand } from "citty";
import { buildGatewaySpec } from "../config/gateway-spec.ts";
import { gatewayOptions } from "../config/gateway-options.ts";
import { startGatewayWorkload } from "../workload/gateway.ts";
import { toCittyArgs } from "./citty-args.ts";
import { cliContext } from "./context.ts";
import { log, printResult } from "./output.ts";
import { untilSignal } from "./signals.ts";

export default defineCommand({
  meta: {
    name: "gateway",
    description:
      "Serve one MCP endpoint for a group's running workloads (tools and prompts named <workload>_<name>), in the foreground",
  },
  args: toCittyArgs(gatewayOptions, {
    GROUP: { description: "The group whose running workloads the gateway serves", required: true },
  }),
  async run({ rawArgs }) {
    const spec = buildGatewaySpec(rawArgs);
    const gateway = await startGatewayWorkload(spec, cliContext());
    log.info(`gateway for group '${spec.group}' is running; MCP clients connect to:`);
    printResult(gateway.url);
    const signal = await untilSignal();
    log.info(`${signal}: stopping the gateway for group '${spec.group}'`);
    await gateway.stop();
  },
});
