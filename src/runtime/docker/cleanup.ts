/**
 * Removing what mcpmgr created in the engine for a workload — server and helper
 * containers, isolated networks — found by label, so it works even when the supervisor
 * that made them was killed and remembers nothing. Only this installation's: another
 * installation's workload of the same name on the same engine is left alone.
 */
import type { ContainerEngine } from "./engine.ts";
import { ownedBy, workloadFilter } from "./labels.ts";
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
  await Promise.all(
    containers.map((c) =>
      engine.docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => {}),
    ),
  );
  // Networks after containers: a network with endpoints cannot be removed.
  const networks = (
    await engine.docker.listNetworks({ filters }).catch((err: unknown) => {
      throw engineError(`listing the networks of ${workload}`, err);
    })
  ).filter((n) => ownedBy(n.Labels, workload, install));
  await Promise.all(networks.map((n) => removeNetwork(engine, n.Id)));
  return { containers: containers.length, networks: networks.length };
}
