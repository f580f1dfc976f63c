/**
 * Ignore-pattern overlays for a workload's mounts (both runtimes): which container paths
 * are hidden, printed when --print-resolved-overlays asks, plus the empty file that is
 * bound over hidden files.
 */
import type { ParsedRunArgv } from "../config/run-spec.ts";
import { statSync } from "node:fs";
import {
  describeOverlays,
  emptyOverlayFile,
  GLOBAL_IGNORE_FILE,
  LOCAL_IGNORE_FILE,
  loadGlobalIgnorePatterns,
  resolveOverlays,
} from "../runtime/ignore-overlays.ts";
import { resolvePaths } from "../state/paths.ts";
import { join, posix } from "node:path";
import { log, printResult } from "./output.ts";

/** An overlay as the runtimes apply it (see OverlaySpec in runtime/docker/container-config.ts). */
export interface AppliedOverlay {
  readonly kind: "dir" | "file" | "protect";
  readonly containerPath: string;
  readonly hostPath?: string;
}

export async function overlaysFor(
  mounts: readonly { readonly hostPath: string; readonly containerPath: string }[],
  values: Pick<ParsedRunArgv["values"], "ignore-globally" | "print-resolved-overlays">,
): Promise<{ overlays: AppliedOverlay[]; emptyFile?: string }> {
  const paths = resolvePaths();
  const globalPatterns = values["ignore-globally"] ? await loadGlobalIgnorePatterns(paths.configDir) : [];
  const overlays = await resolveOverlays(mounts, {
    globalPatterns,
    globalSource: join(paths.configDir, GLOBAL_IGNORE_FILE),
  });
  if (values["print-resolved-overlays"]) {
    if (overlays.length === 0) log.info("no ignore overlays: nothing in the mounts matches an ignore pattern");
    for (const line of describeOverlays(overlays)) printResult(`overlay: ${line}`);
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
