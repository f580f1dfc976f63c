/**
 * Superseded tags of one of mcpmgr's image repositories removed from the engine: a package's build repository
 * (`mcpmgr-build/<scheme>-<name>`, role `build`) or the network-isolation helper's (`mcpmgr-egress`, role
 * `egress-image`). Only images mcpmgr built (`mcpmgr=true`, that role) and labelled with this installation's id,
 * never another installation's (S9) or one built before images carried the id. Removing a tag only untags an image that has
 * others; the engine refuses to remove one a container (running or not) uses, and that one stays, silently.
 *
 * The engine is asked for the repository's images only; the labels are checked here. Podman (4.3) answers a
 * list filtered by several labels with no image at all, and it names a local build `localhost/<repository>`:
 * asked as Docker is, Podman's builds were never removed.
 */
import type { ContainerEngine } from "./engine.ts";
import { INSTALL_LABEL, MANAGED_LABEL, ROLE_LABEL } from "./labels.ts";

interface ListedImage {
  readonly RepoTags?: string[] | null;
  readonly Labels?: Record<string, string> | null;
}

/** Removes this installation's tags of `repository` but `keep`, of images with `role`; returns the tags removed. */
export async function removeBuiltTags(
  engine: ContainerEngine,
  repository: string,
  install: string,
  keep?: string,
  role = "build",
): Promise<string[]> {
  let images: ListedImage[];
  try {
    images = await engine.docker.listImages({ filters: JSON.stringify({ reference: [repository] }) });
  } catch {
    return [];
  }
  const ours = (labels: ListedImage["Labels"]) =>
    labels?.[MANAGED_LABEL] === "true" && labels[ROLE_LABEL] === role && labels[INSTALL_LABEL] === install;
  // Podman qualifies a name without a registry with `localhost/`, in what it lists, not in what it is asked.
  const named = (tag: string) =>
    engine.kind === "podman" && tag.startsWith("localhost/") ? tag.slice("localhost/".length) : tag;
  const removed: string[] = [];
  for (const image of images) {
    if (!ours(image.Labels)) continue;
    for (const tag of image.RepoTags ?? []) {
      const name = named(tag);
      // The reference filter also matches other registries' names ending the same way: this repository only.
      if (name === keep || name.slice(0, name.lastIndexOf(":")) !== repository) continue;
      try {
        await engine.docker.getImage(tag).remove();
        removed.push(name);
      } catch {
        // In use by a container, or gone already: the engine's to keep.
      }
    }
  }
  return removed;
}
