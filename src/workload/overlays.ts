/**
 * Ignore-pattern overlays for a workload's mounts (both runtimes): which container paths
 * are hidden, printed when --print-resolved-overlays asks, plus the empty file that is
 * bound over hidden files. Resolved at every start: the patterns are files in the mounts.
 * Each mount's `.mcpmgrignore` is read once, safely (readLocalIgnoreFile), and what the
 * server sees at its place is a private copy of that text, never the host path a server
 * could have turned into a symbolic link.
 */
import { statSync } from "node:fs";
import { chmod, lstat } from "node:fs/promises";
import { homedir } from "node:os";
import { join, posix, resolve } from "node:path";
import type { PermissionProfile } from "../config/permission-profile.ts";
import {
  describeOverlays,
  emptyOverlayFile,
  GLOBAL_IGNORE_FILE,
  LOCAL_IGNORE_FILE,
  hasAnyPattern,
  loadGlobalIgnorePatterns,
  readLocalIgnoreFile,
  resolveOverlays,
} from "../runtime/ignore-overlays.ts";
import { assertNoPlantedLinks } from "../runtime/planted-links.ts";
import { profileMount } from "../runtime/sandbox.ts";
import { stateIoError, writeFileAtomic } from "../state/atomic-file.ts";
import type { WorkloadContext } from "./context.ts";
import { resolveOverlaysApart } from "./overlay-walk.ts";
import { recordedWritableMounts } from "./shared-mounts.ts";

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
  mounts: readonly { readonly hostPath: string; readonly containerPath: string; readonly readOnly: boolean }[],
  options: OverlayOptions,
  ctx: WorkloadContext,
): Promise<{ overlays: AppliedOverlay[]; emptyFile?: string }> {
  const { paths } = ctx;
  // First: a mount reached through a link a server (this one, or another workload's) planted is neither walked nor read.
  const others = await recordedWritableMounts(paths);
  for (const name of others.unreadable) {
    ctx.log.warn(
      `workload ${name}'s record cannot be read: links in its writable mounts are not checked for this start`,
    );
  }
  assertNoPlantedLinks(mounts, others.writable);
  const globalPatterns = options.ignoreGlobally ? await loadGlobalIgnorePatterns(paths.configDir) : [];
  // Only directory mounts have one: a single-file volume has no .mcpmgrignore inside it.
  const localIgnoreFiles = new Map<string, string | undefined>();
  for (const mount of mounts) {
    if (statSync(mount.hostPath, { throwIfNoEntry: false })?.isDirectory())
      localIgnoreFiles.set(mount.hostPath, await readLocalIgnoreFile(mount.hostPath));
  }
  const walkOptions = { globalPatterns, globalSource: join(paths.configDir, GLOBAL_IGNORE_FILE), localIgnoreFiles };
  // A supervisor lives for days: a walk that has something to walk runs in a child process, so
  // its allocations never stay in this heap (workload/overlay-walk.ts). Nothing to match: no walk.
  const overlays =
    ctx.background && hasAnyPattern(globalPatterns, localIgnoreFiles)
      ? await resolveOverlaysApart(mounts, walkOptions, (why) => ctx.log.warn(why))
      : await resolveOverlays(mounts, walkOptions);
  if (options.print) {
    if (overlays.length === 0) ctx.log.info("no ignore overlays: nothing in the mounts matches an ignore pattern");
    for (const line of describeOverlays(overlays)) ctx.print(`overlay: ${line}`);
  }
  // A server with a writable mount must not be able to edit the patterns that hide things
  // from it (they are read again on every restart): each mount's own file is covered by a
  // read-only copy of what was read, kept in mcpmgr's data directory.
  const protect: AppliedOverlay[] = [];
  for (const mount of mounts) {
    const text = localIgnoreFiles.get(mount.hostPath);
    const containerPath = posix.join(mount.containerPath, LOCAL_IGNORE_FILE);
    if (text === undefined || overlays.some((hidden) => hidden.containerPath === containerPath)) continue;
    protect.push({ kind: "protect", hostPath: await ignoreFileCopy(paths.dataDir, text), containerPath });
  }
  const applied: AppliedOverlay[] = [...overlays, ...protect];
  if (overlays.length === 0) return { overlays: applied };
  return { overlays: applied, emptyFile: await emptyOverlayFile(paths.dataDir) };
}

/**
 * `<dataDir>/ignore-copies/<sha-256 of the text>`: a read-only (0444) copy the runtimes bind
 * over a mount's `.mcpmgrignore`. Named by content, so workloads share copies and a copy is
 * never rewritten while a container or sandbox shows it.
 */
async function ignoreFileCopy(dataDir: string, text: string): Promise<string> {
  const path = join(dataDir, "ignore-copies", new Bun.CryptoHasher("sha256").update(text).digest("hex"));
  const info = await lstat(path).catch(() => undefined);
  if (info?.isFile() && (info.mode & 0o777) === 0o444) return path;
  await writeFileAtomic(path, text, { mode: 0o444 });
  // The umask may have narrowed the mode; a container's user (often not mcpmgr's) must read it.
  await chmod(path, 0o444).catch((err: unknown) => {
    throw stateIoError("set the mode of", path, err);
  });
  return path;
}

/**
 * The mounts of a sandboxed process, `~` expanded: the working directory when it is shown
 * and a local package (both read-only at their own path), the profile's read/write lists and
 * -v volumes. Every one of them gets the ignore overlays.
 */
export function processMounts(
  profile: PermissionProfile,
  volumes: readonly { readonly hostPath: string; readonly containerPath: string; readonly readOnly: boolean }[],
  shown: {
    readonly workingDir?: { readonly path: string; readonly realPath: string };
    readonly localPackage?: string;
  } = {},
  home = homedir(),
): { hostPath: string; containerPath: string; readOnly: boolean }[] {
  const { workingDir, localPackage } = shown;
  return [
    ...(workingDir ? [{ hostPath: workingDir.realPath, targetPath: workingDir.path, readOnly: true }] : []),
    ...(localPackage ? [{ hostPath: localPackage, targetPath: localPackage, readOnly: true }] : []),
    ...profile.read.map((spec) => profileMount(spec, true)),
    ...profile.write.map((spec) => profileMount(spec, false)),
    ...volumes.map((v) => ({ hostPath: v.hostPath, targetPath: v.containerPath, readOnly: v.readOnly })),
  ].map((m) => ({
    hostPath: resolve(m.hostPath.replace(/^~(?=\/|$)/, home)),
    containerPath: resolve(m.targetPath.replace(/^~(?=\/|$)/, home)),
    readOnly: m.readOnly,
  }));
}
