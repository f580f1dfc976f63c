/**
 * The compiled mcpmgr the benches measure, as users run it: `scripts/compile.ts` into a
 * scratch folder (or BENCH_MCPMGR_BIN), built once per bench run and shared by the scenarios
 * that need it (cli-startup, footprint).
 */
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

let built: Promise<string> | undefined;
let scratch: string | undefined;

/** The executable: BENCH_MCPMGR_BIN, or one compiled from this checkout. */
export function compiledMcpmgr(root: string): Promise<string> {
  built ??= (async () => {
    const given = process.env.BENCH_MCPMGR_BIN;
    if (given) return resolve(given);
    scratch = mkdtempSync(join(tmpdir(), "mcpmgr-bench-bin-"));
    const build = Bun.spawnSync([process.execPath, "scripts/compile.ts", "--outdir", scratch], {
      cwd: root,
      stdout: "pipe",
      stderr: "pipe",
    });
    if (!build.success) throw new Error(`compiling mcpmgr failed: ${build.stderr.toString().trim()}`);
    const binary = join(scratch, "mcpmgr");
    // Written back to disk now: until then the kernel counts the page cache of a freshly
    // written file as dirty, and /proc/PID/smaps shows the executable's own pages in a
    // process's Private_Dirty, as if it had allocated them (footprint).
    const fd = openSync(binary, "r");
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    return binary;
  })();
  return built;
}

/** Removes the scratch folder of a compiled executable, if one was built. */
export function removeCompiledMcpmgr(): void {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
}
