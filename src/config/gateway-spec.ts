/** argv of `mcpmgr gateway` → one frozen, validated GatewaySpec (files are read here, once). */
import { McpmgrError } from "../errors.ts";
import { parseArgv } from "./argv.ts";
import { auditConfig, type AuditConfig } from "./audit-config.ts";
import { authzConfig, type AuthzConfig } from "./authz-config.ts";
import { gatewayOptions } from "./gateway-options.ts";
import { incomingAuthSpec, type IncomingAuthSpec } from "./incoming-auth-spec.ts";
import type { ListenSpec } from "./proxy-spec.ts";
import { telemetrySpec, type TelemetrySpec } from "./telemetry-spec.ts";
import { toolSearchSpec, type ToolSearchSpec } from "./tool-search-spec.ts";
import { toolsPolicy, type ToolsPolicy } from "./tools-policy.ts";

export interface GatewaySpec {
  readonly group: string;
  /** `--detach`: a background workload, named `name` (`gateway-GROUP` unless --name says otherwise). */
  readonly detach: boolean;
  readonly name: string | undefined;
  readonly listen: ListenSpec;
  readonly prefixMode: "always" | "when-needed";
  readonly trustProxyHeaders: boolean;
  readonly incomingAuth: IncomingAuthSpec | undefined;
  readonly tools: ToolsPolicy | undefined;
  readonly authz: AuthzConfig | undefined;
  readonly audit: AuditConfig | undefined;
  readonly telemetry: TelemetrySpec | undefined;
  /** `--tool-search*`: search mode (find_tool and call_tool instead of the group's tools), or undefined. */
  readonly toolSearch: ToolSearchSpec | undefined;
}

/** The name audit lines and telemetry use for a gateway. */
export function gatewayComponentName(group: string): string {
  return `gateway-${group}`;
}

export function buildGatewaySpec(argv: readonly string[]): GatewaySpec {
  const { values, given, positionals, passthrough } = parseArgv(argv, gatewayOptions, "gateway", false, {
    "proxy-port": "did you mean --port? (run calls it --proxy-port)",
    "webhook-config":
      "webhooks are not offered on a gateway (docs/gateway.md): give --webhook-config to the group's workloads ('mcpmgr run … --webhook-config FILE'), whose endpoints the gateway calls",
  });
  if (passthrough.length > 0) {
    throw new McpmgrError(
      "INVALID_ARGUMENT",
      "'mcpmgr gateway' starts no server, so arguments after -- have nowhere to go",
      {
        hint: "remove the arguments after --",
      },
    );
  }
  const [group, ...extra] = positionals;
  if (group === undefined || group === "") {
    throw new McpmgrError("MISSING_OPTION", "missing the GROUP", {
      hint: "usage: mcpmgr gateway GROUP (workloads join a group with 'mcpmgr run --group GROUP')",
    });
  }
  if (extra.length > 0) {
    throw new McpmgrError("INVALID_ARGUMENT", `unexpected argument ${JSON.stringify(extra[0])}`, {
      hint: "'mcpmgr gateway' takes one GROUP; options start with --",
    });
  }
  if (values.name !== undefined && !values.detach) {
    throw new McpmgrError("MISSING_OPTION", "--name names a background gateway, and this one runs in the foreground", {
      hint: "add --detach to run it in the background under that name, or leave --name out",
    });
  }
  const name = gatewayComponentName(group);
  const tools = toolsPolicy(values.tools.flat(), values["tools-override"]);
  const toolSearch = toolSearchSpec(values);
  if (toolSearch) {
    // In search mode these two names are the gateway's own tools (gateway/tool-search/search-tools.ts).
    const taken = ["find_tool", "call_tool"].find((own) => tools?.realNames.has(own));
    if (taken !== undefined) {
      throw new McpmgrError("CONFLICTING_OPTIONS", `--tools-override names a tool ${taken}, a tool of --tool-search`, {
        hint: "choose another name in the --tools-override file",
      });
    }
  }
  return Object.freeze({
    group,
    detach: values.detach,
    name: values.name,
    listen: Object.freeze({ host: values.host, port: values.port, allowedHosts: values["allowed-hosts"].flat() }),
    prefixMode: values["name-prefix"],
    trustProxyHeaders: values["trust-proxy-headers"],
    incomingAuth: incomingAuthSpec(values, given),
    tools,
    authz: authzConfig(values["authz-config"]),
    audit: auditConfig(values["enable-audit"], values["audit-config"], name),
    telemetry: telemetrySpec(values, given, name),
    toolSearch,
  });
}
