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
  const taken = takenByAnother(engine, "container", name, found, labels?.[INSTALL_LABEL]);
  if (taken !== undefined) throw taken;
  throw new McpmgrError(
    "WORKLOAD_EXISTS",
    `a container named ${name} already exists and was not created by this mcpmgr for this workload`,
    {
      hint: `choose another --name, or remove that container yourself (${engine.kind} rm -f ${name}) if it is not needed`,
    },
  );
}

/** The refusal when another installation's mcpmgr object holds `name`: its workload is not this user's to remove. */
function takenByAnother(
  engine: ContainerEngine,
  what: "container" | "network",
  name: string,
  found: Readonly<Record<string, string>>,
  install: string | undefined,
): McpmgrError | undefined {
  const other = found[INSTALL_LABEL];
  if (found[MANAGED_LABEL] !== "true" || other === undefined || other === install) return undefined;
  return new McpmgrError(
    "WORKLOAD_EXISTS",
    `the ${what} name ${name} is taken on this ${engine.kind} engine by another mcpmgr installation's workload ${found[WORKLOAD_LABEL] ?? ""} (another MCPMGR_HOME or user, label mcpmgr.install=${other})`,
    { hint: "choose another --name for this workload; container names are shared by everyone using the engine" },
  );
}

/**
 * The engine refused to create a container or network because its name is taken (409): when
 * another installation's object took it after the name was checked (two homes starting the same
 * workload name at once), the same one line as checkContainerName's rather than "check that the
 * engine is healthy". Undefined for any other failure, or a name held by something else (the
 * object is inspected, so a loose match on the engine's message refuses nothing by itself).
 */
export async function takenNameError(
  engine: ContainerEngine,
  what: "container" | "network",
  name: string,
  install: string | undefined,
  err: unknown,
): Promise<McpmgrError | undefined> {
  // Docker answers 409; Podman's compat API 500 with "network name … already used".
  const failure = err as { statusCode?: number; message?: unknown } | undefined;
  const conflict = failure?.statusCode === 409 || /already (exists|in use|used)/i.test(String(failure?.message ?? ""));
  if (!conflict) return undefined;
  const object = what === "container" ? engine.docker.getContainer(name) : engine.docker.getNetwork(name);
  const info = (await object.inspect().catch(() => undefined)) as
    | { Config?: { Labels?: Record<string, string> | null }; Labels?: Record<string, string> | null }
    | undefined;
  const found = (what === "container" ? info?.Config?.Labels : info?.Labels) ?? {};
  return takenByAnother(engine, what, name, found, install);
}
