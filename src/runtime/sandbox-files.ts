/**
 * Files the process sandbox binds from the host: the synthetic /etc/passwd and /etc/group,
 * and the compiled seccomp filter handed to bwrap as an open descriptor. Kept in
 * `<dataDir>/sandbox/` (0444, rewritten only when their content changes), which no sandbox
 * ever shows.
 */
import { openSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { writeFileAtomic } from "../state/atomic-file.ts";
import { sandboxIdentity } from "./sandbox.ts";
import { hostArch, seccompProgram } from "./seccomp.ts";

export interface SandboxFiles {
  readonly passwd: string;
  readonly group: string;
  /** The seccomp program; open it (openSeccompFilter) once per launch. */
  readonly seccomp: string;
}

export async function sandboxFiles(dataDir: string, home: string): Promise<SandboxFiles> {
  const dir = join(dataDir, "sandbox");
  const identity = sandboxIdentity(home);
  const files = {
    passwd: join(dir, "passwd"),
    group: join(dir, "group"),
    seccomp: join(dir, `seccomp-${hostArch()}.bpf`),
  };
  await keep(files.passwd, identity.passwd);
  await keep(files.group, identity.group);
  await keep(files.seccomp, seccompProgram());
  return files;
}

/** A fresh read descriptor on the filter: bwrap reads it to the end, so one per launch. */
export function openSeccompFilter(files: SandboxFiles): number {
  return openSync(files.seccomp, "r");
}

async function keep(path: string, content: string | Uint8Array): Promise<void> {
  const want = typeof content === "string" ? new TextEncoder().encode(content) : content;
  const have = await readFile(path).catch(() => undefined);
  if (have !== undefined && Buffer.compare(have, want) === 0) return;
  await writeFileAtomic(path, want, { mode: 0o444 });
}
