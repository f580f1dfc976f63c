/**
 * The process launcher: a package's command started as a local process, in the process
 * sandbox that enforces its permission profile (runtime/sandbox-launch.ts: bubblewrap with an
 * allow-listed view of the host, an unprivileged uid, the seccomp filter), or without one
 * when the RunSpec accepted that, with its environment and secrets; an HTTP server is told
 * where to listen through MCP_TRANSPORT and MCP_PORT. What the sandbox grants is printed
 * before it starts, in the user's terminal.
 */
import { homedir } from "node:os";
import { findFreePort } from "../proxy/serve.ts";
import { processGrantSummary } from "../runtime/grant-summary.ts";
import { mcpmgrProtectedDirs } from "../runtime/host-paths.ts";
import { type WorkingDirView, workingDirView } from "../runtime/mount-policy.ts";
import { launchProcess } from "../runtime/process.ts";
import { launchInSandbox } from "../runtime/sandbox-launch.ts";
import { processHandle, type LaunchedServer } from "../runtime/server-handle.ts";
import type { WorkloadContext } from "./context.ts";
import { overlaysFor, processMounts } from "./overlays.ts";
import type { ProcessPlacement } from "./placement.ts";
import { serverEnvironment } from "./server-environment.ts";

/** Whether the sandbox shows the working directory, and the sockets it covers there: decided once per start. */
export function processWorkingDir(placement: ProcessPlacement, ctx: WorkloadContext): WorkingDirView {
  return workingDirView(placement.cwd, { home: homedir(), protectedDirs: mcpmgrProtectedDirs(ctx.env) });
}

/** The mounts the ignore overlays apply to: the shown working directory, a local package, the profile's paths, -v. */
export function sandboxedMounts(placement: ProcessPlacement, workingDir: WorkingDirView) {
  const { server, source } = placement;
  return processMounts(server.profile, server.volumes, {
    ...(workingDir.shown ? { workingDir } : {}),
    ...(source.localPath ? { localPackage: source.localPath } : {}),
  });
}

/** What the sandboxed server gets (paths, network, devices), printed before it starts (foreground, or the pre-flight). */
export function printProcessGrants(
  name: string,
  placement: ProcessPlacement,
  workingDir: WorkingDirView,
  ctx: WorkloadContext,
): void {
  const { server, source } = placement;
  ctx.log.info(
    processGrantSummary({
      workload: name,
      profile: server.profile,
      origin: server.profileOrigin,
      volumes: server.volumes,
      command: placement.command,
      workingDir,
      ...(source.localPath ? { localPackage: source.localPath } : {}),
      home: homedir(),
    }),
  );
}

export async function launchLocalProcess(
  name: string,
  placement: ProcessPlacement,
  ctx: WorkloadContext,
  options: { readonly interactive: boolean },
): Promise<LaunchedServer> {
  const { server, source } = placement;
  const environment = await serverEnvironment(server.variables, ctx);
  const http =
    server.transport === "stdio"
      ? undefined
      : { host: placement.target.host, port: placement.target.port ?? (await findFreePort()) };
  const env = {
    ...environment.env,
    ...(http ? { MCP_TRANSPORT: server.transport, MCP_PORT: String(http.port) } : {}),
  };
  if (placement.bwrap === undefined) {
    const child = launchProcess({ command: placement.command, env, cwd: placement.cwd });
    return { server: processHandle(child, environment), ...(http ? { http } : {}) };
  }
  const volumes = server.volumes.map((v) => ({
    hostPath: v.hostPath,
    targetPath: v.containerPath,
    readOnly: v.readOnly,
  }));
  // A local project is the server's own code: visible read-only even where the sandbox hides (/tmp, $HOME).
  if (source.localPath) volumes.unshift({ hostPath: source.localPath, targetPath: source.localPath, readOnly: true });
  const workingDir = processWorkingDir(placement, ctx);
  if (options.interactive) printProcessGrants(name, placement, workingDir, ctx);
  const { overlays, emptyFile } = await overlaysFor(
    sandboxedMounts(placement, workingDir),
    { ignoreGlobally: server.ignoreGlobally, print: server.printOverlays && options.interactive },
    ctx,
  );
  const child = await launchInSandbox({
    bwrap: placement.bwrap,
    command: placement.command,
    env,
    cwd: placement.cwd,
    workingDir,
    profile: server.profile,
    volumes,
    overlays,
    ...(emptyFile ? { emptyFile } : {}),
    stateEnv: ctx.env,
    tmpfsBytes: placement.tmpfsBytes,
  });
  return { server: processHandle(child, environment), ...(http ? { http } : {}) };
}
