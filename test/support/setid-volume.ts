/**
 * The host side of the set-ID tests (container-setid, docker-setid-guard): a folder bound into a
 * container as a writable volume, holding a program the container's root (the host's root) tries to
 * make set-user-ID, and that program run by the host's `nobody`, who must stay `nobody`.
 */
import { chmodSync, copyFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A fresh folder (`prefix` under the temporary folder) holding a root-owned copy of `id` (mode 0755), reachable by `nobody`; the caller removes it. */
export function freshIdVolume(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o755);
  copyFileSync("/usr/bin/id", join(dir, "id"));
  chmodSync(join(dir, "id"), 0o755);
  return dir;
}

/** `id` in the volume run by the host's `nobody`: what it prints. */
export function idAsNobody(dir: string): string {
  const run = Bun.spawnSync(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", join(dir, "id")]);
  return run.stdout.toString().trim();
}
