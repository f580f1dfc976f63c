/**
 * `mcpmgr gateway GROUP`: one MCP endpoint for a group's running workloads, in the
 * foreground like `proxy` (prints the URL, serves /health, stops gracefully on a signal).
 * The start sequence is workload/gateway.ts. With `--detach` it runs in the background as a
 * workload instead, like `run` without `--foreground`: recorded, started by a supervisor,
 * and from then on `list`, `stop`, `start`, `restart`, `logs`, `export` and `rm` by name.
 */
import { defineCommand } from "citty";
import { buildGatewaySpec, type GatewaySpec } from "../config/gateway-spec.ts";
import { gatewayOptions } from "../config/gateway-options.ts";
import { workloadUrl } from "../state/workload-url.ts";
import { WorkloadStore } from "../state/workloads.ts";
import type { WorkloadContext } from "../workload/context.ts";
import { toCittyArgs, withExamples } from "./citty-args.ts";
import { cliContext } from "./context.ts";
import { log, printResult } from "./output.ts";
import { warnIfReachable } from "./reachable-notice.ts";
import { cancelOnSignal, untilSignal } from "./signals.ts";

const gatewayCommand = defineCommand({
  meta: {
    name: "gateway",
    description:
      "Serve one MCP endpoint for a group's running workloads (tools and prompts named <workload>_<name>), in the foreground or with --detach in the background",
  },
  args: toCittyArgs(gatewayOptions, {
    GROUP: { description: "The group whose running workloads the gateway serves", required: true, completes: "groups" },
  }),
  async run({ rawArgs }) {
    const spec = buildGatewaySpec(rawArgs);
    if (spec.detach) return runGatewayInBackground(spec, rawArgs, cliContext());
    const { startGatewayWorkload } = await import("../workload/gateway.ts");
    const gateway = await startGatewayWorkload(spec, cliContext());
    // Listened for before the URL is printed: whoever reads it may signal at once, and a signal with no
    // handler yet would end the process without its graceful stop.
    const signalled = untilSignal();
    log.info(`gateway for group '${spec.group}' is running; MCP clients connect to:`);
    printResult(gateway.url);
    warnIfReachable(`gateway for group '${spec.group}'`, spec.listen.host, gateway.url, {
      issuer: spec.incomingAuth?.issuer,
      authz: spec.authz !== undefined,
      metrics: spec.telemetry?.prometheus === true,
    });
    const signal = await signalled;
    log.info(`${signal}: stopping the gateway for group '${spec.group}'`);
    await gateway.stop();
  },
});

export default withExamples(gatewayCommand, [
  { description: "Serve the default group's workloads on one endpoint", command: "mcpmgr gateway default" },
  {
    description: "Run it in the background on port 9000, with find_tool and call_tool instead of every tool",
    command: "mcpmgr gateway work --detach --port 9000 --tool-search",
  },
  {
    description: "Prefix a tool's name only when two workloads share it",
    command: "mcpmgr gateway default --name-prefix when-needed",
  },
]);

/**
 * Recorded, then handed to a supervisor (which hosts the gateway instead of a server); prints
 * the URL once the gateway answers MCP initialize. Also `run --from-config` of an exported gateway.
 */
export async function runGatewayInBackground(
  spec: GatewaySpec,
  argv: readonly string[],
  ctx: WorkloadContext,
): Promise<void> {
  const { recordGateway } = await import("../workload/background-gateway.ts");
  const { firstStart } = await import("../workload/first-start.ts");
  const record = await recordGateway(spec, argv, ctx);
  const { startRelay } = await import("./start-relay.ts");
  const relay = startRelay(new WorkloadStore(ctx.paths).logFiles(record.name, "proxy"));
  // Read to the end also when the start fails (before a first start's log is removed with it): a
  // warning written a moment before the failure is not lost.
  await cancelOnSignal(record.name, (signal) =>
    firstStart(record, ctx, { whileWaiting: relay.whileWaiting, signal, onFailure: () => relay.ready() }),
  );
  await relay.ready();
  log.info(
    `gateway ${record.name} for group '${spec.group}' is running in the background ('mcpmgr stop ${record.name}' stops it); MCP clients connect to:`,
  );
  printResult(workloadUrl(record));
  warnIfReachable(`gateway ${record.name}`, spec.listen.host, workloadUrl(record), {
    issuer: spec.incomingAuth?.issuer,
    authz: spec.authz !== undefined,
    metrics: spec.telemetry?.prometheus === true,
  });
}
