/**
 * The folders AI clients keep their settings in, per platform, from the injected home,
 * platform and environment (never the process's own), so a test on Linux can ask where
 * VS Code keeps mcp.json on Windows.
 *
 *   appConfig   Electron apps and most desktop software: %APPDATA% on Windows,
 *               ~/Library/Application Support on macOS, $XDG_CONFIG_HOME or ~/.config on Linux.
 *   xdgConfig   tools that follow XDG on every Unix (and some on Windows too): $XDG_CONFIG_HOME
 *               or ~/.config.
 *   inHome      dot-folders straight in the home directory (~/.cursor, %USERPROFILE%\.cursor).
 */
import { posix, win32 } from "node:path";
import type { ClientContext } from "./types.ts";

function pathApi(ctx: ClientContext): typeof posix {
  return ctx.platform === "win32" ? win32 : posix;
}

export function joinPath(ctx: ClientContext, ...parts: string[]): string {
  return pathApi(ctx).join(...parts);
}

/** An environment variable, case-insensitively on Windows; empty counts as unset. */
export function envValue(ctx: ClientContext, name: string): string | undefined {
  const exact = ctx.env[name];
  if (exact !== undefined && exact !== "") return exact;
  if (ctx.platform !== "win32") return undefined;
  const upper = name.toUpperCase();
  for (const [key, value] of Object.entries(ctx.env)) {
    if (key.toUpperCase() === upper && value !== undefined && value !== "") return value;
  }
  return undefined;
}

/** A variable naming a folder; relative values are ignored (the XDG rule, applied to every such variable). */
export function envDir(ctx: ClientContext, name: string): string | undefined {
  const value = envValue(ctx, name);
  return value !== undefined && pathApi(ctx).isAbsolute(value) ? value : undefined;
}

export function inHome(ctx: ClientContext, ...parts: string[]): string {
  return joinPath(ctx, ctx.home, ...parts);
}

export function appConfig(ctx: ClientContext, ...parts: string[]): string {
  if (ctx.platform === "win32") {
    return joinPath(ctx, envDir(ctx, "APPDATA") ?? joinPath(ctx, ctx.home, "AppData", "Roaming"), ...parts);
  }
  if (ctx.platform === "darwin") return inHome(ctx, "Library", "Application Support", ...parts);
  return xdgConfig(ctx, ...parts);
}

export function xdgConfig(ctx: ClientContext, ...parts: string[]): string {
  return joinPath(ctx, envDir(ctx, "XDG_CONFIG_HOME") ?? joinPath(ctx, ctx.home, ".config"), ...parts);
}
