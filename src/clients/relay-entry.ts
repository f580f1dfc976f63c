/**
 * The entry of a client that only starts processes (Claude Desktop): `mcpmgr proxy stdio NAME`, which looks
 * the workload's current URL up each time the client starts it, with what the relay needs to find mcpmgr's
 * files when the client starts it with an environment of its own. Its own module: the command line and the
 * environment are mcpmgr's own, where the rest of clients/catalog.ts is each client's file and shape.
 */
import { posix, win32 } from "node:path";
import { envValue } from "./locations.ts";
import type { ClientContext, EntryShape, WorkloadEndpoint } from "./types.ts";

/**
 * `mcpmgr proxy stdio NAME`. The client may start it with a different environment than the
 * user's shell (no MCPMGR_HOME): the entry carries MCPMGR_HOME when mcpmgr runs with one, so
 * the relay finds the same workloads.
 */
export function proxyStdioEntry(workload: WorkloadEndpoint, ctx: ClientContext): EntryShape {
  const [command, ...prefix] = ctx.selfCommand;
  if (ctx.selfCommandCaveat !== undefined) ctx.log.warn(ctx.selfCommandCaveat);
  const env = relayEnvironment(ctx);
  const value = {
    command,
    args: [...prefix, "proxy", "stdio", workload.name],
    ...(env !== undefined ? { env } : {}),
  };
  return { value, managed: Object.keys(value) };
}

/**
 * Where mcpmgr's files are, for a relay the client starts with an environment of its own (a macOS
 * app never sees the shell's variables): MCPMGR_HOME, else the XDG base directories mcpmgr follows
 * when they are set (absolute ones: mcpmgr ignores relative ones too).
 */
function relayEnvironment(ctx: ClientContext): Record<string, string> | undefined {
  const home = absoluteHome(envValue(ctx, "MCPMGR_HOME"), ctx);
  if (home !== undefined) return { MCPMGR_HOME: home };
  if (ctx.platform === "win32") return undefined;
  const env: Record<string, string> = {};
  for (const name of ["XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"]) {
    const value = envValue(ctx, name);
    if (value !== undefined && posix.isAbsolute(value)) env[name] = value;
  }
  return Object.keys(env).length > 0 ? env : undefined;
}

/**
 * A relative MCPMGR_HOME names a folder from the directory mcpmgr ran in (state/paths.ts); the
 * client starts the relay from a directory of its own, where the same words name another folder.
 */
function absoluteHome(home: string | undefined, ctx: ClientContext): string | undefined {
  if (home === undefined) return undefined;
  const path = ctx.platform === "win32" ? win32 : posix;
  return path.isAbsolute(home) ? home : path.resolve(home);
}
