/**
 * Where a workload runs, and the rules between options that depend on it: a remote URL runs
 * nowhere locally, a process runs in the bubblewrap sandbox, a container on the network its
 * profile and options describe (container-placement.ts). Every combination that cannot work
 * is refused here, before anything starts, with the option to change; a registry entry's
 * profile is checked against the mount policy before anything uses it.
 */
import { homedir } from "node:os";
import { outgoingAuthOptions } from "../config/flags/outgoing-auth.ts";
import { outgoingAuthSpec, type OutgoingAuthSpec } from "../config/outgoing-auth-spec.ts";
import { expandPermissions, loadPermissionProfile } from "../config/permission-profile.ts";
import type { ParsedRunArgv } from "../config/run-argv.ts";
import type { VolumeMount } from "../config/values.ts";
import { McpmgrError } from "../errors.ts";
import type { RegistryEntry } from "../registry/entry.ts";
import type { ResourceLimits, VolumeSpec } from "../runtime/docker/container-config.ts";
import type { ContainerEngine } from "../runtime/docker/engine.ts";
import type { VerificationMode } from "../runtime/docker/images.ts";
import { mcpmgrProtectedDirs } from "../runtime/host-paths.ts";
import { assertRegistryMounts } from "../runtime/mount-policy.ts";
import { packageCommand, packageWorkingDir } from "../runtime/package-command.ts";
import { allowsNetwork, restrictsOutbound, type PermissionProfile } from "../runtime/permission-profile.ts";
import { findBwrap, unenforceableError } from "../runtime/sandbox.ts";
import type { ServerSource } from "../runtime/source.ts";
import type { WorkloadContext } from "./context.ts";
import type { ConcreteSource } from "./locate.ts";
import { serverVariables, type ServerVariables } from "./server-environment.ts";

export type Transport = "stdio" | "sse" | "streamable-http";
export type PackageSource = Extract<ServerSource, { kind: "package" }>;
export type ImageSource = Extract<ServerSource, { kind: "image" }>;

/** A server mcpmgr starts, as the options and the registry entry describe it (either runtime). */
export interface LocalServer {
  readonly transport: Transport;
  /** What follows `--`, else the registry entry's arguments. */
  readonly args: readonly string[];
  readonly profile: PermissionProfile;
  /** Where the profile came from, as the grant summary names it. */
  readonly profileOrigin: string;
  readonly volumes: readonly VolumeMount[];
  readonly variables: ServerVariables;
  readonly ignoreGlobally: boolean;
  /** --print-resolved-overlays: listed by whichever start runs in the user's terminal. */
  readonly printOverlays: boolean;
}

export interface ProcessPlacement {
  readonly kind: "process";
  readonly source: PackageSource;
  readonly server: LocalServer;
  /** The package's command (npx -y, uvx, go run, or a local project's entry). */
  readonly command: readonly string[];
  readonly cwd: string;
  /** Where an HTTP server listens: --target-host, and --target-port or a free port at start. */
  readonly target: { readonly host: string; readonly port: number | undefined };
  /** bwrap's path; undefined: no sandbox, as --insecure-allow-unsandboxed accepted. */
  readonly bwrap: string | undefined;
}

export interface ContainerPlacement {
  readonly kind: "container";
  readonly source: PackageSource | ImageSource;
  readonly engine: ContainerEngine;
  readonly server: LocalServer;
  /** The profile's read/write lists and -v volumes, checked to exist. */
  readonly mounts: readonly VolumeSpec[];
  /** Container paths where a mount would show mcpmgr's own directories: hidden under an empty tmpfs. */
  readonly hiddenDirs: readonly string[];
  /**
   * Its own internal network behind an egress proxy: --isolate-network, profile none for an
   * HTTP server, or (on Docker) any HTTP server whose network the user did not choose, so the
   * proxy is the only way to its MCP port.
   */
  readonly isolate: boolean;
  readonly allowGateway: boolean;
  /** The engine's network mode; "" when isolated (the internal network is made at start). */
  readonly networkMode: string;
  readonly publish: readonly { readonly containerPort: number; readonly hostPort: number }[];
  /** The port an HTTP server listens on inside: --target-port or the entry's; else the image's EXPOSE, else 8080. */
  readonly targetPort: number | undefined;
  readonly verification: VerificationMode;
  /** How a protocol-scheme package's image is built. */
  readonly build: {
    readonly runtimeImage?: string;
    readonly addPackages: readonly string[];
    readonly caCertPath?: string;
  };
  readonly limits: ResourceLimits;
}

export interface RemotePlacement {
  readonly kind: "remote";
  readonly url: URL;
  readonly outgoingAuth: OutgoingAuthSpec;
}

export type Placement = ProcessPlacement | ContainerPlacement | RemotePlacement;

export type Values = ParsedRunArgv["values"];
type Option = keyof Values & string;

/** Options for a server mcpmgr starts, meaningless for a remote URL. */
const localOnlyOptions: readonly Option[] = [
  "env",
  "env-file",
  "env-file-dir",
  "secret",
  "volume",
  "permission-profile",
  "allow-registry-mount",
  "transport",
  "proxy-mode",
  "insecure-allow-unsandboxed",
  "target-host",
  "target-port",
  "label",
  "print-resolved-overlays",
];

/** Options that only mean something for a container; refused for other runtimes rather than ignored. */
const containerOnlyOptions: readonly Option[] = [
  "network",
  "isolate-network",
  "allow-docker-gateway",
  "publish",
  "image-verification",
  "runtime-image",
  "runtime-add-package",
  "ca-cert",
];

function assertNoContainerOptions(parsed: ParsedRunArgv, why: string): void {
  for (const option of containerOnlyOptions) {
    if (parsed.given.has(option)) {
      throw new McpmgrError("CONFLICTING_OPTIONS", `--${option} applies to container workloads, but ${why}`, {
        hint: "leave it out, or run with a container engine (MCPMGR_RUNTIME=docker|podman)",
      });
    }
  }
}

export function remotePlacement(
  parsed: ParsedRunArgv,
  source: Extract<ConcreteSource, { kind: "remote" }>,
  incomingAuth: boolean,
): RemotePlacement {
  for (const option of localOnlyOptions) {
    if (parsed.given.has(option)) {
      throw new McpmgrError("INVALID_OPTION", `--${option} applies to servers mcpmgr starts, not to a remote URL`, {
        hint: `leave --${option} out`,
      });
    }
  }
  assertNoContainerOptions(parsed, "a remote URL runs nowhere locally");
  const outgoingAuth = outgoingAuthSpec(parsed.values, parsed.given);
  if (outgoingAuth.tokenExchange && !incomingAuth) {
    throw new McpmgrError(
      "MISSING_OPTION",
      "--token-exchange-url exchanges the client's token, so it needs incoming authentication",
      { hint: "add --oidc-issuer (and --oidc-audience)" },
    );
  }
  return { kind: "remote", url: source.url, outgoingAuth };
}

/** What a local server's options say, whichever runtime starts it. */
export function localServer(
  parsed: ParsedRunArgv,
  entry: RegistryEntry | undefined,
  profile: PermissionProfile,
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
  return {
    transport: values.transport ?? entry?.transport ?? "stdio",
    args: parsed.passthrough.length > 0 || entry === undefined ? parsed.passthrough : entry.args,
    profile,
    profileOrigin: values["permission-profile"]
      ? `--permission-profile ${values["permission-profile"]}`
      : entry
        ? `registry entry ${entry.name}`
        : "default profile",
    volumes: values.volume,
    variables: serverVariables(values, entry),
    ignoreGlobally: values["ignore-globally"],
    printOverlays: values["print-resolved-overlays"],
  };
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

export function processPlacement(
  parsed: ParsedRunArgv,
  source: PackageSource | ImageSource,
  entry: RegistryEntry | undefined,
  ctx: WorkloadContext,
): ProcessPlacement {
  const { values } = parsed;
  if (source.kind !== "package") throw new McpmgrError("INTERNAL", "the process runtime cannot run an image");
  assertNoContainerOptions(
    parsed,
    "this server runs as a local process (no container engine, or MCPMGR_RUNTIME=process)",
  );
  const profile = profileOf(values, entry, ctx);
  const server = localServer(parsed, entry, profile);
  if (server.transport !== "stdio" && !allowsNetwork(profile)) {
    throw new McpmgrError(
      "CONFLICTING_OPTIONS",
      `--transport ${server.transport} needs a network, but the permission profile allows none`,
      {
        hint: "use --permission-profile network, a stdio server, or a container runtime (which isolates it instead)",
      },
    );
  }
  const unsandboxed = values["insecure-allow-unsandboxed"];
  if (restrictsOutbound(profile)) {
    // bubblewrap can give all of the network or none of it, not a host/port allow-list.
    if (!unsandboxed) {
      throw new McpmgrError(
        "SANDBOX_UNAVAILABLE",
        "the process runtime cannot limit outbound connections to the profile's allow_host/allow_port",
        {
          hint: "pass --insecure-allow-unsandboxed to accept unrestricted network for this server, or use permission profile none",
        },
      );
    }
    ctx.log.warn(
      "the permission profile limits outbound hosts/ports; the process runtime cannot, so the server gets the whole network (--insecure-allow-unsandboxed)",
    );
  }
  const bwrap = findBwrap();
  if (bwrap === undefined) {
    if (!unsandboxed) throw unenforceableError();
    ctx.log.warn("running the MCP server WITHOUT a sandbox (--insecure-allow-unsandboxed)");
  }
  return {
    kind: "process",
    source,
    server,
    command: packageCommand(source, server.args),
    cwd: packageWorkingDir(source) ?? process.cwd(),
    target: { host: values["target-host"], port: values["target-port"] },
    bwrap,
  };
}
