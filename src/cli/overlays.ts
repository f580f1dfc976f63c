/**
 * Ignore-pattern overlays for a workload's mounts (both runtimes): which container paths
 * are hidden, printed when --print-resolved-overlays asks, plus the empty file that is
 * bound over hidden files.
 */
import type { ParsedRunArgv } from "../config/run-spec.ts";
import { describeOverlays, emptyOverlayFile, GLOBAL_IGNORE_FILE, loadGlobalIgnorePatterns, resolveOverlays, type Overlay } from "../runtime/ignore-overlays.ts";
import { resolvePaths } from "../state/paths.ts";
import { join } from "node:path";
import { log, printResult } from "./output.ts";

export async function overlaysFor(
  mounts: readonly { readonly hostPath: string; readonly containerPath: string }[],
  values: Pick<ParsedRunArgv["values"], "ignore-globally" | "print-resolved-overlays">,
): Promise<{ overlays: Overlay[]; emptyFile?: string }> {
  const paths = resolvePaths();
  const globalPatterns = values["ignore-globally"] ? await loadGlobalIgnorePatterns(paths.configDir) : [];
  const overlays = await resolveOverlays(mounts, { globalPatterns, globalSource: join(paths.configDir, GLOBAL_IGNORE_FILE) });
  if (values["print-resolved-overlays"]) {
    if (overlays.length === 0) log.info("no ignore overlays: nothing in the mounts matches an ignore pattern");
    for (const line of describeOverlays(overlays)) printResult(`overlay: ${line}`);
  }
  if (overlays.length === 0) return { overlays };
  return { overlays, emptyFile: await emptyOverlayFile(paths.dataDir) };
}
