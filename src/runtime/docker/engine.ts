/**
 * Finding a container engine (ARCHITECTURE.md §5): MCPMGR_RUNTIME wins (docker | podman | process);
 * otherwise the first Engine API socket that answers a ping, in this order: DOCKER_HOST,
 * Podman's sockets, Docker's default socket, Docker Desktop, Colima, Rancher Desktop,
 * OrbStack, and on Windows the Docker and Podman named pipes. Podman, Colima, Rancher and
 * OrbStack all speak the Docker Engine API, so one client (dockerode) serves them all.
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type Docker from "dockerode";
import { McpmgrError } from "../../errors.ts";
import { fileInOthersReach } from "../../state/private-dirs.ts";

export type EngineKind = "docker" | "podman";
export type RuntimeChoice = EngineKind | "process";

export interface ContainerEngine {
  readonly kind: EngineKind;
  /** Where the Engine API answered (socket path, pipe or tcp URL), for messages. */
  readonly endpoint: string;
  readonly docker: Docker;
}

interface Candidate {
  readonly kind: EngineKind;
  readonly endpoint: string;
  readonly options: Docker.DockerOptions;
}

type Env = Readonly<Record<string, string | undefined>>;

/** MCPMGR_RUNTIME, validated; undefined means "detect". */
export function runtimeChoice(env: Env = process.env): RuntimeChoice | undefined {
  const choice = env.MCPMGR_RUNTIME;
  if (choice === undefined || choice === "") return undefined;
  if (choice === "docker" || choice === "podman" || choice === "process") return choice;
  throw new McpmgrError(
    "INVALID_OPTION",
    `MCPMGR_RUNTIME ${JSON.stringify(choice)}: must be docker, podman or process`,
    { hint: "unset it to let mcpmgr choose" },
  );
}

/** DOCKER_HOST in the forms the Docker CLI accepts: unix://, tcp://, npipe://. */
function fromDockerHost(value: string, env: Env): Candidate {
  const kind: EngineKind = /podman/i.test(value) ? "podman" : "docker";
  const noHost = undefined as unknown as string;
  if (value.startsWith("unix://"))
    return { kind, endpoint: value, options: { socketPath: value.slice("unix://".length), host: noHost } };
  if (value.startsWith("npipe://"))
    return {
      kind,
      endpoint: value,
      options: { socketPath: value.slice("npipe://".length).replaceAll("/", "\\"), host: noHost },
    };
  if (value.startsWith("tcp://") || value.startsWith("http://") || value.startsWith("https://")) {
    const url = new URL(value.replace(/^tcp:/, "http:"));
    const protocol = url.protocol === "https:" || env.DOCKER_TLS_VERIFY === "1" ? "https" : "http";
    return {
      kind,
      endpoint: value,
      options: { host: url.hostname, port: Number(url.port || (protocol === "https" ? 2376 : 2375)), protocol },
    };
  }
  if (value.startsWith("ssh://")) {
    // Published ports and bind mounts would live on the remote machine, not beside the proxy.
    throw new McpmgrError(
      "INVALID_OPTION",
      `DOCKER_HOST ${JSON.stringify(value)}: engines over ssh:// are not supported`,
      {
        hint: "forward the engine's socket (ssh -nNT -L /tmp/engine.sock:/var/run/docker.sock HOST) and set DOCKER_HOST=unix:///tmp/engine.sock, or unset DOCKER_HOST",
      },
    );
  }
  throw new McpmgrError(
    "INVALID_OPTION",
    `DOCKER_HOST ${JSON.stringify(value)}: expected unix://, tcp:// or npipe://`,
    { hint: "fix or unset DOCKER_HOST" },
  );
}

/** The sockets to try, most specific first. */
export function engineCandidates(
  env: Env = process.env,
  platform: NodeJS.Platform = process.platform,
  home: string = homedir(),
): Candidate[] {
  // host: undefined, or dockerode's defaults (read from the real DOCKER_HOST) would win over socketPath.
  const socket = (kind: EngineKind, path: string): Candidate => ({
    kind,
    endpoint: path,
    options: { socketPath: path, host: undefined as unknown as string },
  });
  const list: Candidate[] = [];
  if (env.DOCKER_HOST) list.push(fromDockerHost(env.DOCKER_HOST, env));
  if (env.CONTAINER_HOST) list.push({ ...fromDockerHost(env.CONTAINER_HOST, env), kind: "podman" });
  if (platform === "win32") {
    list.push(socket("docker", "\\\\.\\pipe\\docker_engine"), socket("podman", "\\\\.\\pipe\\podman-machine-default"));
    return list;
  }
  const runtimeDir =
    env.XDG_RUNTIME_DIR ?? (typeof process.getuid === "function" ? `/run/user/${process.getuid()}` : undefined);
  // The user's own engines first: rootless Podman, then rootless Docker (its socket is found through a
  // `docker context`, which sets no DOCKER_HOST), before the system-wide ones.
  if (runtimeDir)
    list.push(
      socket("podman", join(runtimeDir, "podman", "podman.sock")),
      socket("docker", join(runtimeDir, "docker.sock")),
    );
  list.push(
    socket("podman", "/run/podman/podman.sock"),
    socket("docker", "/var/run/docker.sock"),
    // Docker Desktop: on macOS, then on Linux (where it also works through a `docker context` alone).
    socket("docker", join(home, ".docker", "run", "docker.sock")),
    socket("docker", join(home, ".docker", "desktop", "docker.sock")),
    socket("docker", join(home, ".colima", "default", "docker.sock")),
    socket("docker", join(home, ".colima", "docker.sock")),
    socket("docker", join(home, ".rd", "docker.sock")),
    socket("docker", join(home, ".orbstack", "run", "docker.sock")),
    socket("podman", join(home, ".local", "share", "containers", "podman", "machine", "podman.sock")),
  );
  return list;
}

/**
 * Which engine answered, from its /version reply: Podman names itself in Platform.Name
 * ("Podman Engine") and in Components ("Podman Engine"); Docker does neither. A socket's
 * path or DOCKER_HOST is only a guess (podman-docker serves /var/run/docker.sock).
 */
export function engineKindOf(version: {
  Platform?: { Name?: string };
  Components?: readonly { Name?: string }[];
}): EngineKind {
  const names = [version.Platform?.Name, ...(version.Components ?? []).map((c) => c.Name)];
  return names.some((name) => typeof name === "string" && /podman/i.test(name)) ? "podman" : "docker";
}

async function answers(
  candidate: Candidate,
  timeoutMs: number,
): Promise<{ docker: Docker; kind: EngineKind } | undefined> {
  const path = candidate.options.socketPath;
  if (path !== undefined && !path.startsWith("\\\\") && !existsSync(path)) return undefined;
  // Loaded on first use: dockerode brings gRPC, protobuf and SSH clients along, which a
  // command that never talks to an engine (`run URL`, `list`) should not pay for at start-up.
  const { default: Docker } = await import("dockerode");
  const docker = new Docker({ ...candidate.options, timeout: timeoutMs });
  try {
    await docker.ping();
    const kind = engineKindOf((await docker.version()) as Parameters<typeof engineKindOf>[0]);
    // Later calls (pulls, builds, attach) may take long: no client-side timeout for them.
    return { docker: new Docker(candidate.options), kind };
  } catch {
    return undefined;
  }
}

/**
 * Whether a candidate's Unix socket may be trusted: whoever answers there receives every
 * container's environment (its secrets) and plays its server. A socket of another user, or in a
 * folder another user may write (`XDG_RUNTIME_DIR=/tmp`: anyone can make `/tmp/podman/podman.sock`
 * first), is no engine of this user's: skipped when found by its usual place, refused when named
 * by DOCKER_HOST or CONTAINER_HOST (or recorded with a workload, which is passed on as DOCKER_HOST).
 */
function ownSocket(candidate: Candidate, named: boolean): boolean {
  const path = candidate.options.socketPath;
  if (path === undefined || path.startsWith("\\\\") || process.platform === "win32") return true;
  const why = fileInOthersReach(path);
  if (why === undefined) return true;
  if (!named) return false;
  throw new McpmgrError(
    "RUNTIME_UNAVAILABLE",
    `the container engine socket ${path} is in another user's reach (${why}): whoever answers there would get every container's environment`,
    { hint: "point DOCKER_HOST (or CONTAINER_HOST) at an engine socket in a folder only you, or root, can write to" },
  );
}

/**
 * The engine to use, or undefined when none answers (or the one DOCKER_HOST names does not: no other
 * is tried then). `want` narrows the search to one kind (MCPMGR_RUNTIME=docker|podman); DOCKER_HOST
 * is honoured for either. CONTAINER_HOST is
 * Podman's own variable, set for Podman's tools: under MCPMGR_RUNTIME=docker a Podman engine
 * it names was taken all the same, so it counts only when its engine is of the kind wanted.
 * The kind recorded is the one the engine reports, not the one asked for or guessed from the path.
 */
export async function detectEngine(
  options: { env?: Env; want?: EngineKind; timeoutMs?: number } = {},
): Promise<ContainerEngine | undefined> {
  const env = options.env ?? process.env;
  for (const candidate of engineCandidates(env)) {
    const fromDockerHost = candidate.endpoint === env.DOCKER_HOST;
    if (!ownSocket(candidate, fromDockerHost || candidate.endpoint === env.CONTAINER_HOST)) continue;
    const found = await answers(candidate, options.timeoutMs ?? 2_000);
    // The engine DOCKER_HOST names, or none: it is also how a workload's recorded engine is passed on, and
    // the next socket that answered (a rootful engine after a rootless one, another Podman service) moved
    // the workload there, with its volumes and secrets, because its own engine was not up yet.
    if (found === undefined && fromDockerHost) return undefined;
    if (found === undefined || (options.want && found.kind !== options.want && !fromDockerHost)) continue;
    return { kind: found.kind, endpoint: candidate.endpoint, docker: found.docker };
  }
  return undefined;
}

/** The DOCKER_HOST value that reaches the same engine again (recorded with a workload). */
export function dockerHostFor(endpoint: string): string {
  if (/^(unix|tcp|npipe|https?):\/\//.test(endpoint)) return endpoint;
  if (endpoint.startsWith("\\\\")) return `npipe://${endpoint.replaceAll("\\", "/")}`;
  return `unix://${endpoint}`;
}

export function noEngineError(why: string, want?: EngineKind): McpmgrError {
  const which = want ?? "Docker or Podman";
  // Podman has no daemon to start: what answers is its API service, started by its socket unit or by hand.
  const hint =
    want === "podman"
      ? "start Podman's API socket ('systemctl --user start podman.socket', as root 'systemctl start podman.socket', or 'podman system service --time=0 &'), or point CONTAINER_HOST at its socket"
      : `start ${which} (or Colima, Rancher Desktop, OrbStack), or point DOCKER_HOST at its socket`;
  return new McpmgrError("RUNTIME_UNAVAILABLE", `${why}, but no ${which} engine answered`, { hint });
}
