/**
 * Permission profiles as registry entries carry them (docs/file-formats.md): the built-in names
 * `none` and `network`, or a profile object in the format other MCP tooling already uses:
 *   {"read":[...],"write":[...],"network":{"mode":"","outbound":{"insecure_allow_all":bool,
 *    "allow_host":[...],"allow_port":[...]},"inbound":{"allow_host":[...]}},"privileged":false}
 * Every field of the object is optional and defaults to the least privilege.
 * `allow_host` entries are host names, IP addresses, or `.example.com` for a domain and
 * its subdomains. `read`/`write` entries are mounts: `host-path` or `host-path:container-path`.
 */
import { existsSync } from "node:fs";
import * as v from "valibot";
import { closeMatches, didYouMean } from "../close-matches.ts";
import { McpmgrError } from "../errors.ts";
import { decodeConfigFile } from "./config-file.ts";
import { ipVersion } from "./ip-address.ts";
import { portNumber } from "./values.ts";
import { isObject } from "../objects.ts";

export const builtinProfileNames = ["none", "network"] as const;
export type BuiltinProfileName = (typeof builtinProfileNames)[number];

export interface OutboundRules {
  readonly insecure_allow_all: boolean;
  readonly allow_host: readonly string[];
  readonly allow_port: readonly number[];
}

export interface PermissionProfile {
  readonly read: readonly string[];
  readonly write: readonly string[];
  readonly network: {
    readonly mode?: string;
    readonly outbound: OutboundRules;
    readonly inbound: { readonly allow_host: readonly string[] };
  };
  readonly privileged: boolean;
}

export type Permissions = BuiltinProfileName | PermissionProfile;

const hostLabel = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
const hostRulePattern = new RegExp(`^\\.?${hostLabel}(?:\\.${hostLabel})*\\.?$`);

const hostRule = v.pipe(
  v.string(),
  v.check(
    (text) => hostRulePattern.test(text) || ipVersion(text.replace(/^\[(.*)\]$/, "$1")) !== 0,
    "must be a host name, an IP address, or .domain for a domain and its subdomains",
  ),
);

const mount = v.pipe(
  v.string(),
  v.nonEmpty("must not be empty"),
  v.check((text) => !/[\n\r\0]/.test(text), "must not contain line breaks"),
);

const outboundSchema = v.strictObject({
  insecure_allow_all: v.optional(v.boolean(), false),
  allow_host: v.optional(v.array(hostRule), () => []),
  allow_port: v.optional(v.array(portNumber), () => []),
});

const profileSchema = v.strictObject({
  read: v.optional(v.array(mount), () => []),
  write: v.optional(v.array(mount), () => []),
  network: v.optional(
    v.strictObject({
      mode: v.optional(v.string()),
      outbound: v.optional(outboundSchema, () => ({})),
      inbound: v.optional(v.strictObject({ allow_host: v.optional(v.array(hostRule), () => []) }), () => ({})),
    }),
    () => ({}),
  ),
  privileged: v.optional(v.boolean(), false),
});

const builtinSchema = v.picklist(builtinProfileNames, `must be "none", "network" or a permission profile object`);

/** `"none"`, `"network"` or a profile object; other values are refused with a message naming all three. */
export const permissionsSchema = v.lazy((input) => {
  if (typeof input === "string") return builtinSchema;
  if (isObject(input)) return profileSchema;
  return v.custom<never>(() => false, `must be "none", "network" or a permission profile object`);
});

/** The built-ins as full profiles, so a runtime can treat every profile the same way. */
export function expandPermissions(permissions: Permissions): PermissionProfile {
  if (typeof permissions !== "string") return permissions;
  return {
    read: [],
    write: [],
    network: {
      outbound: { insecure_allow_all: permissions === "network", allow_host: [], allow_port: [] },
      inbound: { allow_host: [] },
    },
    privileged: false,
  };
}

/** One line for humans: "no network, no mounts", "outbound to .github.com on 443", ... */
export function describePermissions(permissions: Permissions): string {
  if (permissions === "none") return "none (no network, no mounts)";
  if (permissions === "network") return "network (any outbound connection, no mounts)";
  const parts: string[] = [];
  const out = permissions.network.outbound;
  if (out.insecure_allow_all) {
    parts.push(
      out.allow_port.length > 0
        ? `outbound to any host (ports listed: ${out.allow_port.join(", ")})`
        : "outbound to any host",
    );
  } else if (out.allow_host.length > 0 || out.allow_port.length > 0) {
    const hosts = out.allow_host.length > 0 ? out.allow_host.join(", ") : "any host";
    const ports =
      out.allow_port.length > 0 ? ` on port${out.allow_port.length > 1 ? "s" : ""} ${out.allow_port.join(", ")}` : "";
    parts.push(`outbound to ${hosts}${ports}`);
  } else {
    parts.push("no network");
  }
  if (permissions.network.mode) parts.push(`network mode ${permissions.network.mode}`);
  if (permissions.network.inbound.allow_host.length > 0)
    parts.push(`inbound from ${permissions.network.inbound.allow_host.join(", ")}`);
  parts.push(permissions.read.length > 0 ? `read ${permissions.read.join(", ")}` : "no read mounts");
  parts.push(permissions.write.length > 0 ? `write ${permissions.write.join(", ")}` : "no write mounts");
  if (permissions.privileged) parts.push("PRIVILEGED");
  return parts.join("; ");
}

/** `--permission-profile`: `none`, `network`, or the path of a JSON file in the format above. */
export function loadPermissionProfile(nameOrPath: string): PermissionProfile {
  if (nameOrPath === "none" || nameOrPath === "network") return expandPermissions(nameOrPath);
  // A bare word that names no file was meant as a built-in (`netwrok`): "no such file" would hide that.
  if (!/[\\/.]/.test(nameOrPath) && !existsSync(nameOrPath)) {
    const nearest = didYouMean(closeMatches(nameOrPath, builtinProfileNames));
    throw new McpmgrError(
      "INVALID_OPTION",
      `--permission-profile ${JSON.stringify(nameOrPath)}: not a built-in profile (none, network), nor a file`,
      {
        hint: `${nearest ? `${nearest} Otherwise give` : "give"} none, network, or the path of a JSON profile (docs/file-formats.md)`,
      },
    );
  }
  return decodeConfigFile(nameOrPath, profileSchema, {
    option: "--permission-profile",
    yaml: false,
    hint: 'expected {"read":[...],"write":[...],"network":{"outbound":{...}}}',
  }) as PermissionProfile;
}
