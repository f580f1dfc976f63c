/**
 * `--isolate-network` (and profile `none` for HTTP servers): the server container joins
 * only an *internal* network, which has no route anywhere — not even to the host: the
 * bridge gets no IPv4 address (inhibit_ipv4), so the network's "gateway" answers nothing.
 * A helper container on that network and on a per-workload outside network (not the
 * shared default bridge, so other containers do not reach the helper) is its only way out
 * and in:
 *   egress   an HTTP/CONNECT proxy (HTTP_PROXY/HTTPS_PROXY in the server) that lets
 *            through exactly the profile's outbound.allow_host / allow_port, never the
 *            engine's host-gateway addresses unless --allow-docker-gateway, and never
 *            loopback or link-local (cloud metadata) addresses, whatever the flags;
 *   ingress  for sse/streamable-http servers, a relay listening on a Unix socket in a host
 *            directory only mcpmgr's user can open (<runtimeDir>/ingress/NAME, its parent
 *            0700), bind-mounted into the helper alone: the mcpmgr proxy is the only thing
 *            that reaches the server (root aside). With a remote engine (tcp://), where a
 *            host directory is not the engine's, the relay is published on loopback instead.
 * Software that ignores HTTP_PROXY gets no network at all, which is the safe failure.
 */
import { deniesNetwork, type PermissionProfile } from "../permission-profile.ts";
import type { EgressConfig } from "./egress/config.ts";
import type { ContainerEngine } from "./engine.ts";
import { planEgressImage, provideEgressImage } from "./egress-image.ts";
import { takenNameError } from "./container-name.ts";
import { engineError } from "./images.ts";
import { INSTALL_LABEL } from "./labels.ts";
import { chmodSync, mkdirSync, rmSync } from "node:fs";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import { McpmgrError } from "../../errors.ts";
import { acquireLock, type LockHandle } from "../../state/lock.ts";

const EGRESS_ALIAS = "mcpmgr-egress";
export const SERVER_ALIAS = "mcp-server";
const EGRESS_PORT = 3128;
const INGRESS_PORT = 8080;
/** Where the helper sees the host's ingress socket directory. */
const INGRESS_DIR = "/ingress";
export const INGRESS_SOCKET = "mcp.sock";

/**
 * Loopback (the helper's own ports), link-local (cloud metadata services), "this network"
 * and the unspecified IPv6 address (both reach the helper itself), and the metadata
 * services outside link-local (AWS over IPv6, Alibaba Cloud): never the Docker host, so
 * --allow-docker-gateway does not open them.
 */
const alwaysBlocked = [
  "127.0.0.0/8",
  "::1/128",
  "::/128",
  "169.254.0.0/16",
  "fe80::/10",
  "0.0.0.0/8",
  "fd00:ec2::254/128",
  "100.100.100.200",
];
/** Docker's default gateway, blocked with the engine's other gateways unless --allow-docker-gateway. */
const defaultGateway = "172.17.0.1";

/** Names the engines give the host; blocked with the gateway addresses. */
const gatewayHostNames = [
  "host.docker.internal",
  "gateway.docker.internal",
  "host.containers.internal",
  "host.lima.internal",
  "host.rancher-desktop.internal",
];

export interface IsolationInput {
  readonly workload: string;
  readonly labels: (role: "egress" | "network") => Record<string, string>;
  readonly profile: PermissionProfile;
  readonly allowGateway: boolean;
  /**
   * For HTTP servers: the server's port inside, and either a host directory for the relay's
   * Unix socket (mounted into the helper only) or a loopback host port.
   */
  readonly ingress?: { readonly containerPort: number; readonly socketDir?: string; readonly hostPort?: number };
  readonly onProgress: (line: string) => void;
  /**
   * A lock file of this installation's state, held from finding (or building) the helper image until the
   * helper container exists. A build removes this installation's other helper images; without the lock, a
   * process of another mcpmgr version (a supervisor still running across an upgrade) could find its image
   * and have it removed before its container is created from it. Once a container uses it, it stays.
   */
  readonly imageLock: string;
}

/** A helper build may pull Bun's image first (an engine unlike the host): as long as a package build may wait. */
const IMAGE_LOCK_MS = 30 * 60_000;

export interface Isolation {
  /** The internal network the server joins (its NetworkMode). */
  readonly networkName: string;
  /** Environment that routes the server's HTTP(S) through the egress proxy. */
  readonly proxyEnv: Readonly<Record<string, string>>;
  remove(): Promise<void>;
}

/** `hostAddresses`: the engine's gateways and the host's own interface addresses. */
export function egressConfigFor(
  profile: PermissionProfile,
  allowGateway: boolean,
  hostAddresses: readonly string[],
  ingress?: IsolationInput["ingress"],
): EgressConfig {
  const outbound = profile.network.outbound;
  const none = deniesNetwork(profile);
  return {
    listenPort: EGRESS_PORT,
    allowAll: !none && outbound.insecure_allow_all,
    allowHosts: none ? [] : [...outbound.allow_host],
    allowPorts: none ? [] : [...outbound.allow_port],
    blockedAddresses: [...new Set([defaultGateway, ...hostAddresses])],
    alwaysBlockedAddresses: [...alwaysBlocked],
    blockedHostNames: gatewayHostNames,
    allowGateway,
    ...(ingress
      ? {
          ingress: {
            listenPort: INGRESS_PORT,
            ...(ingress.socketDir ? { listenPath: `${INGRESS_DIR}/${INGRESS_SOCKET}` } : {}),
            targetHost: SERVER_ALIAS,
            targetPort: ingress.containerPort,
          },
        }
      : {}),
  };
}

/**
 * The gateway address of each IPAM pool. Some engines (Debian's docker.io 20.10 for the
 * default bridge) record only the subnet; the bridge then takes the subnet's first host
 * address, so that address is the host too and must be blocked like a named gateway.
 */
export function ipamGateways(configs: readonly { Subnet?: string; Gateway?: string }[]): string[] {
  return configs.flatMap((config) => {
    if (config.Gateway) return [config.Gateway];
    const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(config.Subnet ?? "");
    if (!m || Number(m[5]) > 30) return [];
    const base = m.slice(1, 5).reduce((acc, part) => (acc << 8) | Number(part), 0) >>> 0;
    const mask = Number(m[5]) === 0 ? 0 : (~0 << (32 - Number(m[5]))) >>> 0;
    const first = ((base & mask) >>> 0) + 1;
    return [[24, 16, 8, 0].map((shift) => (first >>> shift) & 255).join(".")];
  });
}

/** Every engine network's gateway (each is the host) and the host's own addresses, when the engine is local. */
async function hostAddresses(engine: ContainerEngine): Promise<string[]> {
  const networks = (await engine.docker.listNetworks()) as {
    IPAM?: { Config?: { Subnet?: string; Gateway?: string }[] };
  }[];
  const gateways = ipamGateways(networks.flatMap((n) => n.IPAM?.Config ?? []));
  const local = engine.endpoint.startsWith("tcp://")
    ? []
    : Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address.replace(/%.*$/, "")));
  return [...gateways, ...local];
}

/** Removes a network, first disconnecting anything still attached (it would block the removal). */
export async function removeNetwork(engine: ContainerEngine, name: string): Promise<void> {
  const network = engine.docker.getNetwork(name);
  const info = (await network.inspect().catch(() => undefined)) as { Containers?: Record<string, unknown> } | undefined;
  if (info === undefined) return;
  for (const id of Object.keys(info.Containers ?? {}))
    await network.disconnect({ Container: id, Force: true }).catch(() => {});
  await network.remove().catch(() => {});
}

/** Network and helper names: "." cannot appear in a workload name, so they never collide with another workload's. */
function isolationNames(workload: string): { internal: string; external: string; helper: string } {
  return {
    internal: `mcpmgr-${workload}.internal`,
    external: `mcpmgr-${workload}.external`,
    helper: `mcpmgr-${workload}.egress`,
  };
}

export async function createIsolation(engine: ContainerEngine, input: IsolationInput): Promise<Isolation> {
  const names = isolationNames(input.workload);
  const docker = engine.docker;
  // The installation (state/install-id.ts) these objects are made for; its own helper image too.
  const install = input.labels("network")[INSTALL_LABEL] ?? "";
  // Only what this call made: a failure on a name someone else already uses must not delete theirs.
  const made = { helper: false, internal: false, external: false };
  /** What is being created: a name conflict there may be another installation's (takenNameError). */
  let creating: { what: "container" | "network"; name: string } = { what: "network", name: names.internal };
  const removeAll = async () => {
    if (made.helper)
      await docker
        .getContainer(names.helper)
        .remove({ force: true })
        .catch(() => {});
    if (made.internal) await removeNetwork(engine, names.internal);
    if (made.external) await removeNetwork(engine, names.external);
  };
  let lock: LockHandle | undefined;
  try {
    // Everything but the image's find-or-build and the helper's create happens outside the lock:
    // several workloads starting at once (`start --all`) wait for each other only that long.
    const plan = await planEgressImage(engine, install);
    await docker.createNetwork({
      Name: names.internal,
      Driver: "bridge",
      Internal: true,
      CheckDuplicate: true,
      Labels: input.labels("network"),
      Options: { "com.docker.network.bridge.inhibit_ipv4": "true" },
    });
    made.internal = true;
    creating = { what: "network", name: names.external };
    await docker.createNetwork({
      Name: names.external,
      Driver: "bridge",
      CheckDuplicate: true,
      Labels: input.labels("network"),
    });
    made.external = true;
    const config = egressConfigFor(input.profile, input.allowGateway, await hostAddresses(engine), input.ingress);
    const ingressKey = `${INGRESS_PORT}/tcp`;
    const socketDir = input.ingress?.socketDir;
    const hostPort = socketDir === undefined ? input.ingress?.hostPort : undefined;
    lock = await acquireLock(input.imageLock, {
      timeoutMs: IMAGE_LOCK_MS,
      staleMs: IMAGE_LOCK_MS,
      onWait: () => input.onProgress("waiting for another mcpmgr to set up the network isolation helper image…"),
    });
    const image = await provideEgressImage(engine, plan, input.onProgress);
    creating = { what: "container", name: names.helper };
    const helper = await docker.createContainer({
      name: names.helper,
      Image: image,
      Env: [`MCPMGR_EGRESS_CONFIG=${JSON.stringify(config)}`],
      Labels: input.labels("egress"),
      ...(hostPort !== undefined ? { ExposedPorts: { [ingressKey]: {} } } : {}),
      HostConfig: {
        CapDrop: ["ALL"],
        SecurityOpt: ["no-new-privileges"],
        ReadonlyRootfs: true,
        Memory: 256 * 1024 ** 2,
        PidsLimit: 64,
        NetworkMode: names.external,
        ...(hostPort !== undefined
          ? { PortBindings: { [ingressKey]: [{ HostIp: "127.0.0.1", HostPort: String(hostPort) }] } }
          : {}),
        ...(socketDir ? { Mounts: [{ Type: "bind" as const, Source: socketDir, Target: INGRESS_DIR }] } : {}),
        RestartPolicy: { Name: "no" },
      },
    });
    made.helper = true;
    // The container now holds its image: a build elsewhere cannot remove it any more.
    await lock.release();
    await docker
      .getNetwork(names.internal)
      .connect({ Container: helper.id, EndpointConfig: { Aliases: [EGRESS_ALIAS] } });
    await helper.start();
  } catch (err) {
    await lock?.release();
    await removeAll();
    if (err instanceof McpmgrError) throw err;
    // Another installation starting a workload of the same name made these networks first.
    throw (
      (await takenNameError(engine, creating.what, creating.name, install, err)) ??
      engineError("setting up the isolated network", err)
    );
  }
  const proxyUrl = `http://${EGRESS_ALIAS}:${EGRESS_PORT}`;
  return {
    networkName: names.internal,
    proxyEnv: {
      HTTP_PROXY: proxyUrl,
      HTTPS_PROXY: proxyUrl,
      http_proxy: proxyUrl,
      https_proxy: proxyUrl,
      NO_PROXY: "localhost,127.0.0.1",
      no_proxy: "localhost,127.0.0.1",
    },
    remove: removeAll,
  };
}

/**
 * `<runtimeDir>/ingress/NAME` (its parent 0700: only mcpmgr's user, and root, can reach the
 * socket the helper creates in it); undefined for an engine on another machine (tcp://),
 * which cannot mount a local directory: the relay is published on loopback then.
 */
export function ingressSocketDir(engine: ContainerEngine, workload: string, runtimeDir: string): string | undefined {
  if (engine.endpoint.startsWith("tcp://") || process.platform !== "linux") return undefined;
  const parent = join(runtimeDir, "ingress");
  mkdirSync(parent, { recursive: true, mode: 0o700 });
  chmodSync(parent, 0o700);
  const dir = join(parent, workload);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { mode: 0o777 });
  // The helper runs as another uid: it must be able to create its socket here (the umask narrowed the mode).
  chmodSync(dir, 0o777);
  return dir;
}
