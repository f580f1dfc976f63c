/**
 * What `run --foreground` needs beyond a start: its name must be free (it replaces nothing),
 * and a start it interrupts (Ctrl-C during a pull, a build or the handshake) must leave no
 * container behind (a stdio container keeps its stdin open and would never exit).
 */
import { installId } from "../state/install-id.ts";
import { WorkloadStore } from "../state/workloads.ts";
import type { WorkloadContext } from "./context.ts";
import { assertContainerNameFree, removeContainers } from "./launch-container.ts";
import type { RunSpec } from "./run-spec.ts";

export async function assertForegroundNameFree(spec: RunSpec, ctx: WorkloadContext): Promise<void> {
  if (spec.placement.kind === "container")
    await assertContainerNameFree(spec, spec.placement, new WorkloadStore(ctx.paths));
}

export async function abandonStart(spec: RunSpec, ctx: WorkloadContext): Promise<void> {
  const placement = spec.placement;
  if (placement.kind === "container")
    await installId(ctx.paths)
      .then((install) => removeContainers(placement, spec.name, install))
      .catch(() => {});
}
