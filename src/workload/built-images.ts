/**
 * mcpmgr's own images for packages (npx://, uvx://, go://, registry packages: one tag of
 * `mcpmgr-build/<scheme>-<name>` per content) removed once no workload of this home will run them. A change
 * of a local project or of a build option adds a tag, and the previous one stayed for good: once a
 * workload's container has started, the other tags of its package's repository go (the start does not wait for
 * it); after `rm`, all of them. While
 * another recorded workload of this home is from the same package nothing is removed (its next start may want
 * one of them), and a record whose package cannot be told (a registry that cannot be read) counts as one, as
 * does any other foreground run of this home that is live (its package is not recorded).
 * Only this installation's builds are touched, never an image a container uses (runtime/docker/superseded-images.ts).
 * Never fatal: a start or an `rm` goes on whatever the engine says.
 */
import { errorMessage } from "../errors.ts";
import type { ContainerEngine } from "../runtime/docker/engine.ts";
import { buildRepository } from "../runtime/docker/image-build.ts";
import { removeBuiltTags } from "../runtime/docker/superseded-images.ts";
import { parseSource } from "../runtime/source.ts";
import { liveForegroundNames } from "../state/foreground-runs.ts";
import { installId } from "../state/install-id.ts";
import type { WorkloadRecord } from "../state/workload-record.ts";
import { WorkloadStore } from "../state/workloads.ts";
import type { WorkloadContext } from "./context.ts";
import { REGISTRY_WAIT_MS } from "./kept-logins.ts";

type Context = Pick<WorkloadContext, "log" | "paths" | "env">;
type Registry = Awaited<ReturnType<typeof import("../registry/loader.ts").loadRegistry>>;

/** The tags of `repository` but `keep` removed, unless another workload of this home than `name` is from that package. */
export async function pruneBuiltImages(
  engine: ContainerEngine,
  repository: string,
  name: string,
  ctx: Context,
  keep?: string,
): Promise<void> {
  // One debug line whatever happens: when a start no longer waits for it, it says the cleanup is done.
  const said = (what: string) => ctx.log.debug(`built images of ${repository}: ${what}`);
  try {
    if (await otherWorkloadBuildsInto(repository, name, ctx))
      return said("none removed, another workload of this home may run them");
    const removed = await removeBuiltTags(engine, repository, await installId(ctx.paths), keep);
    said(removed.length > 0 ? `removed ${removed.join(", ")} (no workload runs them any more)` : "none to remove");
  } catch (err) {
    said(`left as they are: ${errorMessage(err)}`);
  }
}

/** After `rm` of a container workload from a package: its package's images, if no other workload is from it. */
export async function removeBuiltImagesOf(record: WorkloadRecord, ctx: Context): Promise<void> {
  if (record.runtime !== "docker" && record.runtime !== "podman") return;
  const repository = await repositoryOf(record, registryOnce(ctx)).catch(() => undefined);
  if (repository === undefined) return;
  const { detectEngine } = await import("../runtime/docker/engine.ts");
  const engine = await detectEngine({
    want: record.runtime,
    ...(record.runtimeEndpoint ? { env: { DOCKER_HOST: record.runtimeEndpoint } } : {}),
  }).catch(() => undefined);
  if (engine !== undefined) await pruneBuiltImages(engine, repository, record.name, ctx);
}

async function otherWorkloadBuildsInto(repository: string, name: string, ctx: Context): Promise<boolean> {
  // A foreground run records no source: another one live may be from this package, between finding its
  // image cached and creating its container (which, once made, the engine protects the image for).
  if (liveForegroundNames(ctx.paths).some((other) => other !== name)) return true;
  const { records, unreadable } = await new WorkloadStore(ctx.paths).listReadable();
  // A record that cannot be read may be from the same package.
  if (unreadable.length > 0) return true;
  const registry = registryOnce(ctx);
  for (const record of records) {
    if (record.name === name || (record.runtime !== "docker" && record.runtime !== "podman")) continue;
    const theirs = await repositoryOf(record, registry).catch(() => "unknown");
    if (theirs === undefined) continue;
    if (theirs === repository || theirs === "unknown") return true;
  }
  return false;
}

/** The registry, read on first use and once (only registry entries need it). */
function registryOnce(ctx: Context): () => Promise<Registry> {
  let loading: Promise<Registry> | undefined;
  return () => {
    loading ??= import("../registry/loader.ts").then(({ loadRegistry }) =>
      loadRegistry({ env: ctx.env, configDir: ctx.paths.configDir, timeoutMs: REGISTRY_WAIT_MS }),
    );
    return loading;
  };
}

/** The build repository of a record's package; undefined: it runs an image, not a package. Throws when it cannot be told. */
async function repositoryOf(record: WorkloadRecord, registry: () => Promise<Registry>): Promise<string | undefined> {
  let source = parseSource(record.source.ref, record.workingDir);
  if (source.kind === "registry") {
    const { sourceOf } = await import("../registry/entry.ts");
    source = parseSource(sourceOf((await registry()).get(source.name)).runTarget);
  }
  return source.kind === "package" ? buildRepository(source) : undefined;
}
