/**
 * The RunSpec: everything `mcpmgr run` was asked for, resolved once into one frozen,
 * validated value. The parsed options, the registry entry and the chosen runtime go in;
 * every rule between options is checked here (the ones that depend on where the server
 * runs in placement.ts), every file an option names is decoded here, and warnings about
 * weaker isolation are given here. `run --foreground`, the detached `run`'s pre-flight and
 * the supervisor all start from it, so a command line means the same thing to each of them.
 */
import { auditConfig, type AuditConfig } from "../config/audit-config.ts";
import { authzConfig, type AuthzConfig } from "../config/authz-config.ts";
import { incomingAuthSpec, type IncomingAuthSpec } from "../config/incoming-auth-spec.ts";
import type { ParsedRunArgv } from "../config/run-argv.ts";
import { telemetrySpec, type TelemetrySpec } from "../config/telemetry-spec.ts";
import { toolsPolicy, type ToolsPolicy } from "../config/tools-policy.ts";
import { webhookConfig, type WebhookConfig } from "../config/webhook-config.ts";
import type { RegistryEntry } from "../registry/entry.ts";
import { assertWorkloadName, deriveWorkloadName, isValidWorkloadName } from "../state/workload-name.ts";
import { assertAuditLogWritable } from "./audit-sink.ts";
import type { WorkloadContext } from "./context.ts";
import { maxLogBytesFromEnv, proxyLimits, type ProxyLimits } from "./limits.ts";
import { locateServer, type LocatedServer } from "./locate.ts";
import { assertEndpointPrefixApplies, remotePlacement, type Placement } from "./placement.ts";
import { RECORDED_CREDENTIAL_MARKER, recordedCredential } from "./recorded-credentials.ts";
import { deepFreeze } from "../objects.ts";

export type ProxyMode = "streamable-http" | "sse";

/** Where the proxy listens. */
export interface Listener {
  readonly host: string;
  /** undefined: a free port, chosen when the proxy starts. */
  readonly port: number | undefined;
  readonly endpointPrefix: string | undefined;
  readonly trustProxyHeaders: boolean;
  /** `--allowed-hosts`: host names the proxy answers to besides its own (normalized). */
  readonly allowedHosts: readonly string[];
}

/** The policies on the proxy's endpoint, decoded from their options and files; undefined: not installed. */
export interface Policies {
  readonly tools: ToolsPolicy | undefined;
  readonly audit: AuditConfig | undefined;
  readonly webhooks: WebhookConfig | undefined;
  readonly authz: AuthzConfig | undefined;
  readonly telemetry: TelemetrySpec | undefined;
  readonly incomingAuth: IncomingAuthSpec | undefined;
}

export interface RunSpec {
  readonly name: string;
  /** The SERVER argument as typed (registry name, image, package or URL). */
  readonly sourceText: string;
  readonly entry: RegistryEntry | undefined;
  readonly group: string;
  readonly labels: readonly { readonly key: string; readonly value: string }[];
  /** A detached workload (no --foreground): recorded, supervised, restarted. */
  readonly background: boolean;
  readonly listen: Listener;
  /** How the stdio bridge exposes a stdio server. */
  readonly proxyMode: ProxyMode;
  /** The path clients use on the proxy: /mcp, /sse, or a remote server's own path. */
  readonly endpointPath: string;
  readonly placement: Placement;
  readonly policies: Policies;
  readonly limits: ProxyLimits;
}

export interface RunSpecOptions {
  /**
   * The options come from a workload's record (its supervisor starts it): a credential in them is
   * stored already, so it is warned about instead of keeping a workload made before the check from starting;
   * so is an option that does nothing where it is given and that earlier versions accepted (placement.ts).
   */
  readonly recorded?: boolean;
  /**
   * Checks the workload's name before the placement is worked out: a `run` of a name that is taken
   * refuses in one line, without the placement's warnings about a server that will not run.
   */
  readonly nameFree?: (name: string) => Promise<void>;
}

/** The workload's name: --name, else the registry entry's, else one made from the source. */
function workloadNameOf(located: LocatedServer, parsed: ParsedRunArgv): string {
  return parsed.values.name ?? located.entry?.name ?? deriveWorkloadName(located.sourceText);
}

export function resolveRunSpec(
  located: LocatedServer,
  parsed: ParsedRunArgv,
  ctx: WorkloadContext,
  options: RunSpecOptions = {},
): RunSpec {
  const { values, given } = parsed;
  const { source, entry } = located;
  const name = workloadNameOf(located, parsed);
  const background = !values.foreground;
  // A foreground run records nothing, but its name still goes into AI clients' files (whose own
  // rules for names are stricter than JSON's or TOML's quoting), the terminal and container names.
  assertWorkloadName(name);
  if (background) {
    // The run options are stored (and exported) to restart the workload: no credentials in them.
    const credential = recordedCredential(values, given);
    if (credential !== undefined && !options.recorded) throw credential;
    if (credential !== undefined) {
      ctx.log.warn(`${name}'s ${RECORDED_CREDENTIAL_MARKER} (${credential.message}); ${credential.hint}`);
    }
  }
  const limits = proxyLimits(ctx.env);
  // Read by the supervisor; checked here so a bad value is refused before anything is recorded.
  if (background) maxLogBytesFromEnv(ctx.env);
  const policies = resolvePolicies(parsed, entry, name, ctx);
  // Each runtime's rules are required where they apply: a remote workload's supervisor loads
  // neither the sandbox's nor the container's (required, not imported: this is synchronous).
  // Options an earlier version accepted and ignored: a recorded workload holding them still starts.
  const inert = options.recorded ? (text: string) => ctx.log.warn(`${name}: ${text}`) : undefined;
  const placement =
    source.kind === "remote"
      ? remotePlacement(parsed, source, policies.incomingAuth !== undefined, inert)
      : located.runtime.kind === "container"
        ? (require("./container-placement.ts") as typeof import("./container-placement.ts")).containerPlacement(
            parsed,
            source,
            entry,
            located.runtime.engine,
            ctx,
            inert,
          )
        : (require("./process-placement.ts") as typeof import("./process-placement.ts")).processPlacement(
            parsed,
            source,
            entry,
            ctx,
            inert,
          );
  const transport = placement.kind === "remote" ? undefined : placement.server.transport;
  if (transport !== undefined) assertEndpointPrefixApplies(parsed, transport, inert);
  const proxyMode = values["proxy-mode"];
  if (transport === "stdio" && proxyMode === "sse")
    ctx.log.warn("--proxy-mode sse is deprecated and will be removed; clients should use streamable-http");
  return deepFreeze({
    name,
    sourceText: located.sourceText,
    entry,
    group: values.group,
    labels: values.label,
    background,
    listen: {
      host: values.host,
      port: values["proxy-port"],
      endpointPrefix: values["endpoint-prefix"],
      trustProxyHeaders: values["trust-proxy-headers"],
      allowedHosts: values["allowed-hosts"].flat(),
    },
    proxyMode,
    endpointPath:
      placement.kind === "remote"
        ? placement.url.pathname
        : transport === "sse" || (transport === "stdio" && proxyMode === "sse")
          ? "/sse"
          : "/mcp",
    placement,
    policies,
    limits,
  });
}

function resolvePolicies(
  parsed: ParsedRunArgv,
  entry: RegistryEntry | undefined,
  name: string,
  ctx: WorkloadContext,
): Policies {
  const { values, given } = parsed;
  const audit = auditConfig(values["enable-audit"], values["audit-config"], name);
  if (audit) assertAuditLogWritable(audit);
  return {
    tools: toolsPolicy(values.tools.flat(), values["tools-override"], entry?.tools),
    audit,
    webhooks: webhookConfig(values["webhook-config"]),
    authz: authzConfig(values["authz-config"]),
    telemetry: telemetrySpec(values, given, name, ctx.env),
    incomingAuth: incomingAuthSpec(values, given),
  };
}

/** The RunSpec for parsed `run` options: the server located (registry, runtime), then resolved. */
export async function prepareRunSpec(
  parsed: ParsedRunArgv,
  ctx: WorkloadContext,
  options: RunSpecOptions = {},
): Promise<RunSpec> {
  const located = await locateServer(parsed, ctx);
  const name = workloadNameOf(located, parsed);
  if (options.nameFree && isValidWorkloadName(name)) await options.nameFree(name);
  return resolveRunSpec(located, parsed, ctx, options);
}
