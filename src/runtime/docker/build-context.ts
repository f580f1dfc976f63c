/**
 * Building an image from files held in memory: a tar build context (tar-stream) sent to
 * the engine, its output followed line by line, failures turned into one error carrying
 * the build's last words.
 *
 * mcpmgr builds an image only when its content tag is missing: the first time, or after the
 * user removed the tag to refresh an unpinned package. The engine's layer cache could only
 * hand back what that removal meant to refresh (the old `npm install` layer), so builds run
 * without it; and the builder stage of a multi-stage build, which the classic builder keeps
 * as an untagged image, is removed after the build instead of being left behind for good, as are
 * the step images of a build that fails or is cancelled (build-leftovers.ts).
 */
import { pack } from "tar-stream";
import { McpmgrError } from "../../errors.ts";
import type { ContainerEngine } from "./engine.ts";
import { removeBuildLeftovers, removeStageImages } from "./build-leftovers.ts";
import { engineError, firstLine, inspectLocalImage } from "./images.ts";

export interface ContextFile {
  readonly path: string;
  readonly content: Uint8Array | string;
  readonly mode: number;
}

export interface BuildRequest {
  readonly tag: string;
  readonly files: readonly ContextFile[];
  readonly labels: Readonly<Record<string, string>>;
  /** What is being built, for messages ("the image for npx://pkg"). */
  readonly what: string;
  readonly onLine: (line: string) => void;
  /** Aborted: the build request is closed, which makes the engine cancel the build. */
  readonly signal?: AbortSignal;
}

export async function buildFromContext(engine: ContainerEngine, request: BuildRequest): Promise<void> {
  const context = pack();
  // mtime 0: the same files give the same context, whatever their dates on disk.
  for (const file of request.files)
    context.entry(
      { name: file.path, mode: file.mode, mtime: new Date(0) },
      typeof file.content === "string" ? file.content : Buffer.from(file.content),
    );
  context.finalize();
  let stream: NodeJS.ReadableStream;
  const startedAt = Date.now();
  try {
    stream = await engine.docker.buildImage(context as unknown as NodeJS.ReadableStream, {
      t: request.tag,
      rm: true,
      forcerm: true,
      nocache: true,
      labels: { ...request.labels },
      ...(request.signal ? { abortSignal: request.signal } : {}),
    });
  } catch (err) {
    throw engineError(`building ${request.what}`, err);
  }
  const tail: string[] = [];
  const stages = new StageImages();
  const built = new Promise<void>((resolve, reject) => {
    // A closed request does not always end the progress stream with an error: the abort does.
    request.signal?.addEventListener("abort", () => reject(request.signal?.reason), { once: true });
    const failed = (why: string) =>
      new McpmgrError("IMAGE_BUILD_FAILED", `building ${request.what} failed: ${why}`, {
        hint:
          tail.length > 0
            ? `last build output: ${tail.slice(-3).join(" | ")}`
            : "check the base image, package names and the engine's network access",
      });
    engine.docker.modem.followProgress(
      stream,
      (err: Error | null) => (err ? reject(failed(firstLine(err))) : resolve()),
      (event: { stream?: string; status?: string; error?: string; errorDetail?: { message?: string } }) => {
        if (event.error || event.errorDetail)
          return reject(failed(event.errorDetail?.message ?? event.error ?? "unknown error"));
        for (const line of (event.stream ?? event.status ?? "").split("\n")) {
          if (line.trim() === "") continue;
          tail.push(line.trim());
          if (tail.length > 20) tail.shift();
          stages.see(line.trim());
          request.onLine(line.trimEnd());
        }
      },
    );
  });
  try {
    await built;
  } catch (err) {
    // A failed or cancelled build leaves the images of the steps it finished, untagged, for good.
    // A cancelled one is still running its step in the engine until the engine sees the request closed.
    await removeBuildLeftovers(
      engine,
      stages.unfinished(),
      startedAt,
      request.signal?.aborted ? stages.runningContainer() : undefined,
    );
    throw err;
  }
  if (!(await inspectLocalImage(engine, request.tag))) {
    throw new McpmgrError("IMAGE_BUILD_FAILED", `the build of ${request.what} ended without an image`, {
      hint: "run with --debug to see the build output",
    });
  }
  await removeStageImages(engine, stages.ids());
}

/**
 * The images that ended the earlier stages of a build, read from its output: the last
 * `---> ID` before each later `Step N/M : FROM` line (Podman: `--> ID`, `[S/T] STEP 1/M: FROM`).
 * A base image a FROM step names is never one of them.
 */
export class StageImages {
  private last: string | undefined;
  private running: string | undefined;
  private afterFrom = false;
  private readonly bases = new Set<string>();
  private readonly found = new Set<string>();

  see(line: string): void {
    // Docker numbers steps across the file; Podman restarts them per stage, which it names.
    const from = /^(?:\[(\d+)\/\d+\] )?step (\d+)\/\d+ ?: ?from /i.exec(line);
    if (from) {
      if (Number(from[1] ?? from[2]) > 1 && this.last !== undefined) this.found.add(this.last);
      this.afterFrom = true;
      return;
    }
    // Podman prints no ID for a FROM step: the first one after it ends the next step.
    if (/^(?:\[\d+\/\d+\] )?step \d+\/\d+ ?:/i.test(line)) this.afterFrom = false;
    // Docker runs a step in a container it names, removed when the step ends (forcerm).
    const container = /^-{3}> Running in ([0-9a-f]{12,64})$/.exec(line)?.[1];
    if (container !== undefined) this.running = container;
    const id = /^-{2,3}> ([0-9a-f]{11,64})$/.exec(line)?.[1];
    if (id === undefined) return;
    if (this.afterFrom) this.bases.add(id);
    this.afterFrom = false;
    this.last = id;
  }

  ids(): string[] {
    return [...this.found].filter((id) => ![...this.bases].some((base) => sameId(base, id)));
  }

  /** The container of the step the build ran last (Docker; Podman names none). */
  runningContainer(): string | undefined {
    return this.running;
  }

  /** After a failed build: the earlier stages' images and the last one it made. */
  unfinished(): string[] {
    const last = this.last;
    if (last === undefined || [...this.bases].some((base) => sameId(base, last))) return this.ids();
    return [...new Set([...this.ids(), last])];
  }
}

function sameId(a: string, b: string): boolean {
  return a.startsWith(b) || b.startsWith(a);
}
