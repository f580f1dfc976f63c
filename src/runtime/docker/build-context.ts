/**
 * Building an image from files held in memory: a tar build context (tar-stream) sent to
 * the engine, its output followed line by line, failures turned into one error carrying
 * the build's last words.
 */
import { pack } from "tar-stream";
import { McpmgrError } from "../../errors.ts";
import type { ContainerEngine } from "./engine.ts";
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
  try {
    stream = await engine.docker.buildImage(context as unknown as NodeJS.ReadableStream, {
      t: request.tag,
      rm: true,
      forcerm: true,
      labels: { ...request.labels },
      ...(request.signal ? { abortSignal: request.signal } : {}),
    });
  } catch (err) {
    throw engineError(`building ${request.what}`, err);
  }
  const tail: string[] = [];
  await new Promise<void>((resolve, reject) => {
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
          request.onLine(line.trimEnd());
        }
      },
    );
  });
  if (!(await inspectLocalImage(engine, request.tag))) {
    throw new McpmgrError("IMAGE_BUILD_FAILED", `the build of ${request.what} ended without an image`, {
      hint: "run with --debug to see the build output",
    });
  }
}
