/**
 * `mcpmgr run` without --foreground: record the workload, start its supervisor,
 * wait until the proxy serves it, print the URL and return.
 */
import { resolve } from "node:path";
import type { ParsedRunArgv } from "../config/run-spec.ts";
import { McpmgrError } from "../errors.ts";
import { packageCommand } from "../runtime/package-command.ts";
import { loadPermissionProfile } from "../runtime/permission-profile.ts";
import type { RunPlan } from "./run-plan.ts";
import { preflightContainer } from "./container-workload.ts";
import { dockerHostFor } from "../runtime/docker/engine.ts";
import { processOverlays, profileFor } from "./server-process.ts";
import { prepareIncomingAuthentication } from "./incoming-auth.ts";
import { incomingAuthSpec } from "../config/incoming-auth-spec.ts";
import { toolsPolicy } from "../config/tools-policy.ts";
import { auditConfig } from "../config/audit-config.ts";
import { webhookConfig } from "../config/webhook-config.ts";
import { telemetrySpec } from "../config/telemetry-spec.ts";
import { resolvePaths } from "../state/paths.ts";
import { assertWorkloadName } from "../state/workload-name.ts";
import { WorkloadStore } from "../state/workloads.ts";
import { log, printResult } from "./output.ts";
import { startSupervisor } from "./supervisor-control.ts";
import { workloadUrl } from "./workload-arg.ts";
import { findFreePort } from "../proxy/serve.ts";

export async function runDetached(plan: RunPlan, parsed: ParsedRunArgv, rawArgs: readonly string[]): Promise<void> {
  const { values } = parsed;
  const { source, name } = plan;
  const sourceText = parsed.positionals[0] as string;
  assertWorkloadName(name);
  // The run options are stored (and exported) to restart the workload: no literal secrets in
  // them when a file form exists.
  for (const [option, instead] of [
    ["remote-auth-client-secret", "--remote-auth-client-secret-file"],
    ["remote-auth-bearer-token", "--remote-auth-bearer-token-file"],
    ["token-exchange-client-secret", "--token-exchange-client-secret-file"],
  ] as const) {
    if (parsed.given.has(option)) {
      throw new McpmgrError(
        "INVALID_OPTION",
        `--${option} would be stored in the workload's configuration in plain text`,
        { hint: `use ${instead} for a background workload (or --foreground)` },
      );
    }
  }
  // Fail here, in the user's terminal, for what can be checked before anything starts;
  // pulls and builds happen here too, so their progress is shown where the user looks.
  if (plan.runtime.kind === "container") await preflightContainer(plan, parsed, plan.runtime.engine);
  else if (source.kind === "package") {
    packageCommand(source, plan.args);
    const profile = await profileFor(plan, values);
    await processOverlays(profile, values, true);
  }
  if (values["permission-profile"]) await loadPermissionProfile(values["permission-profile"]);
  toolsPolicy(values.tools.flat(), values["tools-override"], plan.entry?.tools);
  auditConfig(values["enable-audit"], values["audit-config"], name);
  webhookConfig(values["webhook-config"]);
  // The Cedar engine (WebAssembly, slow to compile) only when there are policies to check.
  if (values["authz-config"]) (await import("../config/authz-config.ts")).authzConfig(values["authz-config"]);
  telemetrySpec(values, parsed.given, name);
  // The issuer and its keys are checked here too, so a typo fails in the user's terminal.
  await prepareIncomingAuthentication(incomingAuthSpec(values, parsed.given));

  const store = new WorkloadStore(resolvePaths());
  if (await store.get(name)) {
    throw new McpmgrError("WORKLOAD_EXISTS", `a workload named ${name} already exists`, {
      hint: `start it with 'mcpmgr start ${name}', remove it with 'mcpmgr rm ${name}', or choose another --name`,
    });
  }
  const port = values["proxy-port"] ?? (await freePortAvoiding(store));
  const dashDash = rawArgs.indexOf("--");
  const own = (dashDash === -1 ? rawArgs : rawArgs.slice(0, dashDash)).filter(
    (arg) => arg !== "--foreground" && arg !== "-f",
  );
  const runOptions = [
    ...own,
    ...(values.name ? [] : ["--name", name]),
    ...(values["proxy-port"] ? [] : ["--proxy-port", String(port)]),
    "--",
    ...parsed.passthrough,
  ];

  await store.create({
    name,
    group: values.group,
    labels: Object.fromEntries(values.label.map((pair) => [pair.key, pair.value])),
    source: { kind: plan.entry ? "registry" : source.kind, ref: sourceText },
    transport: source.kind === "remote" ? "streamable-http" : (plan.transport ?? "stdio"),
    proxyMode: values["proxy-mode"],
    host: values.host,
    proxyPort: port,
    proxyPath: clientPath(plan, values["proxy-mode"]),
    runtime: plan.runtime.kind === "container" ? plan.runtime.engine.kind : plan.runtime.kind,
    ...(plan.runtime.kind === "container" ? { runtimeEndpoint: dockerHostFor(plan.runtime.engine.endpoint) } : {}),
    ...(values["permission-profile"] ? { permissionProfile: values["permission-profile"] } : {}),
    env: Object.fromEntries(values.env.map((pair) => [pair.key, pair.value])),
    secrets: values.secret.map((ref) => ({ name: ref.name, target: ref.target })),
    args: [...plan.args],
    volumes: values.volume.map((v) => ({
      hostPath: resolve(v.hostPath),
      containerPath: v.containerPath,
      readOnly: v.readOnly,
    })),
    runOptions,
    workingDir: process.cwd(),
  });
  try {
    await startSupervisor(store, name, "fix the command and run it again (nothing was kept)");
  } catch (err) {
    // A workload that never ran is not kept: the user fixes the command and runs it again.
    await store.remove(name).catch(() => {});
    throw err;
  }
  log.info(`${name} is running in the background ('mcpmgr stop ${name}' stops it); MCP clients connect to:`);
  printResult(workloadUrl(await store.getExisting(name)));
}

/** A free port that no other workload keeps for its restarts. */
async function freePortAvoiding(store: WorkloadStore): Promise<number> {
  const taken = new Set((await store.list()).map((record) => record.proxyPort));
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = await findFreePort();
    if (!taken.has(port)) return port;
  }
  throw new McpmgrError("PORT_IN_USE", "could not find a free port", { hint: "choose one with --proxy-port" });
}

/** Where clients find the workload on the proxy; workload-runner serves the same paths. */
function clientPath(plan: RunPlan, proxyMode: "streamable-http" | "sse"): string {
  if (plan.source.kind === "remote") return plan.source.url.pathname;
  if (plan.transport === "sse") return "/sse";
  if (plan.transport === "streamable-http") return "/mcp";
  return proxyMode === "sse" ? "/sse" : "/mcp";
}
