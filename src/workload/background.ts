/**
 * A background workload (`run` without --foreground): checked and prepared in the user's
 * terminal first (the pre-flight: what the server is granted printed, images pulled or built
 * with progress shown, overlays listed, secrets and the OIDC issuer checked), then recorded, so its supervisor can start
 * it (and restart it) exactly as it was asked for.
 */
import { resolve } from "node:path";
import type { ParsedRunArgv } from "../config/run-argv.ts";
import { McpmgrError } from "../errors.ts";
import { findFreePort } from "../proxy/serve.ts";
import { dockerHostFor } from "../runtime/docker/engine.ts";
import type { WorkloadRecord } from "../state/workload-record.ts";
import { assertNoForegroundRun, type WorkloadStore } from "../state/workloads.ts";
import type { WorkloadContext } from "./context.ts";
import { lookUpWhilePreparing, prepareImage, printContainerGrants } from "./launch-container.ts";
import { printProcessGrants, processWorkingDir, sandboxedMounts } from "./launch-process.ts";
import { overlaysFor } from "./overlays.ts";
import { preparePolicies } from "./policies.ts";
import { remoteAskedAtStart, warnIfRemoteHostUnresolved } from "./remote-host.ts";
import type { RunSpec } from "./run-spec.ts";
import { serverEnvironment } from "./server-environment.ts";

/**
 * A name is refused before the pre-flight, not after: the grant summary, an image pull or a
 * build, secrets and OIDC checks are all wasted on a workload that cannot be recorded.
 */
export async function assertNameFree(store: WorkloadStore, name: string): Promise<void> {
  if (await store.get(name)) {
    throw new McpmgrError("WORKLOAD_EXISTS", `a workload named ${name} already exists`, {
      hint: `'mcpmgr list' shows it; start it with 'mcpmgr start ${name}' if it is stopped, remove it with 'mcpmgr rm ${name}', or choose another --name`,
    });
  }
  // A foreground run has no record, but its name is taken while it runs (checked again when recorded).
  assertNoForegroundRun(store.paths, name);
}

/** What `preflight` said that the supervisor says again in its log (the start relay leaves it out). */
export interface PreflightSaid {
  readonly setIdExposure: boolean;
}

/** What can fail before the supervisor starts fails here, where the user looks. */
export async function preflight(spec: RunSpec, ctx: WorkloadContext, signal?: AbortSignal): Promise<PreflightSaid> {
  const { placement } = spec;
  let setIdExposure = false;
  if (placement.kind !== "remote") {
    const { server } = placement;
    // The supervisor decides again at each start (sockets come and go); this is what it would decide now.
    const workingDir =
      placement.kind === "process" && placement.bwrap !== undefined ? processWorkingDir(placement, ctx) : undefined;
    // First: a missing token or secret is the whole answer, not a line after the grant summary.
    await serverEnvironment(server.variables, ctx);
    if (placement.kind === "container") printContainerGrants(spec, placement, ctx);
    else if (workingDir !== undefined) printProcessGrants(spec.name, placement, workingDir, ctx);
    const overlayOptions = { ignoreGlobally: server.ignoreGlobally, print: server.printOverlays };
    if (placement.kind === "container") {
      // The engine's profile is looked up while the image is prepared (W9).
      [setIdExposure] = await lookUpWhilePreparing(spec, placement, ctx, () =>
        prepareImage(placement, ctx, (line) => ctx.log.info(line), signal),
      );
      await overlaysFor(placement.mounts, overlayOptions, ctx);
    } else if (workingDir !== undefined) {
      await overlaysFor(sandboxedMounts(placement, workingDir), overlayOptions, ctx);
    }
  } else {
    await warnIfRemoteHostUnresolved(spec.name, placement.url, ctx, {
      askedAtStart: remoteAskedAtStart(placement.outgoingAuth),
    });
    // Looked up here too (the supervisor reads them again at each start): a missing one fails in this terminal.
    for (const { name: header, secret } of placement.outgoingAuth.secretHeaders)
      await ctx.secrets().resolveSecret(secret, `--remote-forward-headers-secret ${header}=${secret}`);
  }
  await preparePolicies(spec.policies, spec.name, ctx);
  return { setIdExposure };
}

/**
 * Records the workload: its proxy port chosen for good (restarts keep clients' URLs working)
 * and the run options as given, to be parsed again by the supervisor, `start` and
 * `run --from-config`.
 */
export async function recordWorkload(
  spec: RunSpec,
  parsed: ParsedRunArgv,
  rawArgs: readonly string[],
  store: WorkloadStore,
): Promise<WorkloadRecord> {
  const { values } = parsed;
  const { name, placement } = spec;
  // Checked again here: another `run` of the same name may have recorded it since.
  await assertNameFree(store, name);
  const port = spec.listen.port ?? (await freePortAvoiding(store));
  const dashDash = rawArgs.indexOf("--");
  const own = (dashDash === -1 ? rawArgs : rawArgs.slice(0, dashDash)).filter(
    (arg) => arg !== "--foreground" && arg !== "-f",
  );
  const runOptions = [
    ...own,
    ...(values.name ? [] : ["--name", name]),
    ...(values["proxy-port"] ? [] : ["--proxy-port", String(port)]),
    "--",
    ...parsed.passthrough,
  ];
  return store.create({
    name,
    group: spec.group,
    labels: Object.fromEntries(spec.labels.map((pair) => [pair.key, pair.value])),
    source: {
      kind: spec.entry ? "registry" : placement.kind === "remote" ? "remote" : placement.source.kind,
      ref: spec.sourceText,
    },
    transport: placement.kind === "remote" ? "streamable-http" : placement.server.transport,
    proxyMode: spec.proxyMode,
    host: spec.listen.host,
    proxyPort: port,
    proxyPath: spec.endpointPath,
    runtime: placement.kind === "container" ? placement.engine.kind : placement.kind,
    ...(placement.kind === "container" ? { runtimeEndpoint: dockerHostFor(placement.engine.endpoint) } : {}),
    ...(values["permission-profile"] ? { permissionProfile: values["permission-profile"] } : {}),
    env: Object.fromEntries(values.env.map((pair) => [pair.key, pair.value])),
    secrets: values.secret.map((ref) => ({ name: ref.name, target: ref.target })),
    args: placement.kind === "remote" ? [...parsed.passthrough] : [...placement.server.args],
    volumes: values.volume.map((v) => ({
      hostPath: resolve(v.hostPath),
      containerPath: v.containerPath,
      readOnly: v.readOnly,
    })),
    runOptions,
    workingDir: process.cwd(),
  });
}

/** A free port that no other workload keeps for its restarts. */
export async function freePortAvoiding(store: WorkloadStore): Promise<number> {
  const taken = new Set((await store.keptPorts()).map((kept) => kept.proxyPort));
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = await findFreePort();
    if (!taken.has(port)) return port;
  }
  throw new McpmgrError("PORT_IN_USE", "could not find a free port", { hint: "choose one with --proxy-port" });
}
