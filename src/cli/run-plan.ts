/**
 * What `run SOURCE` will start, once registry names are resolved: the concrete source
 * plus the defaults a registry entry brings (transport, permission profile, env
 * defaults, required variables, server arguments). Flags always win over the entry.
 */
import type { ParsedRunArgv } from "../config/run-spec.ts";
import { expandPermissions, type PermissionProfile } from "../config/permission-profile.ts";
import { McpmgrError } from "../errors.ts";
import { loadRegistry } from "../registry/loader.ts";
import { sourceOf, type RegistryEntry } from "../registry/schema.ts";
import { detectEngine, noEngineError, runtimeChoice, type ContainerEngine } from "../runtime/docker/engine.ts";
import { parseSource, type ServerSource } from "../runtime/source.ts";
import { assertGroupExists } from "../state/groups.ts";
import { resolvePaths } from "../state/paths.ts";
import { deriveWorkloadName } from "../state/workload-name.ts";

export interface RunPlan {
  readonly source: Exclude<ServerSource, { kind: "registry" }>;
  readonly name: string;
  readonly entry?: RegistryEntry;
  /** The entry's profile, used when --permission-profile is not given. */
  readonly profile?: PermissionProfile;
  readonly envDefaults: Readonly<Record<string, string>>;
  /** Variables the entry marks required: the run fails early if none of -e, files or secrets sets them. */
  readonly requiredEnv: readonly { name: string; description: string; secret: boolean }[];
  /** The server's arguments: what follows `--`, else the entry's. */
  readonly args: readonly string[];
  readonly transport: "stdio" | "sse" | "streamable-http" | undefined;
  readonly runtime: RuntimeSelection;
}

/** Where the server runs: a local (sandboxed) process, a container, or nowhere (a remote URL). */
export type RuntimeSelection =
  | { readonly kind: "process" }
  | { readonly kind: "container"; readonly engine: ContainerEngine }
  | { readonly kind: "remote" };

/**
 * DESIGN §5: MCPMGR_RUNTIME (docker | podman | process) wins; otherwise a container
 * engine if one answers, else the process runtime. Images need an engine either way.
 */
export async function selectRuntime(
  source: RunPlan["source"],
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<RuntimeSelection> {
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
  if (engine) return { kind: "container", engine };
  if (choice) throw noEngineError(`MCPMGR_RUNTIME=${choice}`, choice);
  if (source.kind === "image") throw noEngineError(`${source.ref} is a container image`);
  return { kind: "process" };
}

export async function planRun(parsed: ParsedRunArgv): Promise<RunPlan> {
  runtimeChoice();
  // A workload joins an existing group only (`mcpmgr group create` makes one).
  await assertGroupExists(resolvePaths(), parsed.values.group);
  const text = parsed.positionals[0] as string;
  const source = parseSource(text);
  const name = parsed.values.name;
  if (source.kind !== "registry") {
    const runtime = await selectRuntime(source);
    return {
      source,
      name: name ?? deriveWorkloadName(text),
      runtime,
      envDefaults: {},
      requiredEnv: [],
      args: parsed.passthrough,
      transport: parsed.values.transport,
    };
  }
  const registry = await loadRegistry({ env: process.env, configDir: resolvePaths().configDir });
  const entry = registry.get(source.name);
  const concrete = parseSource(sourceOf(entry).runTarget);
  if (concrete.kind === "registry")
    throw new McpmgrError("REGISTRY_INVALID", `registry entry ${entry.name} points at another registry name`, {
      hint: "fix the custom registry",
    });
  return {
    source: concrete,
    name: name ?? entry.name,
    runtime: await selectRuntime(concrete),
    entry,
    profile: expandPermissions(entry.permissions),
    envDefaults: Object.fromEntries(
      entry.env.filter((e) => e.default !== undefined).map((e) => [e.name, e.default as string]),
    ),
    requiredEnv: entry.env
      .filter((e) => e.required)
      .map((e) => ({ name: e.name, description: e.description, secret: e.secret })),
    args: parsed.passthrough.length > 0 ? parsed.passthrough : entry.args,
    transport: parsed.values.transport ?? entry.transport,
  };
}

/** Refuses to start a server without the variables its registry entry requires. */
export function assertRequiredEnv(plan: RunPlan, env: Readonly<Record<string, string>>): void {
  const missing = plan.requiredEnv.filter((spec) => env[spec.name] === undefined || env[spec.name] === "");
  if (missing.length === 0) return;
  const first = missing[0] as (typeof missing)[number];
  const how = first.secret
    ? `--secret NAME,target=${first.name} (after 'mcpmgr secret set NAME')`
    : `-e ${first.name}=VALUE`;
  throw new McpmgrError(
    "MISSING_OPTION",
    `${plan.entry?.name ?? plan.name} needs ${missing.map((m) => m.name).join(", ")}: ${first.description}`,
    { hint: `give it with ${how}` },
  );
}
