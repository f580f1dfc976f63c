/**
 * Ignore-pattern overlays for a workload's mounts (both runtimes): which container paths
 * are hidden, printed when --print-resolved-overlays asks, plus the empty file that is
 * bound over hidden files. Resolved at every start: the patterns are files in the mounts.
 */
import { statSync } from "node:fs";
import { homedir } from "node:os";
import { join, posix, resolve } from "node:path";
import type { PermissionProfile } from "../config/permission-profile.ts";
import {
  describeOverlays,
  emptyOverlayFile,
  GLOBAL_IGNORE_FILE,
  LOCAL_IGNORE_FILE,
  loadGlobalIgnorePatterns,
  resolveOverlays,
} from "../runtime/ignore-overlays.ts";
import { profileMount } from "../runtime/sandbox.ts";
import type { WorkloadContext } from "./context.ts";

/** An overlay as the runtimes apply it (see OverlaySpec in runtime/docker/container-config.ts). */
export interface AppliedOverlay {
  readonly kind: "dir" | "file" | "protect";
  readonly containerPath: string;
  readonly hostPath?: string;
}

export interface OverlayOptions {
  readonly ignoreGlobally: boolean;
  /** List them on stdout (--print-resolved-overlays, in the user's terminal only). */
  readonly print: boolean;
}

export async function overlaysFor(
  mounts: readonly { readonly hostPath: string; readonly containerPath: string }[],
  options: OverlayOptions,
  ctx: WorkloadContext,
): Promise<{ overlays: AppliedOverlay[]; emptyFile?: string }> {
  const { paths } = ctx;
  const globalPatterns = options.ignoreGlobally ? await loadGlobalIgnorePatterns(paths.configDir) : [];
  const overlays = await resolveOverlays(mounts, {
    globalPatterns,
    globalSource: join(paths.configDir, GLOBAL_IGNORE_FILE),
  });
  if (options.print) {
    if (overlays.length === 0) ctx.log.info("no ignore overlays: nothing in the mounts matches an ignore pattern");
    for (const line of describeOverlays(overlays)) ctx.print(`overlay: ${line}`);
  }
  // A server with a writable mount must not be able to edit the patterns that hide things
  // from it (they are read again on every restart): each mount's own file is bound read-only.
  // (Only directory mounts have one: a single-file volume has no .mcpmgrignore inside it.)
  const protect: AppliedOverlay[] = mounts
    .filter((m) => statSync(m.hostPath, { throwIfNoEntry: false })?.isDirectory() === true)
    .map((m) => ({
      kind: "protect" as const,
      hostPath: join(m.hostPath, LOCAL_IGNORE_FILE),
      containerPath: posix.join(m.containerPath, LOCAL_IGNORE_FILE),
    }))
    .filter(
      (o) =>
        statSync(o.hostPath, { throwIfNoEntry: false })?.isFile() === true &&
        !overlays.some((hidden) => hidden.containerPath === o.containerPath),
    );
  const applied: AppliedOverlay[] = [...overlays, ...protect];
  if (overlays.length === 0) return { overlays: applied };
  return { overlays: applied, emptyFile: await emptyOverlayFile(paths.dataDir) };
}

/** The mounts of a sandboxed process (the profile's read/write lists and -v volumes), `~` expanded. */
export function processMounts(
  profile: PermissionProfile,
  volumes: readonly { readonly hostPath: string; readonly containerPath: string; readonly readOnly: boolean }[],
  home = homedir(),
): { hostPath: string; containerPath: string }[] {
  return [
    ...profile.read.map((spec) => profileMount(spec, true)),
    ...profile.write.map((spec) => profileMount(spec, false)),
    ...volumes.map((v) => ({ hostPath: v.hostPath, targetPath: v.containerPath, readOnly: v.readOnly })),
  ].map((m) => ({
    hostPath: resolve(m.hostPath.replace(/^~(?=\/|$)/, home)),
    containerPath: resolve(m.targetPath.replace(/^~(?=\/|$)/, home)),
  }));
}
