/**
 * Images for protocol-scheme packages, built locally and cached by content: the tag is a
 * hash of everything that goes into the build (generator version, package spec, base
 * images, extra packages, CA certificate, and for a local project every file's content),
 * so the same inputs never rebuild and any change does.
 */
import { createHash, X509Certificate } from "node:crypto";
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { imageRefPattern, specExamples } from "../../config/package-refs.ts";
import ignore from "ignore";
import { FileTooLarge, readCappedFile } from "../../bounded-file.ts";
import { McpmgrError } from "../../errors.ts";
import { LOCAL_IGNORE_FILE } from "../ignore-overlays.ts";
import type { ServerSource } from "../source.ts";
import { localPythonScript } from "../package-command.ts";
import {
  CA_CERT_FILE,
  defaultBaseImages,
  generateDockerfile,
  RESOLVE_BIN_FILE,
  resolveBinScript,
  type DockerfileInput,
} from "./dockerfile.ts";
import type { ContainerEngine } from "./engine.ts";
import { buildFromContext, type ContextFile } from "./build-context.ts";
import { inspectLocalImage } from "./images.ts";
import { INSTALL_LABEL, MANAGED_LABEL, ROLE_LABEL } from "./labels.ts";

/** Bump when the generated Dockerfile changes meaning, so old cached images are not reused. */
const GENERATOR_VERSION = 1;
/** Directories a local project never needs in its image (rebuilt or irrelevant). */
const skippedDirs = new Set([".git", "node_modules", ".venv", "__pycache__"]);
const packageNamePattern = /^[a-z0-9][a-z0-9+._-]*(?:=[A-Za-z0-9+.~:_-]+)?$/;

export interface BuildOptions {
  readonly runtimeImage?: string;
  readonly addPackages: readonly string[];
  /** Path of a PEM file. */
  readonly caCertPath?: string;
  /** Global ignore patterns (with the project's own .mcpmgrignore, they keep files out of the build). */
  readonly ignorePatterns?: readonly string[];
  /**
   * The installation building it (state/install-id.ts), as the image's `mcpmgr.install` label: only that
   * installation removes it once no workload of its runs it (workload/built-images.ts). Not in the tag.
   */
  readonly install?: string;
}

export interface BuiltImage {
  readonly tag: string;
  readonly cached: boolean;
}

type PackageSource = Extract<ServerSource, { kind: "package" }>;

export function validateAddPackages(names: readonly string[]): void {
  const bad = names.filter((name) => !packageNamePattern.test(name));
  if (bad.length > 0) {
    throw new McpmgrError(
      "INVALID_OPTION",
      `--runtime-add-package ${bad.map((b) => JSON.stringify(b)).join(", ")}: not a package name`,
      {
        hint: "give OS package names such as git or ca-certificates (optionally name=version)",
      },
    );
  }
}

/** The certificate file's text, after checking every PEM block in it parses. */
export function readCaCert(path: string): string {
  let text: string;
  try {
    text = readCappedFile(path);
  } catch (err) {
    const why = err instanceof FileTooLarge ? err.message : "cannot read the file";
    throw new McpmgrError("INVALID_OPTION", `--ca-cert ${JSON.stringify(path)}: ${why}`, {
      hint: "give the path of a PEM certificate file",
    });
  }
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0)
    throw new McpmgrError("INVALID_OPTION", `--ca-cert ${path}: no PEM certificate in the file`, {
      hint: "expected -----BEGIN CERTIFICATE----- blocks",
    });
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch {
      throw new McpmgrError("INVALID_OPTION", `--ca-cert ${path}: a certificate in the file does not parse`, {
        hint: "check the PEM file is not truncated or edited",
      });
    }
  }
  return `${blocks.join("\n")}\n`;
}

/**
 * A local project's files (no symlinks followed, skipped dirs left out), sorted for a stable
 * hash. Files the ignore patterns hide (the project's .mcpmgrignore and the global ones) stay
 * out of the image too: copied in, the server could read them.
 */
function projectFiles(root: string, globalPatterns: readonly string[]): ContextFile[] {
  const files: ContextFile[] = [];
  let local = "";
  try {
    local = readFileSync(join(root, LOCAL_IGNORE_FILE), "utf8");
  } catch {
    // no local patterns
  }
  const hidden = ignore()
    .add([...globalPatterns])
    .add(local);
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const full = join(dir, entry.name);
      const rel = relative(root, full).split(sep).join("/");
      if (hidden.ignores(entry.isDirectory() ? `${rel}/` : rel)) continue;
      if (entry.isDirectory()) {
        if (!skippedDirs.has(entry.name)) walk(full);
      } else if (entry.isFile()) {
        files.push({
          path: `package/${relative(root, full).split(sep).join("/")}`,
          content: readFileSync(full),
          mode: lstatSync(full).mode & 0o755,
        });
      }
    }
  };
  walk(root);
  return files;
}

export function dockerfileInput(source: PackageSource, options: BuildOptions): DockerfileInput {
  const defaults = defaultBaseImages[source.manager];
  const spec =
    source.manager === "go"
      ? `${source.name}@${source.version ?? "latest"}`
      : source.version
        ? `${source.name}${source.manager === "uvx" ? "==" : "@"}${source.version}`
        : source.name;
  return {
    manager: source.manager,
    spec,
    name: source.name,
    local: source.localPath !== undefined,
    ...(source.manager === "uvx" && source.localPath ? { localScript: localPythonScript(source.localPath) } : {}),
    builderImage: options.runtimeImage ?? defaults.builder,
    runtimeImage: options.runtimeImage ?? defaults.runtime,
    addPackages: options.addPackages,
    caCert: options.caCertPath !== undefined,
  };
}

/** The build context and the content-derived tag. */
export function prepareBuild(
  source: PackageSource,
  options: BuildOptions,
): { tag: string; files: ContextFile[]; dockerfile: string } {
  validateAddPackages(options.addPackages);
  if (options.runtimeImage !== undefined && !imageRefPattern.test(options.runtimeImage)) {
    throw new McpmgrError(
      "INVALID_OPTION",
      `--runtime-image ${JSON.stringify(options.runtimeImage)}: not an image reference`,
      { hint: `e.g. ${specExamples.image}` },
    );
  }
  const input = dockerfileInput(source, options);
  const dockerfile = generateDockerfile(input);
  const files: ContextFile[] = [
    { path: "Dockerfile", content: dockerfile, mode: 0o644 },
    { path: RESOLVE_BIN_FILE, content: resolveBinScript, mode: 0o644 },
  ];
  if (options.caCertPath) files.push({ path: CA_CERT_FILE, content: readCaCert(options.caCertPath), mode: 0o644 });
  if (source.localPath) files.push(...projectFiles(source.localPath, options.ignorePatterns ?? []));
  const hash = createHash("sha256").update(`mcpmgr-build-v${GENERATOR_VERSION}\n`);
  for (const file of files) hash.update(`${file.path}\0${file.mode}\0`).update(file.content).update("\0");
  return { tag: `${buildRepository(source)}:${hash.digest("hex").slice(0, 16)}`, files, dockerfile };
}

/**
 * The repository a package's images are built into, `mcpmgr-build/<scheme>-<name>`: its tags are the content
 * hashes, so each change of the package's inputs adds a tag there (workload/built-images.ts removes the ones
 * no workload runs any more).
 */
export function buildRepository(source: PackageSource): string {
  const base = (source.localPath ? source.localPath.split(/[\\/]/).pop() : source.name) ?? "package";
  // An image name component: lowercase alphanumerics joined by single separators.
  const slug =
    base
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .slice(0, 60)
      .replace(/^-+|-+$/g, "") || "package";
  return `mcpmgr-build/${source.manager}-${slug}`;
}

/**
 * Builds the package's image unless an image with the same content tag exists. The base
 * images are checked either way: the tag hashes the Dockerfile, which names them, so a
 * cached image was built from exactly these references — but maybe under a weaker
 * --image-verification than this run's, so a cache hit must not skip the check.
 */
export async function buildPackageImage(
  engine: ContainerEngine,
  source: PackageSource,
  options: BuildOptions,
  onProgress: (line: string) => void,
  /** Verifies the base images (pulling them only for a real build: `cached` says whether one is needed). */
  checkBases: (baseImages: readonly string[], cached: boolean) => Promise<void> = async () => {},
  /** Aborted: the build is cancelled. */
  signal?: AbortSignal,
  /**
   * Runs the look-up and build of one tag alone (a lock held by the caller): two builds of the same
   * content at once would each make an image (no layer cache), and the tag would move to the second,
   * leaving the first untagged. The second, let in after the first, finds the first's image instead.
   */
  exclusive: (tag: string, build: () => Promise<BuiltImage>) => Promise<BuiltImage> = (_tag, build) => build(),
): Promise<BuiltImage> {
  const { tag, files } = prepareBuild(source, options);
  return exclusive(tag, () => lookUpOrBuild(engine, source, options, { tag, files }, onProgress, checkBases, signal));
}

async function lookUpOrBuild(
  engine: ContainerEngine,
  source: PackageSource,
  options: BuildOptions,
  { tag, files }: { tag: string; files: ContextFile[] },
  onProgress: (line: string) => void,
  checkBases: (baseImages: readonly string[], cached: boolean) => Promise<void>,
  signal: AbortSignal | undefined,
): Promise<BuiltImage> {
  const input = dockerfileInput(source, options);
  const cached = (await inspectLocalImage(engine, tag)) !== undefined;
  await checkBases([...new Set([input.builderImage, input.runtimeImage])], cached);
  if (cached) return { tag, cached: true };
  signal?.throwIfAborted();
  const what = `the image for ${source.manager}://${source.localPath ?? source.name}`;
  onProgress(`building ${tag} (${what})`);
  await buildFromContext(engine, {
    tag,
    files,
    labels: {
      [MANAGED_LABEL]: "true",
      [ROLE_LABEL]: "build",
      ...(options.install ? { [INSTALL_LABEL]: options.install } : {}),
    },
    what,
    onLine: onProgress,
    ...(signal ? { signal } : {}),
  });
  return { tag, cached: false };
}
