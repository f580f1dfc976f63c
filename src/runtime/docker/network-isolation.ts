/**
 * `--isolate-network` (and profile `none` for HTTP servers): the server container joins
 * only an *internal* network, which has no route anywhere. A helper container on that
 * network and on the default bridge is its only way out and in:
 *   egress   an HTTP/CONNECT proxy (HTTP_PROXY/HTTPS_PROXY in the server) that lets
 *            through exactly the profile's outbound.allow_host / allow_port, and never the
 *            engine's host-gateway addresses unless --allow-docker-gateway;
 *   ingress  for sse/streamable-http servers, a TCP relay published on host loopback, so
 *            the mcpmgr proxy is the only thing that reaches the server.
 * Software that ignores HTTP_PROXY gets no network at all, which is the safe failure.
 */
import { deniesNetwork, type PermissionProfile } from "../permission-profile.ts";
import type { EgressConfig } from "./egress-proxy.ts";
import type { ContainerEngine } from "./engine.ts";
import { ensureEgressImage } from "./egress-image.ts";
import { engineError } from "./images.ts";

export const EGRESS_ALIAS = "mcpmgr-egress";
export const SERVER_ALIAS = "mcp-server";
const EGRESS_PORT = 3128;
const INGRESS_PORT = 8080;

/** Names the engines give the host; blocked with the gateway addresses. */
const gatewayHostNames = ["host.docker.internal", "gateway.docker.internal", "host.containers.internal", "host.lima.internal", "host.rancher-desktop.internal"];

export interface IsolationInput {
  readonly workload: string;
  readonly labels: (role: "egress" | "network") => Record<string, string>;
  readonly profile: PermissionProfile;
  readonly allowGateway: boolean;
  /** For HTTP servers: the server's port inside, and the loopback host port outside. */
  readonly ingress?: { readonly containerPort: number; readonly hostPort: number };
  readonly onProgress: (line: string) => void;
}

export interface Isolation {
  /** The internal network the server joins (its NetworkMode). */
  readonly networkName: string;
  /** Environment that routes the server's HTTP(S) through the egress proxy. */
  readonly proxyEnv: Readonly<Record<string, string>>;
  remove(): Promise<void>;
}

export function egressConfigFor(profile: PermissionProfile, allowGateway: boolean, blockedAddresses: readonly string[], ingress?: IsolationInput["ingress"]): EgressConfig {
  const outbound = profile.network.outbound;
  const none = deniesNetwork(profile);
  return {
    listenPort: EGRESS_PORT,
    allowAll: !none && outbound.insecure_allow_all,
    allowHosts: none ? [] : [...outbound.allow_host],
    allowPorts: none ? [] : [...outbound.allow_port],
    blockedAddresses: [...new Set(["172.17.0.1", ...blockedAddresses])],
    blockedHostNames: gatewayHostNames,
    allowGateway,
    ...(ingress ? { ingress: { listenPort: INGRESS_PORT, targetHost: SERVER_ALIAS, targetPort: ingress.containerPort } } : {}),
  };
}

async function gatewaysOf(engine: ContainerEngine, network: string): Promise<string[]> {
  const info = (await engine.docker.getNetwork(network).inspect().catch(() => undefined)) as { IPAM?: { Config?: { Gateway?: string }[] } } | undefined;
  return (info?.IPAM?.Config ?? []).map((c) => c.Gateway).filter((g): g is string => typeof g === "string" && g !== "");
}

export async function createIsolation(engine: ContainerEngine, input: IsolationInput): Promise<Isolation> {
  const image = await ensureEgressImage(engine, input.onProgress);
  const networkName = `mcpmgr-${input.workload}-isolated`;
  const helperName = `mcpmgr-${input.workload}-egress`;
  const docker = engine.docker;
  const removeAll = async () => {
    await docker.getContainer(helperName).remove({ force: true }).catch(() => {});
    await docker.getNetwork(networkName).remove().catch(() => {});
  };
  try {
    await docker.createNetwork({ Name: networkName, Driver: "bridge", Internal: true, CheckDuplicate: true, Labels: input.labels("network") });
    const blocked = [...(await gatewaysOf(engine, "bridge")), ...(await gatewaysOf(engine, networkName))];
    const config = egressConfigFor(input.profile, input.allowGateway, blocked, input.ingress);
    const ingressKey = `${INGRESS_PORT}/tcp`;
    const helper = await docker.createContainer({
      name: helperName,
      Image: image,
      Env: [`MCPMGR_EGRESS_CONFIG=${JSON.stringify(config)}`],
      Labels: input.labels("egress"),
      ...(input.ingress ? { ExposedPorts: { [ingressKey]: {} } } : {}),
      HostConfig: {
        CapDrop: ["ALL"],
        SecurityOpt: ["no-new-privileges"],
        ReadonlyRootfs: true,
        Memory: 256 * 1024 ** 2,
        PidsLimit: 64,
        NetworkMode: "bridge",
        ...(input.ingress ? { PortBindings: { [ingressKey]: [{ HostIp: "127.0.0.1", HostPort: String(input.ingress.hostPort) }] } } : {}),
        RestartPolicy: { Name: "no" },
      },
    });
    await docker.getNetwork(networkName).connect({ Container: helper.id, EndpointConfig: { Aliases: [EGRESS_ALIAS] } });
    await helper.start();
  } catch (err) {
    await removeAll();
    throw engineError("setting up the isolated network", err);
  }
  const proxyUrl = `http://${EGRESS_ALIAS}:${EGRESS_PORT}`;
  return {
    networkName,
    proxyEnv: { HTTP_PROXY: proxyUrl, HTTPS_PROXY: proxyUrl, http_proxy: proxyUrl, https_proxy: proxyUrl, NO_PROXY: "localhost,127.0.0.1", no_proxy: "localhost,127.0.0.1" },
    remove: removeAll,
  };
}
