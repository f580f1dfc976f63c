/**
 * The process launcher: a package's command started as a local process, in the bubblewrap
 * sandbox that enforces its permission profile (or without one, when the RunSpec accepted
 * that), with its environment and secrets; an HTTP server is told where to listen through
 * MCP_TRANSPORT and MCP_PORT.
 */
import { findFreePort } from "../proxy/serve.ts";
import { launchProcess } from "../runtime/process.ts";
import { bwrapArgs } from "../runtime/sandbox.ts";
import { processHandle, type LaunchedServer } from "../runtime/server-handle.ts";
import type { WorkloadContext } from "./context.ts";
import { overlaysFor, processMounts } from "./overlays.ts";
import type { ProcessPlacement } from "./placement.ts";
import { serverEnvironment } from "./server-environment.ts";

export async function launchLocalProcess(
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
    return { server: processHandle(child, environment.redact), ...(http ? { http } : {}) };
  }
  const volumes = server.volumes.map((v) => ({
    hostPath: v.hostPath,
    targetPath: v.containerPath,
    readOnly: v.readOnly,
  }));
  // A local project is the server's own code: visible read-only even where the sandbox hides (/tmp, $HOME).
  if (source.localPath) volumes.unshift({ hostPath: source.localPath, targetPath: source.localPath, readOnly: true });
  const { overlays, emptyFile } = await overlaysFor(
    processMounts(server.profile, server.volumes),
    { ignoreGlobally: server.ignoreGlobally, print: server.printOverlays && options.interactive },
    ctx,
  );
  const args = bwrapArgs({
    profile: server.profile,
    volumes,
    workingDir: placement.cwd,
    hidden: [ctx.paths.configDir, ctx.paths.dataDir, ctx.paths.stateDir],
    overlays,
    ...(emptyFile ? { emptyFile } : {}),
  });
  const child = launchProcess({
    command: placement.command,
    env,
    cwd: placement.cwd,
    sandbox: { bwrap: placement.bwrap, args },
  });
  return { server: processHandle(child, environment.redact), ...(http ? { http } : {}) };
}
