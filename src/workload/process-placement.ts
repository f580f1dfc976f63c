/**
 * The rules of a process placement: the package's command in the bubblewrap sandbox, which
 * can give a server all of the network or none of it; what the sandbox cannot enforce is
 * refused unless --insecure-allow-unsandboxed accepts it.
 */
import type { ParsedRunArgv } from "../config/run-argv.ts";
import { McpmgrError } from "../errors.ts";
import type { RegistryEntry } from "../registry/entry.ts";
import { packageCommand, packageWorkingDir } from "../runtime/package-command.ts";
import { allowsNetwork, restrictsOutbound } from "../runtime/permission-profile.ts";
import { findBwrap, unenforceableError } from "../runtime/sandbox.ts";
import type { WorkloadContext } from "./context.ts";
import { sandboxTmpfsBytes } from "./limits.ts";
import { localServer, profileOf } from "./local-server.ts";
import {
  assertNoContainerOptions,
  type ImageSource,
  type InertOptionWarning,
  type PackageSource,
  type ProcessPlacement,
  refuseInert,
} from "./placement.ts";

export function processPlacement(
  parsed: ParsedRunArgv,
  source: PackageSource | ImageSource,
  entry: RegistryEntry | undefined,
  ctx: WorkloadContext,
  inert?: InertOptionWarning,
): ProcessPlacement {
  const { values } = parsed;
  if (source.kind !== "package") throw new McpmgrError("INTERNAL", "the process runtime cannot run an image");
  assertNoContainerOptions(
    parsed,
    "this server runs as a local process (no container engine, or MCPMGR_RUNTIME=process)",
    inert,
  );
  const profile = profileOf(values, entry, ctx);
  const server = localServer(parsed, entry, profile, values["target-port"], inert);
  if (server.transport === "stdio") {
    for (const option of ["target-host", "target-port"] as const) {
      if (parsed.given.has(option)) {
        refuseInert(
          new McpmgrError("CONFLICTING_OPTIONS", `--${option} applies to sse and streamable-http servers`, {
            hint: "leave it out, or give --transport",
          }),
          inert,
        );
      }
    }
  }
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
          hint: "run it with a container engine (MCPMGR_RUNTIME=docker|podman) and --isolate-network, which enforces the list, or pass --insecure-allow-unsandboxed to give it the whole network",
        },
      );
    }
    ctx.log.warn(
      "the permission profile limits outbound hosts/ports; the process runtime cannot, so the server gets the whole network (--insecure-allow-unsandboxed)",
    );
  }
  if (source.localPath === undefined && !allowsNetwork(profile)) {
    // Packages are fetched inside the sandbox (docs/process-sandbox.md): without a network only one
    // installed already can start (the package managers are told they are offline: sandbox-launch.ts).
    ctx.log.warn(
      `the permission profile gives ${source.name} no network, and ${source.manager} fetches it inside the sandbox: ` +
        `it starts only if it is installed in the working directory already (else run it with --permission-profile network, ` +
        `or with a container engine, which installs packages outside the sandbox)`,
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
    tmpfsBytes: sandboxTmpfsBytes(ctx.env),
  };
}
