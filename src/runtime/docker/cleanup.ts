/**
 * Removing what mcpmgr created in the engine for a workload — server and helper
 * containers, isolated networks — found by label, so it works even when the supervisor
 * that made them was killed and remembers nothing. Only this installation's: another
 * installation's workload of the same name on the same engine is left alone.
 */
import type { ContainerEngine } from "./engine.ts";
import { INSTALL_LABEL, MANAGED_LABEL, ownedBy, WORKLOAD_LABEL, workloadFilter } from "./labels.ts";
import { removeNetwork } from "./network-isolation.ts";
import { engineError } from "./images.ts";

export async function removeWorkloadObjects(
  engine: ContainerEngine,
  workload: string,
  install: string,
): Promise<{ containers: number; networks: number }> {
  const filters = JSON.stringify(workloadFilter(workload));
  let containers: { Id: string }[];
  try {
    containers = (await engine.docker.listContainers({ all: true, filters })).filter((c) =>
      ownedBy(c.Labels, workload, install),
    );
  } catch (err) {
    throw engineError(`listing the containers of ${workload}`, err);
  }
  await removeContainers(engine, containers);
  // Networks after containers: a network with endpoints cannot be removed.
  const networks = (
    await engine.docker.listNetworks({ filters }).catch((err: unknown) => {
      throw engineError(`listing the networks of ${workload}`, err);
    })
  ).filter((n) => ownedBy(n.Labels, workload, install));
  await Promise.all(networks.map((n) => removeNetwork(engine, n.Id)));
  return { containers: containers.length, networks: networks.length };
}

/**
 * Removes this installation's containers and networks of workloads that `gone` says nothing of runs
 * here (removed, or stopped): a create the engine answered after the workload's `rm` or `stop` (past
 * the supervisor's grace) made a container nobody removes. Only objects labelled with `install` exactly: another installation's
 * (another MCPMGR_HOME, another user) and an older mcpmgr's unlabelled ones are never touched.
 * The engine is asked first and `gone` second: a workload's record (and its "starting") exists before
 * its first object is made, so one created meanwhile is not among those found. Returns the workloads cleaned up.
 *
 * Only containers never started ("created", as a late create leaves them) are removed, and a
 * workload with any other container is left whole: a home from before the stored id
 * (state/install-id.ts) has the hash of its path alone, so a home at the same path on another
 * machine or in another container using the same engine (a shared DOCKER_HOST, a mounted
 * docker.sock) may have the same id, and its running workloads have no record here. Networks are removed only when nothing is attached (the engine
 * refuses otherwise), never disconnected from a container.
 */
export async function removeOrphanedObjects(
  engine: ContainerEngine,
  install: string,
  gone: (workload: string) => Promise<boolean>,
): Promise<string[]> {
  const filters = JSON.stringify({ label: [`${MANAGED_LABEL}=true`, `${INSTALL_LABEL}=${install}`] });
  const [listed, networks] = await Promise.all([
    engine.docker.listContainers({ all: true, filters }),
    engine.docker.listNetworks({ filters }),
  ]);
  const mine = (labels: Readonly<Record<string, string>> | undefined, workload: string) =>
    labels?.[WORKLOAD_LABEL] === workload && labels[INSTALL_LABEL] === install;
  const objects = [...listed, ...networks];
  const workloads = new Set(objects.map((o) => o.Labels?.[WORKLOAD_LABEL]).filter((w) => w !== undefined));
  const cleaned: string[] = [];
  for (const workload of workloads) {
    const containers = listed.filter((c) => mine(c.Labels, workload));
    // Started once: a live workload's (another machine's home with the same id), not a late create's.
    if (containers.some((c) => c.State !== "created")) continue;
    if (!(await gone(workload))) continue;
    await removeContainers(engine, containers);
    // Networks after containers; one something is still attached to stays (the engine refuses).
    await Promise.all(
      networks
        .filter((n) => mine(n.Labels, workload))
        .map((n) =>
          engine.docker
            .getNetwork(n.Id)
            .remove()
            .catch(() => {}),
        ),
    );
    cleaned.push(workload);
  }
  return cleaned;
}

/** Removes each container by its id (never by name, which another may hold by now); one already gone is no error. */
async function removeContainers(
  engine: ContainerEngine,
  containers: readonly { readonly Id: string }[],
): Promise<void> {
  await Promise.all(
    containers.map((c) =>
      engine.docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => {}),
    ),
  );
}
