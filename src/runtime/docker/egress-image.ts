/**
 * The image of the network-isolation helper (egress-proxy.ts). It must exist on hosts that
 * cannot pull, so on Linux it is built from what is already here: the Bun runtime this
 * mcpmgr runs on (the compiled binary or bun itself, made to act as plain Bun with
 * BUN_BE_BUN=1), its shared libraries, and the helper's source. Elsewhere (a macOS or
 * Windows host, whose binary cannot run in a Linux container) it is built from the
 * official Bun image, which the engine pulls once.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { McpmgrError } from "../../errors.ts";
import { buildFromContext, type ContextFile } from "./build-context.ts";
import { EGRESS_ENTRY, EGRESS_SOURCES } from "./egress-sources.ts";
import type { ContainerEngine } from "./engine.ts";
import { inspectLocalImage } from "./images.ts";
import { INSTALL_LABEL, MANAGED_LABEL, ROLE_LABEL } from "./labels.ts";
import { removeBuiltTags } from "./superseded-images.ts";

/** The helper's own files, at their paths under `/` in the image, and their text for the cache key. */
const sourceFiles: ContextFile[] = EGRESS_SOURCES.map(({ path, content }) => ({ path, content, mode: 0o644 }));
const source = EGRESS_SOURCES.map(({ path, content }) => `${path}\n${content}`).join("\n");
const HELPER_UID = 65534;
const copySources = EGRESS_SOURCES.map(({ path }) => `COPY ${path} /${path}`).join("\n");

/**
 * The executable this process runs. A supervisor outlives upgrades: once one moved, replaced or
 * removed the file at process.execPath, that path holds another version or nothing, and the
 * helper would be built from it (or not at all) at the next restart of an isolated server.
 * /proc/PID/exe still opens the file this process was started from, removed or not.
 */
function runningExecutable(): string {
  const own = `/proc/${process.pid}/exe`;
  return existsSync(own) ? own : process.execPath;
}

/** Shared libraries the runtime binary loads, as `ldd` lists them (absolute paths only). */
async function sharedLibraries(binary: string): Promise<string[]> {
  const ldd = Bun.spawnSync(["ldd", binary], { stdout: "pipe", stderr: "pipe" });
  if (ldd.exitCode !== 0) {
    // A static binary is fine; anything else means we cannot build offline.
    const text = ldd.stderr.toString() + ldd.stdout.toString();
    if (/not a dynamic executable|statically linked/.test(text)) return [];
    throw new McpmgrError("IMAGE_BUILD_FAILED", `cannot list the libraries of ${binary} for the network helper image`, {
      hint: "install ldd (libc-bin)",
    });
  }
  return [...ldd.stdout.toString().matchAll(/(\/[^\s)]+)/g)]
    .map((m) => m[1] as string)
    .filter((path, i, all) => all.indexOf(path) === i);
}

function engineMatchesHost(info: { OSType?: string; Architecture?: string }): boolean {
  // Docker reports the kernel's name (x86_64, aarch64), Podman Go's (amd64, arm64).
  const names: Record<string, string> = { x86_64: "x64", amd64: "x64", aarch64: "arm64", arm64: "arm64" };
  const arch = names[info.Architecture ?? ""] ?? info.Architecture;
  return process.platform === "linux" && info.OSType === "linux" && arch === process.arch;
}

/** The build context, read only when a build is needed (the runtime binary is ~100 MB), and the cache key. */
async function contextFiles(engine: ContainerEngine): Promise<{ files: () => ContextFile[]; key: string }> {
  const info = (await engine.docker.info()) as { OSType?: string; Architecture?: string };
  if (!engineMatchesHost(info)) {
    const dockerfile = `FROM oven/bun:1-alpine\n${copySources}\nUSER ${HELPER_UID}:${HELPER_UID}\nENTRYPOINT ["bun", "/${EGRESS_ENTRY}"]\n`;
    return {
      files: () => [{ path: "Dockerfile", content: dockerfile, mode: 0o644 }, ...sourceFiles],
      key: dockerfile + source,
    };
  }
  const runtime = runningExecutable();
  const libs = await sharedLibraries(runtime);
  const dockerfile = [
    "FROM scratch",
    ...libs.map((lib, i) => `COPY lib/${i} ${lib}`),
    "COPY runtime /runtime",
    copySources,
    "ENV BUN_BE_BUN=1 BUN_RUNTIME_TRANSPILER_CACHE_PATH=0",
    `USER ${HELPER_UID}:${HELPER_UID}`,
    `ENTRYPOINT ["/runtime", "/${EGRESS_ENTRY}"]`,
    "",
  ].join("\n");
  // The runtime by its file (not the path it is reached by, which names this process), the libraries by path.
  const executable = statSync(runtime);
  const identity = [
    `runtime:${executable.dev}:${executable.ino}:${executable.size}:${executable.mtimeMs}`,
    ...libs.map((path) => {
      const stat = statSync(path);
      return `${path}:${stat.size}:${stat.mtimeMs}`;
    }),
  ];
  return {
    key: `${dockerfile}${source}${identity.join("\n")}:${Bun.version}`,
    files: () => [
      { path: "Dockerfile", content: dockerfile, mode: 0o644 },
      ...sourceFiles,
      ...libs.map((lib, i) => ({ path: `lib/${i}`, content: readFileSync(lib), mode: 0o755 })),
      { path: "runtime", content: readFileSync(runtime), mode: 0o755 },
    ],
  };
}

const EGRESS_REPOSITORY = "mcpmgr-egress";
const EGRESS_ROLE = "egress-image";

/**
 * The helper image's tag, built on first use. Each installation (`install`, state/install-id.ts) has its own
 * tag, labelled with its id: the tag was shared by every home on the engine, and a home that built a newer one
 * removed the older one while another home, a supervisor still on the older version, was about to start a
 * helper from it. The images of two installations share their layers (the same files), so the cost is a build.
 * After a build, this installation's other helper images go (superseded-images.ts): not another installation's,
 * not those built before images carried the installation, and never one a container (running or stopped) uses.
 */
export async function ensureEgressImage(
  engine: ContainerEngine,
  install: string,
  onProgress: (line: string) => void,
): Promise<string> {
  return provideEgressImage(engine, await planEgressImage(engine, install), onProgress);
}

/** The helper image this process needs: its tag and how to build it. */
export interface EgressImagePlan {
  readonly tag: string;
  readonly install: string;
  readonly files: () => ContextFile[];
}

/**
 * Works out the tag (the engine's platform, the runtime's libraries) without looking for the image:
 * apart from `provideEgressImage`, so that a caller can do it outside the lock it holds around the
 * image's use (network-isolation.ts).
 */
export async function planEgressImage(engine: ContainerEngine, install: string): Promise<EgressImagePlan> {
  const { files, key } = await contextFiles(engine);
  const hash = createHash("sha256").update(`${key}\ninstall:${install}`).digest("hex").slice(0, 16);
  return { tag: `${EGRESS_REPOSITORY}:${hash}`, install, files };
}

/** The planned image's tag, found or built (then this installation's older helper images go). */
export async function provideEgressImage(
  engine: ContainerEngine,
  plan: EgressImagePlan,
  onProgress: (line: string) => void,
): Promise<string> {
  const { tag, install, files } = plan;
  if (await inspectLocalImage(engine, tag)) return tag;
  onProgress(`building the network isolation helper image ${tag}`);
  await buildFromContext(engine, {
    tag,
    files: files(),
    labels: { [MANAGED_LABEL]: "true", [ROLE_LABEL]: EGRESS_ROLE, [INSTALL_LABEL]: install },
    what: "the network isolation helper image",
    onLine: () => {},
  });
  // Each runtime or helper change makes a new image (it carries the ~100 MB runtime): the older ones go.
  await removeBuiltTags(engine, EGRESS_REPOSITORY, install, tag, EGRESS_ROLE);
  return tag;
}
