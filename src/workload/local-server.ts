/**
 * What a local server's options say, whichever runtime starts it (a sandboxed process or a
 * container): transport, arguments, environment, and the permission profile, a registry
 * entry's checked against the mount policy before anything uses it.
 */
import { homedir } from "node:os";
import { outgoingAuthOptions } from "../config/flags/outgoing-auth.ts";
import { expandPermissions, loadPermissionProfile } from "../config/permission-profile.ts";
import type { ParsedRunArgv } from "../config/run-argv.ts";
import { McpmgrError } from "../errors.ts";
import type { RegistryEntry } from "../registry/entry.ts";
import { mcpmgrProtectedDirs } from "../runtime/host-paths.ts";
import { assertRegistryMounts } from "../runtime/mount-policy.ts";
import type { PermissionProfile } from "../runtime/permission-profile.ts";
import type { WorkloadContext } from "./context.ts";
import { type InertOptionWarning, type LocalServer, type Option, refuseInert, type Values } from "./placement.ts";
import { serverVariables } from "./server-environment.ts";

/** What a local server's options say, whichever runtime starts it. */
export function localServer(
  parsed: ParsedRunArgv,
  entry: RegistryEntry | undefined,
  profile: PermissionProfile,
  /** The port mcpmgr will give an HTTP server when one is chosen already (--target-port, the entry's). */
  listenPort: number | undefined,
  /** Set for a workload's recorded options: what earlier versions accepted is warned about, not refused. */
  inert?: InertOptionWarning,
): LocalServer {
  const { values, given } = parsed;
  const remoteOnly = Object.keys(outgoingAuthOptions).find(
    (option) => given.has(option as Option) && (values as Record<string, unknown>)[option] !== false,
  );
  if (remoteOnly) {
    throw new McpmgrError(
      "INVALID_OPTION",
      `--${remoteOnly} authenticates mcpmgr to a remote URL; this server runs locally`,
      { hint: `leave --${remoteOnly} out (pass credentials to a local server with -e or --secret)` },
    );
  }
  const transport = serverTransport(parsed, entry);
  return {
    transport,
    args: parsed.passthrough.length > 0 || entry === undefined ? parsed.passthrough : entry.args,
    profile,
    profileOrigin: values["permission-profile"]
      ? `--permission-profile ${values["permission-profile"]}`
      : entry
        ? `registry entry ${entry.name}`
        : "default profile",
    volumes: values.volume,
    variables: serverVariables(
      values,
      entry,
      transport === "stdio" ? undefined : { transport, port: listenPort },
      inert === undefined ? undefined : (error, outcome) => refuseInert(error, inert, outcome),
    ),
    ignoreGlobally: values["ignore-globally"],
    printOverlays: values["print-resolved-overlays"],
  };
}

/**
 * --transport, else the registry entry's, else stdio. A registry entry's arguments start the server
 * over its own transport: another one given over them is refused (it would be told to listen on a port
 * it never opens), with the way to what was likely meant; given with the server's own arguments after
 * `--`, it is the user's to say.
 */
export function serverTransport(parsed: ParsedRunArgv, entry: RegistryEntry | undefined): LocalServer["transport"] {
  const given = parsed.values.transport;
  const own = entry?.transport ?? "stdio";
  if (entry === undefined || given === undefined || given === own || parsed.passthrough.length > 0) return given ?? own;
  // --transport says what the server speaks; what clients reach a stdio server over is --proxy-mode.
  const front =
    own !== "stdio"
      ? "leave --transport out"
      : given === "sse"
        ? "leave --transport out (it names what the server speaks); for clients to reach it over SSE, give --proxy-mode sse"
        : "leave --transport out (it names what the server speaks); clients reach a stdio server over streamable-http already";
  throw new McpmgrError(
    "CONFLICTING_OPTIONS",
    `--transport ${given} does not fit registry entry ${entry.name}: its server speaks ${own}`,
    { hint: `${front}, or give the server's own arguments for ${given} after --` },
  );
}

/**
 * --permission-profile, else the registry entry's, else `network`. A registry entry is
 * third-party input: its mounts are checked (real paths) before anything uses them, and a
 * sensitive one needs --allow-registry-mount.
 */
export function profileOf(values: Values, entry: RegistryEntry | undefined, ctx: WorkloadContext): PermissionProfile {
  const granted = values["allow-registry-mount"];
  if (granted.length > 0 && (entry === undefined || values["permission-profile"])) {
    throw new McpmgrError(
      "CONFLICTING_OPTIONS",
      "--allow-registry-mount grants a registry entry's own mounts; this run uses no registry entry's profile",
      { hint: "leave it out, or mount the path yourself with -v" },
    );
  }
  if (values["permission-profile"]) return loadPermissionProfile(values["permission-profile"]);
  if (entry === undefined) return expandPermissions("network");
  const profile = expandPermissions(entry.permissions);
  assertRegistryMounts(entry.name, profile, granted, {
    home: homedir(),
    protectedDirs: mcpmgrProtectedDirs(ctx.env),
  });
  return profile;
}
