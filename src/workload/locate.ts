/**
 * What `run SOURCE` names, found: the concrete source (a registry name replaced by what its
 * entry points at), the entry itself, and where the server will run. resolveRunSpec takes it
 * from there.
 */
import { statSync } from "node:fs";
import type { ParsedRunArgv } from "../config/run-argv.ts";
import { isMcpmgrError, McpmgrError } from "../errors.ts";
import { sourceOf, type RegistryEntry } from "../registry/entry.ts";
import type { Registry } from "../registry/loader.ts";
import { detectEngine, noEngineError, runtimeChoice, type ContainerEngine } from "../runtime/docker/engine.ts";
import { localProjectForms, parseSource, type ServerSource } from "../runtime/source.ts";
import { assertGroupExists } from "../state/groups.ts";
import { WorkloadStore } from "../state/workloads.ts";
import type { Env, WorkloadContext } from "./context.ts";
import { RECORDED_ENGINE_ENV } from "./recorded-runtime.ts";

/** A source mcpmgr can start or reach (registry names resolved). */
export type ConcreteSource = Exclude<ServerSource, { kind: "registry" }>;

/** Where the server runs: a local (sandboxed) process, a container, or nowhere (a remote URL). */
export type RuntimeSelection =
  | { readonly kind: "process" }
  | { readonly kind: "container"; readonly engine: ContainerEngine }
  | { readonly kind: "remote" };

export interface LocatedServer {
  /** The SERVER argument as the user typed it. */
  readonly sourceText: string;
  readonly source: ConcreteSource;
  readonly entry: RegistryEntry | undefined;
  readonly runtime: RuntimeSelection;
}

/**
 * ARCHITECTURE.md §5: MCPMGR_RUNTIME (docker | podman | process) wins; otherwise a container
 * engine if one answers, else the process runtime. Images need an engine either way.
 */
async function selectRuntime(source: ConcreteSource, env: Env): Promise<RuntimeSelection> {
  if (source.kind === "remote") return { kind: "remote" };
  const choice = runtimeChoice(env);
  if (choice === "process") {
    if (source.kind === "image") {
      throw new McpmgrError("CONFLICTING_OPTIONS", `${source.ref} is a container image, but MCPMGR_RUNTIME=process`, {
        hint: "unset MCPMGR_RUNTIME or set it to docker or podman",
      });
    }
    return { kind: "process" };
  }
  const engine = await detectEngine({ env, ...(choice ? { want: choice } : {}) });
  // A workload's start (`start`, `restart`, its supervisor): both variables are its record's, not the user's.
  if (env[RECORDED_ENGINE_ENV] === "1" && env.DOCKER_HOST && choice)
    return recordedEngine(engine, choice, env.DOCKER_HOST);
  // DOCKER_HOST's engine is used whatever MCPMGR_RUNTIME says (it is how `start` keeps a workload on the engine
  // it was created on), so one of the other kind would run a workload asked for on Podman on Docker, and
  // record it there, without a word.
  if (engine && choice && engine.kind !== choice)
    throw new McpmgrError(
      "CONFLICTING_OPTIONS",
      `MCPMGR_RUNTIME=${choice}, but DOCKER_HOST ${env.DOCKER_HOST} is a ${engineName(engine.kind)} engine`,
      { hint: dockerHostHint(choice) },
    );
  if (engine) return { kind: "container", engine };
  if (env.DOCKER_HOST)
    throw new McpmgrError(
      "RUNTIME_UNAVAILABLE",
      `${choice ? `MCPMGR_RUNTIME=${choice}, but ` : ""}no container engine answers at DOCKER_HOST ${env.DOCKER_HOST}`,
      // Not only "unset it": `start` and `restart` pass on the workload's recorded engine this way.
      {
        hint: choice
          ? `start that engine, or run without DOCKER_HOST ('env -u DOCKER_HOST mcpmgr run ...') to use ${ownSocket(choice)}: while DOCKER_HOST names an engine mcpmgr uses no other, whatever MCPMGR_RUNTIME says (a workload stays on the engine it was created on)`
          : "start that engine: while DOCKER_HOST names one, mcpmgr uses no other, and a workload stays on the engine it was created on",
      },
    );
  if (choice) throw noEngineError(`MCPMGR_RUNTIME=${choice}`, choice);
  if (source.kind === "image") throw noEngineError(`${source.ref} is a container image`);
  return { kind: "process" };
}

/**
 * The engine a workload was created on, at its recorded endpoint. Not there, or of the other kind now (Docker
 * replaced by Podman's docker.sock): said as the workload's engine, the way out being to bring it back or to
 * move the workload, not to unset variables the user never set.
 */
function recordedEngine(
  engine: ContainerEngine | undefined,
  kind: "docker" | "podman",
  endpoint: string,
): RuntimeSelection {
  if (engine && engine.kind === kind) return { kind: "container", engine };
  const move =
    "or move the workload: 'mcpmgr export NAME PATH', 'mcpmgr rm NAME', then 'mcpmgr run --from-config PATH'";
  if (engine)
    throw new McpmgrError(
      "RUNTIME_UNAVAILABLE",
      `the workload was created on ${engineName(kind)} at ${endpoint}, which now answers as a ${engineName(engine.kind)} engine`,
      { hint: `bring ${engineName(kind)} back there (a workload stays on the engine it was created on), ${move}` },
    );
  // Named as the workload's engine: the user set no DOCKER_HOST (the supervisor passes the record's on in it).
  throw new McpmgrError(
    "RUNTIME_UNAVAILABLE",
    `the workload was created on ${engineName(kind)} at ${endpoint}, where no container engine answers`,
    { hint: `start ${engineName(kind)} there (a workload stays on the engine it was created on), ${move}` },
  );
}

function engineName(kind: "docker" | "podman"): string {
  return kind === "podman" ? "Podman" : "Docker";
}

/** Where mcpmgr finds an engine of the kind asked for without DOCKER_HOST. */
function ownSocket(choice: "docker" | "podman"): string {
  return choice === "podman"
    ? "Podman's own socket (or the one CONTAINER_HOST names)"
    : "Docker's own socket (/var/run/docker.sock, a rootless or Desktop one)";
}

/** The ways out when DOCKER_HOST names an engine other than the one MCPMGR_RUNTIME asks for. */
function dockerHostHint(choice: "docker" | "podman"): string {
  return `DOCKER_HOST is honoured whatever MCPMGR_RUNTIME says: run without it ('env -u DOCKER_HOST mcpmgr run ...') to use ${ownSocket(choice)}, or point it at ${engineName(choice)}'s socket`;
}

/**
 * The registry's entry named `name`. A name that is no server there but one of the user's workloads is
 * most likely a `run` typed for `start` (a workload is run once, then started): the hint says so.
 */
async function registryEntry(registry: Registry, name: string, ctx: WorkloadContext): Promise<RegistryEntry> {
  try {
    return registry.get(name);
  } catch (err) {
    if (!(isMcpmgrError(err) && err.code === "REGISTRY_ENTRY_NOT_FOUND")) throw err;
    const { records } = await new WorkloadStore(ctx.paths).listReadable();
    if (!records.some((record) => record.name === name)) throw localPathNamed(err, name);
    throw new McpmgrError(
      "REGISTRY_ENTRY_NOT_FOUND",
      `no server named '${name}' in the registry, but ${name} is one of your workloads`,
      {
        hint: `'mcpmgr start ${name}' starts it again ('mcpmgr restart ${name}' while it runs); 'mcpmgr run' is for a new server`,
        exitCode: 2,
      },
    );
  }
}

export async function locateServer(parsed: ParsedRunArgv, ctx: WorkloadContext): Promise<LocatedServer> {
  // Checked even for a remote URL, which needs no runtime: a typo should not wait for a container.
  runtimeChoice(ctx.env);
  // A workload joins an existing group only (`mcpmgr group create` makes one).
  await assertGroupExists(ctx.paths, parsed.values.group);
  const sourceText = parsed.positionals[0] as string;
  const source = parseSource(sourceText);
  if (source.kind !== "registry") {
    return { sourceText, source, entry: undefined, runtime: await selectRuntime(source, ctx.env) };
  }
  // The registry (its catalog and loader) only for a registry name.
  const { loadRegistry } = await import("../registry/loader.ts");
  const registry = await loadRegistry({ env: ctx.env, configDir: ctx.paths.configDir });
  const entry = await registryEntry(registry, source.name, ctx);
  const concrete = parseSource(sourceOf(entry).runTarget, undefined, `registry entry ${entry.name}'s remote URL`);
  if (concrete.kind === "registry")
    throw new McpmgrError("REGISTRY_INVALID", `registry entry ${entry.name} points at another registry name`, {
      hint: "fix the custom registry",
    });
  return { sourceText, source: concrete, entry, runtime: await selectRuntime(concrete, ctx.env) };
}

/**
 * `run server.py` or `run myproject` where that is a file or folder here: a local project given without
 * its package runner (as `run ./myproject` says), which the registry's "no server named" alone hides.
 */
function localPathNamed(err: McpmgrError, name: string): McpmgrError {
  const kind = pathKind(name);
  if (kind === undefined) return err;
  const runners = kind === "folder" ? localProjectForms(name) : `${localProjectForms("dir")} (the project's folder)`;
  return new McpmgrError(
    "REGISTRY_ENTRY_NOT_FOUND",
    `no server named '${name}' in the registry, and ./${name} is a local ${kind}`,
    {
      hint: `run a local project with its package runner: ${runners}${err.hint ? `; ${err.hint}` : ""}`,
      exitCode: err.exitCode,
    },
  );
}

function pathKind(name: string): "file" | "folder" | undefined {
  try {
    return statSync(name).isDirectory() ? "folder" : "file";
  } catch {
    return undefined;
  }
}
