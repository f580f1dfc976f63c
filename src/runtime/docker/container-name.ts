/**
 * A server container's name, `mcpmgr-NAME`, is kept the same for every home (people type
 * `docker logs mcpmgr-NAME`, and the docs promise it), so it is shared by everyone using one
 * engine: two homes (another MCPMGR_HOME, another user, a dev container with the host's
 * docker.sock) that both run a workload `fetch` want the same name. Whoever is second is told so
 * in one line, before anything of theirs is made (an isolated workload's networks are named after
 * it too), and is never offered to remove the other installation's running workload.
 */
import { McpmgrError } from "../../errors.ts";
import type { ContainerEngine } from "./engine.ts";
import { engineError } from "./images.ts";
import { INSTALL_LABEL, MANAGED_LABEL, ownedBy, WORKLOAD_LABEL } from "./labels.ts";

export function serverContainerName(workload: string): string {
  return `mcpmgr-${workload}`;
}

/**
 * Whether `name` is free for a container with `labels`: undefined when nothing has it, the
 * container's id when it is this installation's own for the same workload (left by a crashed
 * supervisor: the caller removes it). Anything else is refused (WORKLOAD_EXISTS): a name is not
 * ownership.
 */
export async function checkContainerName(
  engine: ContainerEngine,
  name: string,
  labels: Readonly<Record<string, string>> | undefined,
): Promise<string | undefined> {
  const info = await engine.docker
    .getContainer(name)
    .inspect()
    .catch((err: { statusCode?: number }) => {
      if (err.statusCode === 404) return undefined;
      throw engineError(`inspecting container ${name}`, err);
    });
  if (info === undefined) return undefined;
  const found = info.Config?.Labels ?? {};
  const workload = labels?.[WORKLOAD_LABEL];
  if (workload !== undefined && ownedBy(found, workload, labels?.[INSTALL_LABEL] ?? "")) return info.Id;
  const other = found[INSTALL_LABEL];
  if (found[MANAGED_LABEL] === "true" && other !== undefined) {
    // Another home's workload, probably running: removing it is not this user's call.
    throw new McpmgrError(
      "WORKLOAD_EXISTS",
      `the container name ${name} is taken on this ${engine.kind} engine by another mcpmgr installation's workload ${found[WORKLOAD_LABEL] ?? ""} (another MCPMGR_HOME or user, label mcpmgr.install=${other})`,
      { hint: "choose another --name for this workload; container names are shared by everyone using the engine" },
    );
  }
  throw new McpmgrError(
    "WORKLOAD_EXISTS",
    `a container named ${name} already exists and was not created by this mcpmgr for this workload`,
    {
      hint: `choose another --name, or remove that container yourself (${engine.kind} rm -f ${name}) if it is not needed`,
    },
  );
}
