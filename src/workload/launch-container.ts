/**
 * The container launcher: the image made ready (pulled and verified, or built and cached for
 * a protocol-scheme package), the RunSpec's container placement turned into a hardened
 * container (runtime/docker), its network isolation set up when asked, and the server handed
 * on as byte streams (stdio), the relay's Unix socket (an isolated HTTP server) or a loopback
 * port (an HTTP server on a network the user chose). What the container gets is printed
 * before it starts, in the user's terminal.
 */
import { homedir } from "node:os";
import { join } from "node:path";
import { findFreePort, portInUse } from "../proxy/serve.ts";
import { removeWorkloadObjects } from "../runtime/docker/cleanup.ts";
import { installId } from "../state/install-id.ts";
import { withLock } from "../state/lock.ts";
import { serverContainerOptions, serverPortFor } from "../runtime/docker/container-config.ts";
import { startServerContainer } from "../runtime/docker/container.ts";
import { checkContainerName, serverContainerName } from "../runtime/docker/container-name.ts";
import { buildPackageImage, buildRepository } from "../runtime/docker/image-build.ts";
import { applyVerification, ensureImage, inspectLocalImage } from "../runtime/docker/images.ts";
import { INSTALL_LABEL, ownedBy, WORKLOAD_LABEL, workloadFilter, workloadLabels } from "../runtime/docker/labels.ts";
import {
  createIsolation,
  INGRESS_SOCKET,
  ingressSocketDir,
  SERVER_ALIAS,
} from "../runtime/docker/network-isolation.ts";
import { containerGrantSummary } from "../runtime/grant-summary.ts";
import { loadGlobalIgnorePatterns } from "../runtime/ignore-overlays.ts";
import type { PackageManager } from "../runtime/source.ts";
import { containerHandle, type LaunchedServer } from "../runtime/server-handle.ts";
import { WorkloadStore } from "../state/workloads.ts";
import { McpmgrError } from "../errors.ts";
import type { WorkloadContext } from "./context.ts";
import { sweepOrphanedContainers } from "./orphan-containers.ts";
import { overlaysFor } from "./overlays.ts";
import { type ContainerPlacement, SET_ID_EXPOSURE_MARKER } from "./placement.ts";
import type { RunSpec } from "./run-spec.ts";
import { serverEnvironment } from "./server-environment.ts";
import { pruneBuiltImages } from "./built-images.ts";
import { enginePlatform, setIdSeccompOption, setIdSeccompProfile } from "../runtime/docker/setid-seccomp.ts";
import {
  copyGuardInto,
  guardApplies,
  guardedCommand,
  imageTakesGuard,
  refuseMountOverGuard,
} from "../runtime/docker/setid-guard.ts";

/** The server port in a container when neither the user, the registry entry nor the image names one. */
const DEFAULT_SERVER_PORT = 8080;

/**
 * How long a build of an image waits for another build of the same image (its lock), and how old
 * a lock whose holder still looks alive must be to be broken: longer than a slow npm install.
 * A holder that died lets the waiter in at once (state/lock.ts).
 */
const BUILD_WAIT_MS = 30 * 60_000;

/** One lock per image tag, in the home's state: builds of other images go on side by side. */
function buildLockPath(ctx: WorkloadContext, tag: string): string {
  return join(ctx.paths.stateDir, "builds", `${tag.replace(/[^a-z0-9.-]+/g, "_")}.lock`);
}

/** The image to run: pulled (and verified) for an image source, built and cached for a package. */
export async function prepareImage(
  placement: ContainerPlacement,
  ctx: WorkloadContext,
  progress: (line: string) => void,
  signal?: AbortSignal,
): Promise<string> {
  const { source, engine, verification } = placement;
  if (source.kind === "image") {
    const image = await ensureImage(engine, source.ref, progress, signal);
    applyVerification(verification, source.ref, image, (text) => ctx.log.warn(text));
    // The ID, not the reference: the container runs exactly the content just checked, even if
    // the tag moves meanwhile (and a digest pin matched by ID is not a name the engine knows).
    return image.id;
  }
  const built = await buildPackageImage(
    engine,
    source,
    {
      ...placement.build,
      ignorePatterns: placement.server.ignoreGlobally ? await loadGlobalIgnorePatterns(ctx.paths.configDir) : [],
      install: await installId(ctx.paths),
    },
    progress,
    // --image-verification covers what the build starts from, the base images, also when the
    // image is cached (it may have been built under a weaker mode); no pull is needed then.
    async (bases, cached) => {
      if (verification === "disabled") return;
      for (const base of bases) {
        const image = cached
          ? await inspectLocalImage(engine, base)
          : await ensureImage(engine, base, progress, signal).catch((err: unknown) => {
              throw baseImageUnavailable(err, source.manager);
            });
        applyVerification(verification, base, image, (text) => ctx.log.warn(`base image: ${text}`));
      }
    },
    signal,
    (tag, build) =>
      withLock(buildLockPath(ctx, tag), build, {
        timeoutMs: BUILD_WAIT_MS,
        staleMs: BUILD_WAIT_MS,
        // Ctrl-C ends the wait at once, and the user sees why nothing moves meanwhile.
        ...(signal ? { signal } : {}),
        onWait: () => progress(`waiting for another mcpmgr build of ${tag}…`),
      }),
  );
  if (built.cached) ctx.log.debug(`using the cached image ${built.tag}`);
  return built.tag;
}

/**
 * The user named a package, not this image: a pull failure of the base it is built on says
 * what the image is for, and the ways around a registry that cannot be reached.
 */
function baseImageUnavailable(err: unknown, manager: PackageManager): unknown {
  if (!(err instanceof McpmgrError) || err.code !== "IMAGE_PULL_FAILED") return err;
  return new McpmgrError("IMAGE_PULL_FAILED", `${err.message} (the base image ${manager}:// packages are built on)`, {
    hint: "check your network and `docker login`; or build on an image you have with --runtime-image IMAGE, or run the package in the process sandbox instead of a container (MCPMGR_RUNTIME=process)",
    cause: err,
  });
}

/**
 * `run --foreground NAME` replaces nothing: the name must not belong to a workload in the
 * store, nor to containers another foreground run is using (their containers carry it).
 */
export async function assertContainerNameFree(
  spec: RunSpec,
  placement: ContainerPlacement,
  store: WorkloadStore,
): Promise<void> {
  const hint = "choose another --name, or stop the other one first";
  if (await store.get(spec.name)) {
    throw new McpmgrError("WORKLOAD_EXISTS", `a workload named ${spec.name} already exists`, { hint });
  }
  const install = await installId(store.paths);
  // Another installation's are not a foreground run of this home: the launch refuses their name itself.
  const running = (
    await placement.engine.docker
      .listContainers({ filters: JSON.stringify({ ...workloadFilter(spec.name), status: ["running"] }) })
      .catch(() => [])
  ).filter((c) => ownedBy(c.Labels, spec.name, install));
  if (running.length > 0) {
    // No record: a foreground run's. Its mcpmgr may be gone (killed), and then nothing of mcpmgr's removes them.
    const cli = placement.engine.kind;
    throw new McpmgrError(
      "WORKLOAD_EXISTS",
      `containers of a workload named ${spec.name} are already running (another 'mcpmgr run --foreground'?)`,
      {
        hint:
          `choose another --name, or stop that run (Ctrl-C where it runs); if its mcpmgr was killed, remove what it left: ` +
          // The very containers found, by id: this installation's only (another's of the same workload name
          // are not the user's to remove), and those of a release before the install label, which a filter
          // on that label would miss.
          `${cli} rm -f ${running.map((c) => c.Id.slice(0, 12)).join(" ")}`,
      },
    );
  }
}

/** What the container gets (paths, network, devices), printed before it starts (foreground, or the pre-flight). */
export function printContainerGrants(spec: RunSpec, placement: ContainerPlacement, ctx: WorkloadContext): void {
  const { server } = placement;
  ctx.log.info(
    containerGrantSummary({
      workload: spec.name,
      engine: placement.engine.kind,
      profile: server.profile,
      origin: server.profileOrigin,
      volumes: server.volumes,
      publish: placement.publish,
      privateHttp: server.transport !== "stdio" && placement.isolate,
      isolated: placement.isolate,
      networkMode: placement.networkMode,
      home: homedir(),
    }),
  );
  // Here, not in the launch: a detached run's launch is its supervisor's, whose output only the proxy log
  // shows, so the terminal of a `run` without --foreground (the usual one) never saw it (security.md W7).
  if (server.transport !== "stdio" && !placement.isolate) {
    const where = placement.networkMode === "host" ? "the host's network" : `network ${placement.networkMode}`;
    ctx.log.warn(
      `${spec.name}'s MCP port is reachable on ${where}${placement.publish.length > 0 ? " and the published ports" : ""} without going through the proxy (its authentication, policies and audit)`,
    );
  }
}

/**
 * How a container's writable volumes are kept from set-ID programs (security.md W9), as far as the
 * engine decides it: its profile file extended, the set-ID guard (if the image also takes it), or
 * neither. One look-up of the engine, shared with the container's seccomp option.
 */
async function setIdProtection(placement: ContainerPlacement, now: number): Promise<"profile" | "guard" | "none"> {
  const { engine } = placement;
  if ((await setIdSeccompProfile(engine, now)) !== undefined) return "profile";
  return guardApplies(engine, await enginePlatform(engine, now)) ? "guard" : "none";
}

/** Whether the set-ID guard can run this image (linux/amd64); undefined when the engine no longer has it. */
async function imageTakesGuardIn(placement: ContainerPlacement, image: string): Promise<boolean | undefined> {
  const facts = await inspectLocalImage(placement.engine, image);
  return facts === undefined ? undefined : imageTakesGuard(facts);
}

/**
 * Said where the user looks (a foreground run's terminal, or `run` before its supervisor starts,
 * and by each supervisor in its log, which `start`/`restart` relay): where neither a profile file
 * mcpmgr can extend nor the set-ID guard protects the container (Docker's built-in profile on an
 * engine or image the guard cannot run on), its root can leave a set-user-ID program in a writable
 * volume (security.md W9).
 */
function warnSetIdExposure(
  spec: RunSpec,
  placement: ContainerPlacement,
  ctx: WorkloadContext,
  writable: string[],
): void {
  ctx.log.warn(
    `${spec.name}'s container ${SET_ID_EXPOSURE_MARKER} (${writable.join(", ")}), which would run as their owner for the host's users: ${placement.engine.kind}'s default seccomp profile is not a file mcpmgr can extend${placement.engine.kind === "docker" ? ", and mcpmgr's set-ID guard cannot run on this engine or image" : ""} (mount them :ro, or see docs/security.md W9)`,
  );
}

/**
 * The set-ID warning decided while `prepare` runs (the engine's look-up overlaps the image's
 * preparation, W9), both awaited: an image that cannot be had fails the start only once the engine's
 * warning is said, so it comes before the error (in the terminal or the supervisor's log), never
 * after it or not at all. Where the engine takes the guard, the prepared image decides: one of
 * another platform gets no guard, and the warning. The image's error comes first; the look-up
 * itself fails only into "no profile". True when it warned. `now`: the start's one moment, given to
 * every look-up of the engine it makes (the seccomp option, this, setIdGuardFor), so all take the same
 * cached answer: a failed one that comes due for a retry while the image is pulled would otherwise give
 * the warning from the old answer and the guard (or no profile) from the new one.
 */
export async function lookUpWhilePreparing(
  spec: RunSpec,
  placement: ContainerPlacement,
  ctx: WorkloadContext,
  prepare: () => Promise<string>,
  now = Date.now(),
): Promise<[boolean, string]> {
  const writable = placement.server.profile.privileged
    ? []
    : placement.mounts
        .filter((m) => !m.readOnly && !placement.hiddenDirs.includes(m.containerPath))
        .map((m) => m.hostPath);
  const decide = async () => {
    if (writable.length === 0) return "none-needed";
    const protection = await setIdProtection(placement, now);
    if (protection === "none") warnSetIdExposure(spec, placement, ctx, writable);
    return protection;
  };
  const [decided, prepared] = await Promise.allSettled([decide(), prepare()]);
  if (prepared.status === "rejected") throw prepared.reason;
  if (decided.status === "rejected") throw decided.reason;
  const image = prepared.value;
  // An image the engine no longer has fails the start further on (setIdGuardFor), with its own words.
  if (decided.value === "guard" && (await imageTakesGuardIn(placement, image)) === false) {
    warnSetIdExposure(spec, placement, ctx, writable);
    return [true, image];
  }
  return [decided.value === "none", image];
}

/**
 * The set-ID guard for this container (setid-guard.ts), or undefined where it cannot run (another
 * engine, host, architecture or image platform: the warning above was said), or where the image
 * has nothing to run.
 */
export async function setIdGuardFor(placement: ContainerPlacement, image: string, now = Date.now()) {
  if (!guardApplies(placement.engine, await enginePlatform(placement.engine, now))) return undefined;
  const facts = await inspectLocalImage(placement.engine, image);
  if (facts === undefined)
    throw new McpmgrError("IMAGE_PULL_FAILED", `image ${image} is no longer in the engine`, {
      hint: "run it again (another process removed the image meanwhile)",
    });
  // An image of another platform runs under the engine's emulation, or not at all: not behind an x86_64 guard.
  if (!imageTakesGuard(facts)) return undefined;
  refuseMountOverGuard(placement.mounts);
  const command = guardedCommand(facts, placement.server.args);
  if (command === undefined) return undefined;
  return { command };
}

/** Removes what a start left in the engine (it was interrupted, or a supervisor was killed hard). */
export async function removeContainers(placement: ContainerPlacement, name: string, install: string): Promise<void> {
  await removeWorkloadObjects(placement.engine, name, install);
}

export async function launchContainer(
  spec: RunSpec,
  placement: ContainerPlacement,
  ctx: WorkloadContext,
  options: { readonly interactive: boolean; readonly proxyPort: number; readonly signal?: AbortSignal },
): Promise<LaunchedServer> {
  const { engine, server, isolate, networkMode } = placement;
  const { signal } = options;
  // Asked of the engine at once (Podman's answer can take a second under load): while the secrets are
  // resolved and the image is prepared (both awaited together below).
  // One moment for every look-up of the engine this start makes (lookUpWhilePreparing says why).
  const now = Date.now();
  const seccompOption = setIdSeccompOption(engine, join(ctx.paths.stateDir, "seccomp"), now);
  seccompOption.catch(() => {}); // awaited below; an earlier failure must not leave it unhandled
  // Before the grant summary: a missing token or secret is the whole answer (and it fails before a build).
  const environment = await serverEnvironment(server.variables, ctx);
  if (options.interactive) printContainerGrants(spec, placement, ctx);
  // Also in a supervisor's log: its own look-up decides what this container gets, and may differ
  // from the one `run` made before it (an engine error is taken as "no file to extend"). Both at
  // once: the look-up (a second for Podman under load) overlaps the image's preparation.
  const [, image] = await lookUpWhilePreparing(
    spec,
    placement,
    ctx,
    () =>
      prepareImage(placement, ctx, (line) => (options.interactive ? ctx.log.info(line) : ctx.log.debug(line)), signal),
    now,
  );
  signal?.throwIfAborted();
  const stdio = server.transport === "stdio";
  // Leftovers of a run that was killed hard (same names) would block this one; only this
  // installation's: another MCPMGR_HOME's workload of the same name is not ours to remove.
  const install = await installId(ctx.paths);
  await removeWorkloadObjects(engine, spec.name, install);
  // And what an engine made too late for an earlier `rm` of another workload (orphan-containers.ts).
  await sweepOrphanedContainers(engine, new WorkloadStore(ctx.paths), ctx.log);
  // The name is shared by every home on this engine: another installation's workload of the same
  // name is refused here, before this one's networks (named after it too) are made.
  const containerName = serverContainerName(spec.name);
  await checkContainerName(engine, containerName, { [WORKLOAD_LABEL]: spec.name, [INSTALL_LABEL]: install });
  // Printed by the terminal-side run (pre-flight or --foreground), not again by the supervisor.
  const { overlays, emptyFile } = await overlaysFor(
    placement.mounts,
    { ignoreGlobally: server.ignoreGlobally, print: server.printOverlays && options.interactive },
    ctx,
  );
  const hostNetwork = networkMode === "host";

  let containerPort: number | undefined;
  let hostPort: number | undefined;
  if (!stdio) {
    const given = placement.targetPort;
    // On the host's network the server's port is a host port: an image's EXPOSE (often 8080)
    // would clash between workloads, so with nothing chosen it gets a free one (MCP_PORT)...
    const exposed =
      given === undefined && !hostNetwork ? ((await inspectLocalImage(engine, image))?.exposedPorts ?? []) : [];
    containerPort = serverPortFor(given, exposed) ?? (hostNetwork ? await findFreePort() : DEFAULT_SERVER_PORT);
    hostPort = hostNetwork ? containerPort : await findFreePort();
    // ...and a chosen one must be free, or the proxy would forward to whatever holds it.
    if (hostNetwork && given !== undefined && portInUse(containerPort)) {
      throw new McpmgrError(
        "PORT_IN_USE",
        `port ${containerPort} is already in use on this host, and with --network host the server would listen there`,
        { hint: "stop what listens on it, or pick another port with --target-port" },
      );
    }
  }
  const labels = (role: "server" | "egress" | "network") =>
    workloadLabels({
      workload: spec.name,
      install,
      group: spec.group,
      transport: server.transport,
      port: options.proxyPort,
      role,
      user: spec.labels,
    });

  const seccomp = await seccompOption;
  // No profile file to extend (Docker's compiled-in default): the guard adds the refusals instead.
  // Decided before the isolation network is made: a refusal here leaves nothing in the engine.
  const guard =
    seccomp === undefined && !server.profile.privileged ? await setIdGuardFor(placement, image, now) : undefined;

  // The isolated server's relay: a Unix socket in a host directory only mcpmgr's user opens
  // (a remote engine, which cannot mount it, gets the relay published on loopback instead).
  const socketDir = isolate && !stdio ? ingressSocketDir(engine, spec.name, ctx.paths.runtimeDir) : undefined;
  const isolation = isolate
    ? await createIsolation(engine, {
        workload: spec.name,
        labels,
        profile: server.profile,
        allowGateway: placement.allowGateway,
        ...(containerPort !== undefined
          ? { ingress: socketDir ? { containerPort, socketDir } : { containerPort, ...(hostPort ? { hostPort } : {}) } }
          : {}),
        onProgress: (line) => ctx.log.info(line),
        imageLock: join(ctx.paths.stateDir, "builds", "mcpmgr-egress.lock"),
      })
    : undefined;
  const createOptions = serverContainerOptions({
    containerName,
    image,
    args: server.args,
    env: {
      ...environment.env,
      ...(isolation?.proxyEnv ?? {}),
      ...(containerPort !== undefined ? { MCP_TRANSPORT: server.transport, MCP_PORT: String(containerPort) } : {}),
    },
    labels: labels("server"),
    stdio,
    profile: server.profile,
    // A mount that shows nothing but mcpmgr's state is replaced by the empty tmpfs (one mount point each).
    volumes: placement.mounts.filter((m) => !placement.hiddenDirs.includes(m.containerPath)),
    overlays: [...overlays, ...placement.hiddenDirs.map((containerPath) => ({ kind: "dir" as const, containerPath }))],
    ...(emptyFile ? { emptyFile } : {}),
    networkMode: isolation?.networkName ?? networkMode,
    networkAlias: SERVER_ALIAS,
    publish: [
      ...(!isolate && !hostNetwork && containerPort !== undefined && hostPort !== undefined
        ? [{ containerPort, hostPort }]
        : []),
      ...placement.publish,
    ],
    limits: placement.limits,
    // Its root is the host's root on a rootful engine: no set-user-ID program left in a volume.
    ...(seccomp ? { seccomp } : {}),
    ...(guard ? { guard } : {}),
  });
  if (signal?.aborted) {
    await isolation?.remove();
    signal.throwIfAborted();
  }
  const container = await startServerContainer(
    engine,
    createOptions,
    stdio,
    async () => {
      await isolation?.remove();
    },
    signal,
    guard ? copyGuardInto : undefined,
  );
  const handle = containerHandle(container, environment);
  // Given up while the container was created and started: it is stopped and removed, not handed on.
  if (signal?.aborted) {
    await handle.stop(1_000);
    signal.throwIfAborted();
  }
  // The package's image this start runs is the one kept: an earlier build of it (before a change) goes. Not
  // awaited: removing an image can take seconds, and so can telling the packages of the home's other workloads
  // (a registry that does not answer), and the server is ready for its handshake now. It never throws.
  if (placement.source.kind === "package")
    void pruneBuiltImages(engine, buildRepository(placement.source), spec.name, ctx, image);
  if (socketDir && containerPort !== undefined)
    return { server: handle, http: { host: "127.0.0.1", port: containerPort, unix: join(socketDir, INGRESS_SOCKET) } };
  return { server: handle, ...(hostPort !== undefined ? { http: { host: "127.0.0.1", port: hostPort } } : {}) };
}
