/**
 * A background gateway (`mcpmgr gateway GROUP --detach`): recorded as a workload of the group it
 * serves (source kind and runtime `gateway`), on a port chosen once so clients' URLs survive
 * restarts, with the gateway's own argv as its run options. Its supervisor
 * (workload/supervisor.ts) parses them again with the gateway's option table on every start,
 * so every gateway option works in the background form as it does in the foreground.
 */
import { parseArgv } from "../config/argv.ts";
import { gatewayOptions } from "../config/gateway-options.ts";
import { gatewayComponentName, type GatewaySpec } from "../config/gateway-spec.ts";
import { McpmgrError } from "../errors.ts";
import { assertGroupExists } from "../state/groups.ts";
import { shellWord } from "../printable.ts";
import { isGatewayRecord } from "../state/workload-record.ts";
import { assertWorkloadName, isValidWorkloadName, type WorkloadRecord, WorkloadStore } from "../state/workloads.ts";
import { assertNameFree, freePortAvoiding } from "./background.ts";
import type { WorkloadContext } from "./context.ts";
import { assertStartSettings } from "./limits.ts";
import { refuseRecordedCredentials } from "./recorded-credentials.ts";

/** gateway/front-end.ts's GATEWAY_PATH; not imported from there, since that module loads the MCP SDK. */
const GATEWAY_ENDPOINT_PATH = "/mcp";

export async function recordGateway(
  spec: GatewaySpec,
  argv: readonly string[],
  ctx: WorkloadContext,
): Promise<WorkloadRecord> {
  await assertGroupExists(ctx.paths, spec.group);
  // Read by its supervisor as it starts (the proxy log's cap among them): refused before it is recorded.
  assertStartSettings(ctx.env, "gateway");
  // Recorded (and exported) as given, like a background run's options: no credentials in them.
  const { values, given } = parseArgv(argv, gatewayOptions, "gateway", false);
  refuseRecordedCredentials(values, given, "without --detach");
  const name = spec.name ?? gatewayComponentName(spec.group);
  if (spec.name !== undefined) assertWorkloadName(name);
  else if (!isValidWorkloadName(name)) {
    throw new McpmgrError("INVALID_ARGUMENT", `the gateway's default name ${name} is too long for a workload name`, {
      hint: "name it with --name (lowercase letters, digits and '-', at most 63 characters)",
    });
  }
  const store = new WorkloadStore(ctx.paths);
  await assertNotOtherWorkload(store, name, spec);
  await assertNameFree(store, name);
  const port = spec.listen.port ?? (await freePortAvoiding(store));
  // As given, --detach included (the supervisor hosts the gateway whatever it says), plus the
  // name and port chosen here.
  const runOptions = [
    ...argv,
    ...(spec.name === undefined ? ["--name", name] : []),
    ...(spec.listen.port === undefined ? ["--port", String(port)] : []),
  ];
  return store.create({
    name,
    group: spec.group,
    source: { kind: "gateway", ref: spec.group },
    transport: "streamable-http",
    proxyMode: "streamable-http",
    host: spec.listen.host,
    proxyPort: port,
    proxyPath: GATEWAY_ENDPOINT_PATH,
    runtime: "gateway",
    runOptions,
    workingDir: process.cwd(),
  });
}

/**
 * The name is held by something that is not this group's background gateway (a plain workload that
 * happens to be called gateway-G, or another group's gateway): `assertNameFree`'s "start it if it is
 * stopped" would start that, not a gateway for this group. Said as it is, with the ways out that work.
 */
async function assertNotOtherWorkload(store: WorkloadStore, name: string, spec: GatewaySpec): Promise<void> {
  const held = await store.get(name);
  if (held === undefined || (isGatewayRecord(held) && held.group === spec.group)) return;
  const what = isGatewayRecord(held) ? `the background gateway of group ${held.group}` : "not a gateway";
  throw new McpmgrError("WORKLOAD_EXISTS", `a workload named ${name} already exists, and it is ${what}`, {
    hint: `give this gateway another name with --name, or remove that workload with 'mcpmgr rm ${shellWord(name)}' if it is not needed`,
  });
}
