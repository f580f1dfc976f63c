/**
 * What other workloads' servers can write on the host. A server may plant a symbolic link in
 * any folder it can write, and another workload whose mount source lies below that folder
 * would follow the link at its next start (A runs with `-v ~/shared:/d`, B with
 * `-v ~/shared/sub:/s`): planted-links.ts refuses such a source when it is given these paths.
 * Read from the workload records at every start, so a workload created later counts too.
 */
import { homedir } from "node:os";
import { isAbsolute, resolve } from "node:path";
import { loadPermissionProfile } from "../config/permission-profile.ts";
import type { OtherWritable } from "../runtime/planted-links.ts";
import { profileMount } from "../runtime/sandbox.ts";
import type { McpmgrPaths } from "../state/paths.ts";
import { type WorkloadRecord, WorkloadStore } from "../state/workloads.ts";

/**
 * The writable volumes and profile write paths of every recorded workload, and the names of
 * workloads whose record cannot be read (they cannot start either; the caller warns about them).
 */
export async function recordedWritableMounts(
  paths: McpmgrPaths,
  home = homedir(),
): Promise<{ writable: OtherWritable[]; unreadable: string[] }> {
  const { records, unreadable } = await new WorkloadStore(paths).listReadable();
  const writable = records.flatMap((record) =>
    writablePaths(record, home).map((hostPath) => ({ hostPath, workload: record.name })),
  );
  return { writable, unreadable };
}

function writablePaths(record: WorkloadRecord, home: string): string[] {
  const expand = (path: string) => {
    const tilde = path.replace(/^~(?=\/|$)/, home);
    return isAbsolute(tilde) ? tilde : resolve(record.workingDir ?? home, tilde);
  };
  const volumes = record.volumes.filter((volume) => !volume.readOnly).map((volume) => expand(volume.hostPath));
  return [...volumes, ...profileWrites(record).map((spec) => expand(profileMount(spec, false).hostPath))];
}

/** A profile file's write paths; one that cannot be read now stops that workload's own start, not this one's. */
function profileWrites(record: WorkloadRecord): readonly string[] {
  const name = record.permissionProfile;
  if (name === undefined || name === "none" || name === "network") return [];
  try {
    return loadPermissionProfile(isAbsolute(name) ? name : resolve(record.workingDir ?? ".", name)).write;
  } catch {
    return [];
  }
}
