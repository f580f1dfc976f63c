/**
 * Getting an image ready: a local image is used as it is (no pull, so offline hosts and
 * locally built images work); a missing one is pulled with progress. Digest-pinned
 * references (`repo@sha256:…`) also match a local image whose ID is that digest: the ID
 * is the digest of the image's configuration, which names every layer by content.
 */
import type Docker from "dockerode";
import { errorMessage, McpmgrError } from "../../errors.ts";
import type { ContainerEngine } from "./engine.ts";

export interface ImageFacts {
  readonly id: string;
  readonly repoTags: readonly string[];
  readonly repoDigests: readonly string[];
  /** The TCP ports the image EXPOSEs (its author's choice of server port), for defaults. */
  readonly exposedPorts: readonly number[];
  readonly user: string;
  /** The image's own Entrypoint and Cmd (empty when it sets none), which the set-ID guard runs after itself. */
  readonly entrypoint: readonly string[];
  readonly cmd: readonly string[];
  /** The image config's platform ("linux", "amd64"; empty when unset), which the set-ID guard must match. */
  readonly os: string;
  readonly architecture: string;
}

/** An image's Entrypoint or Cmd as the engine reports it: a list, or null when unset. */
const commandList = (value: unknown): string[] =>
  Array.isArray(value) ? value.map(String) : typeof value === "string" ? [value] : [];

const digestPin = /^(?<repo>.+)@(?<digest>sha256:[a-f0-9]{64})$/;

function facts(info: Docker.ImageInspectInfo): ImageFacts {
  // Keys are "PORT/PROTO" ("8080/tcp", "53/udp"); a server port is a TCP one.
  const exposed = Object.keys(info.Config?.ExposedPorts ?? {})
    .map((key) => /^(\d+)(?:\/tcp)?$/i.exec(key)?.[1])
    .filter((port): port is string => port !== undefined)
    .map(Number);
  return {
    id: info.Id,
    repoTags: info.RepoTags ?? [],
    repoDigests: info.RepoDigests ?? [],
    exposedPorts: exposed,
    user: info.Config?.User ?? "",
    entrypoint: commandList(info.Config?.Entrypoint),
    cmd: commandList(info.Config?.Cmd),
    os: info.Os ?? "",
    architecture: info.Architecture ?? "",
  };
}

export async function inspectLocalImage(engine: ContainerEngine, ref: string): Promise<ImageFacts | undefined> {
  const found = await engine.docker
    .getImage(ref)
    .inspect()
    .then(facts, (err: { statusCode?: number }) => {
      if (err.statusCode === 404) return undefined;
      throw engineError(`inspecting image ${ref}`, err);
    });
  if (found) return found;
  const pin = digestPin.exec(ref)?.groups;
  if (!pin) return undefined;
  const byId = await engine.docker
    .getImage(pin.digest as string)
    .inspect()
    .then(facts, () => undefined);
  const repo = pin.repo as string;
  return byId?.repoTags.some((tag) => tag.startsWith(`${repo}:`)) ? byId : undefined;
}

export type PullProgress = (line: string) => void;

/** The local image, pulling it first when missing. */
export async function ensureImage(
  engine: ContainerEngine,
  ref: string,
  onProgress: PullProgress,
  /** Aborted: the pull request is closed, which makes the engine cancel the pull. */
  signal?: AbortSignal,
): Promise<ImageFacts> {
  const local = await inspectLocalImage(engine, ref);
  if (local) return local;
  signal?.throwIfAborted();
  onProgress(`pulling ${ref}`);
  await pull(engine, ref, onProgress, signal);
  const pulled = await inspectLocalImage(engine, ref);
  if (!pulled)
    throw new McpmgrError("IMAGE_PULL_FAILED", `pulled ${ref}, but the engine does not list it`, {
      hint: "check the reference (tag, platform)",
    });
  return pulled;
}

async function pull(
  engine: ContainerEngine,
  ref: string,
  onProgress: PullProgress,
  signal: AbortSignal | undefined,
): Promise<void> {
  const failed = (why: string, cause?: unknown) =>
    new McpmgrError("IMAGE_PULL_FAILED", `could not pull ${ref}: ${why}`, {
      hint: "check the image name and tag, your network, and `docker login` for private registries",
      cause,
    });
  let stream: NodeJS.ReadableStream;
  try {
    stream = await engine.docker.pull(ref, signal ? { abortSignal: signal } : {});
  } catch (err) {
    signal?.throwIfAborted();
    throw failed(firstLine(err), err);
  }
  // One line per layer state change, not per byte: progress without flooding the log.
  const lastStatus = new Map<string, string>();
  await new Promise<void>((resolve, reject) => {
    // A closed request does not always end the progress stream with an error: the abort does.
    signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
    engine.docker.modem.followProgress(
      stream,
      (err: Error | null) => (err ? reject(failed(firstLine(err), err)) : resolve()),
      (event: { id?: string; status?: string; error?: string; errorDetail?: { message?: string } }) => {
        if (event.error || event.errorDetail)
          return reject(failed(event.errorDetail?.message ?? event.error ?? "unknown error"));
        if (!event.status) return;
        const key = event.id ?? "";
        if (lastStatus.get(key) === event.status) return;
        lastStatus.set(key, event.status);
        onProgress(event.id ? `${event.id}: ${event.status}` : event.status);
      },
    );
  });
}

export type VerificationMode = "warn" | "enabled" | "disabled";

/**
 * What `--image-verification` checks: that the image is pinned by content digest (by the
 * registry entry or the reference given) and that the local image is that content
 * (RepoDigests contain the pin, or its ID is the pinned digest). A tag alone can be
 * re-pointed by whoever controls the repository, so a tag-only image is "unverified".
 * Signature/attestation checks (sigstore) need the transparency log online and are not
 * done; locally built protocol-scheme images are ours and not checked, but the base images
 * they are built from are, on every run (cached builds too).
 *
 * `image` undefined: a base image of a cached build that is no longer present locally. The
 * build resolved the reference itself, so a digest pin is then all there is to check.
 */
export function verifyImage(
  ref: string,
  image: ImageFacts | undefined,
): { verified: true } | { verified: false; why: string } {
  const pin = digestPin.exec(ref)?.groups;
  if (!pin)
    return {
      verified: false,
      why: `${ref} is not pinned by digest (repo@sha256:…), so its content cannot be verified`,
    };
  const digest = pin.digest as string;
  if (image === undefined || image.id === digest || image.repoDigests.some((entry) => entry.endsWith(`@${digest}`)))
    return { verified: true };
  return { verified: false, why: `the local image for ${ref} does not have the pinned digest` };
}

export function applyVerification(
  mode: VerificationMode,
  ref: string,
  image: ImageFacts | undefined,
  warn: (text: string) => void,
): void {
  if (mode === "disabled") return;
  const result = verifyImage(ref, image);
  if (result.verified) return;
  if (mode === "warn") {
    warn(`image verification: ${result.why}; running it anyway (--image-verification warn)`);
    return;
  }
  throw new McpmgrError("IMAGE_UNVERIFIED", `image verification failed: ${result.why}`, {
    hint: "pin the image by digest (image@sha256:…), or pass --image-verification warn to run it anyway",
  });
}

/**
 * An Engine API failure as one line. Failures the user's options caused get their own code
 * and a hint about the option; the rest point at the engine.
 */
export function engineError(what: string, err: unknown): McpmgrError {
  const why = firstLine(err);
  const message = `${what} failed: ${why}`;
  if (/network .* not found/i.test(why)) {
    return new McpmgrError("INVALID_OPTION", message, {
      hint: "create the network first (docker network create NAME), or fix --network",
      cause: err,
    });
  }
  if (/port is already allocated|address already in use/i.test(why)) {
    return new McpmgrError("PORT_IN_USE", message, {
      hint: "choose another host port for -p, or stop what uses it",
      cause: err,
    });
  }
  if (/invalid mount|mount denied|bind source path|invalid volume/i.test(why)) {
    return new McpmgrError("INVALID_OPTION", message, {
      hint: "check the -v mounts and the permission profile's read/write paths",
      cause: err,
    });
  }
  return new McpmgrError("CONTAINER_FAILED", message, {
    hint: "check that the container engine is healthy (docker info)",
    cause: err,
  });
}

export function firstLine(err: unknown): string {
  // dockerode puts the engine's own message in `json`; it is shorter than the HTTP status line.
  const raw = (err as { json?: { message?: string } } | undefined)?.json?.message ?? errorMessage(err);
  return (
    raw
      .replace(/^\(HTTP code \d+\)\s*/, "")
      .split("\n")[0]
      ?.trim() ?? "unknown error"
  );
}
