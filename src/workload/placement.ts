/**
 * Where a workload runs, and the rules between options that depend on it: a remote URL runs
 * nowhere locally (here), a process runs in the bubblewrap sandbox (process-placement.ts), a
 * container on the network its profile and options describe (container-placement.ts); what
 * a local server's options say, whichever runtime starts it, is local-server.ts. Every
 * combination that cannot work is refused before anything starts, with the option to change.
 * Each placement is its own module so that a workload loads the rules of its kind only.
 */
import {
  assertCredentialsOverHttps,
  assertTokenExchangeHasCaller,
  outgoingAuthSpec,
  type OutgoingAuthSpec,
} from "../config/outgoing-auth-spec.ts";
import type { ParsedRunArgv } from "../config/run-argv.ts";
import type { VolumeMount } from "../config/values.ts";
import { McpmgrError } from "../errors.ts";
import type { ResourceLimits, VolumeSpec } from "../runtime/docker/container-config.ts";
import type { ContainerEngine } from "../runtime/docker/engine.ts";
import type { VerificationMode } from "../runtime/docker/images.ts";
import type { PermissionProfile } from "../runtime/permission-profile.ts";
import type { ServerSource } from "../runtime/source.ts";
import type { ConcreteSource } from "./locate.ts";
import type { ServerVariables } from "./server-environment.ts";

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
  /** The size of the sandbox's /tmp, /dev/shm and home, each (MCPMGR_SANDBOX_TMPFS_SIZE, read before anything starts). */
  readonly tmpfsBytes: number;
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
export type Option = keyof Values & string;

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
  // Labels go on the container (and its network): a process has nowhere to carry them.
  "label",
];

/**
 * Where the refusal of an option that does nothing where it is given goes when the options come from a
 * workload's record: `--label` on a process, `--target-host`/`--target-port` on a stdio server,
 * `--endpoint-prefix` without an SSE front end and arguments after `--` for a remote URL were accepted (and ignored) by earlier versions, so a record may
 * hold them; such a workload still starts, with a warning. Undefined (a command line): refused.
 */
export type InertOptionWarning = ((text: string) => void) | undefined;

/** In each such warning: `start`/`restart` show the supervisor's line in the terminal (cli/start-relay.ts). */
export const RECORDED_OPTION_MARKER = "as the version that recorded this workload did";

/**
 * In the warning that a container's writable volumes can get set-user-ID programs (launch-container.ts,
 * security.md W9), which `start`/`restart` relay from the supervisor's log too.
 */
export const SET_ID_EXPOSURE_MARKER = "can leave set-user-ID programs in its writable volumes";

/** Of the container-only options, those earlier versions accepted (and ignored) for a process: a record may hold them. */
const acceptedBefore: ReadonlySet<Option> = new Set(["label"]);

/**
 * Refuses `error`, or, for recorded options, warns that what it names is ignored, or (`outcome`) whatever else
 * the version that recorded them did with it, which the start then does again.
 */
export function refuseInert(error: McpmgrError, warn: InertOptionWarning, outcome = "ignored"): void {
  if (warn === undefined) throw error;
  warn(`${error.message}; ${outcome}, ${RECORDED_OPTION_MARKER} (hint: ${error.hint})`);
}

/**
 * `--endpoint-prefix` changes the URL in a legacy SSE stream's `endpoint` event, which only an SSE front end
 * sends: a stdio server exposed with `--proxy-mode sse`, or a server that speaks SSE. Refused (warned about
 * for a record: earlier versions accepted it) where the proxy serves streamable HTTP, which has no such URL.
 * A remote URL's transport is the remote's, known only when it answers: there the prefix stays.
 */
export function assertEndpointPrefixApplies(
  parsed: ParsedRunArgv,
  transport: "stdio" | "sse" | "streamable-http",
  inert?: InertOptionWarning,
): void {
  if (!parsed.given.has("endpoint-prefix")) return;
  const mode = parsed.values["proxy-mode"];
  if (transport === "sse" || (transport === "stdio" && mode === "sse")) return;
  const serves =
    transport === "stdio"
      ? "this stdio server is exposed with --proxy-mode streamable-http"
      : "this server speaks streamable-http";
  refuseInert(
    new McpmgrError(
      "CONFLICTING_OPTIONS",
      `--endpoint-prefix applies to SSE endpoint URLs, but ${serves}, which has none`,
      {
        hint: "leave --endpoint-prefix out: a streamable-http client is given no endpoint URL to prefix",
      },
    ),
    inert,
  );
}

export function assertNoContainerOptions(
  parsed: ParsedRunArgv,
  why: string,
  inert?: InertOptionWarning,
  hint = "leave it out, or run with a container engine (MCPMGR_RUNTIME=docker|podman)",
): void {
  for (const option of containerOnlyOptions) {
    if (parsed.given.has(option)) {
      const error = new McpmgrError("CONFLICTING_OPTIONS", `--${option} applies to container workloads, but ${why}`, {
        hint,
      });
      if (acceptedBefore.has(option)) refuseInert(error, inert);
      else throw error;
    }
  }
}

export function remotePlacement(
  parsed: ParsedRunArgv,
  source: Extract<ConcreteSource, { kind: "remote" }>,
  incomingAuth: boolean,
  inert?: InertOptionWarning,
): RemotePlacement {
  for (const option of localOnlyOptions) {
    if (parsed.given.has(option)) {
      throw new McpmgrError("INVALID_OPTION", `--${option} applies to servers mcpmgr starts, not to a remote URL`, {
        hint: `leave --${option} out`,
      });
    }
  }
  // No engine makes a remote a container: the engine is not the way out here.
  assertNoContainerOptions(
    parsed,
    "a remote URL runs nowhere locally",
    undefined,
    "leave it out: mcpmgr only proxies a remote server, which runs on its own host",
  );
  if (parsed.passthrough.length > 0) {
    refuseInert(
      new McpmgrError("INVALID_OPTION", "arguments after -- go to servers mcpmgr starts, not to a remote URL", {
        hint: "leave them out (a remote takes its settings in its URL or headers: --remote-forward-headers)",
      }),
      inert,
    );
  }
  const outgoingAuth = outgoingAuthSpec(parsed.values, parsed.given);
  assertTokenExchangeHasCaller(outgoingAuth, incomingAuth);
  assertCredentialsOverHttps(outgoingAuth, source.url);
  return { kind: "remote", url: source.url, outgoingAuth };
}
