/**
 * `bun run pack`: the npm packages of a release, as tarballs in dist/npm/, from the binaries
 * `bun run compile --all` wrote (each checked against dist/SHA256SUMS first):
 *   mcpmgr-<os>-<arch>-<version>.tgz   one per release target: the executable, with "os" and
 *                                      "cpu" so npm installs only the one that fits
 *   mcpmgr-<version>.tgz               the `mcpmgr` package: a JavaScript launcher as its bin
 *                                      (packaging/npm/launcher.cjs, for Node and Bun) and every
 *                                      platform package as an optional dependency
 * The pattern esbuild and Biome use: no install scripts, no download at install time.
 *
 * Options: --dist DIR (default dist/), --only ID[,ID] (platform packages to pack; the
 * `mcpmgr` package always lists them all), --repository URL (package.json "repository",
 * which npm's provenance check compares with the repository that built it).
 */
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { readChecksums, verifiedDigest } from "./lib/checksums.ts";
import { type ReleaseTarget, releaseTargets, targetById } from "./lib/release-targets.ts";

const root = resolve(import.meta.dir, "..");

interface Options {
  readonly dist: string;
  readonly targets: readonly ReleaseTarget[];
  readonly repository?: string;
}

function common(repository: string | undefined): Record<string, unknown> {
  return {
    version: pkg.version,
    license: pkg.license,
    ...(repository ? { repository: { type: "git", url: `git+${repository.replace(/\/+$/, "")}.git` } } : {}),
  };
}

export function platformManifest(target: ReleaseTarget, repository?: string): Record<string, unknown> {
  return {
    name: target.npmPackage,
    description: `The mcpmgr executable for ${target.id} (install the 'mcpmgr' package, which picks it)`,
    ...common(repository),
    os: [target.os],
    cpu: [target.cpu],
    // A package manager that reads "libc" skips the Linux package of the other C library; one
    // that does not installs both, and the launcher picks.
    ...(target.libc ? { libc: [target.libc] } : {}),
    files: [target.npmBinary],
    preferUnplugged: true,
  };
}

export function launcherManifest(repository?: string): Record<string, unknown> {
  return {
    name: pkg.name,
    description: pkg.description,
    ...common(repository),
    bin: { mcpmgr: "bin/mcpmgr.cjs" },
    files: ["bin/mcpmgr.cjs", "README.md"],
    engines: { node: ">=18" },
    optionalDependencies: Object.fromEntries(releaseTargets.map((t) => [t.npmPackage, pkg.version])),
  };
}

/** Runs `npm pack` in `dir`; returns the tarball's path. */
async function npmPack(dir: string, destination: string): Promise<string> {
  const npm = Bun.spawnSync(["npm", "pack", "--json", "--pack-destination", destination], {
    cwd: dir,
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, npm_config_update_notifier: "false", npm_config_fund: "false" },
  });
  if (!npm.success) throw new Error(`npm pack in ${dir} failed: ${npm.stderr.toString().trim()}`);
  const [result] = JSON.parse(npm.stdout.toString()) as { filename: string }[];
  if (result === undefined) throw new Error(`npm pack in ${dir} reported no tarball`);
  return join(destination, result.filename);
}

async function writeJson(path: string, value: unknown): Promise<void> {
  await writeFile(path, `${JSON.stringify(value, null, 2)}\n`);
}

export async function pack(options: Options): Promise<string[]> {
  const out = join(options.dist, "npm");
  await mkdir(out, { recursive: true });
  const sums = await readChecksums(options.dist);
  // Every binary is checked before anything is packed: a stale one must not ship.
  for (const target of options.targets) await verifiedDigest(options.dist, sums, target.file);

  const stage = await mkdtemp(join(out, ".stage-"));
  const tarballs: string[] = [];
  try {
    for (const target of options.targets) {
      const dir = join(stage, target.npmPackage);
      await mkdir(join(dir, "bin"), { recursive: true });
      const binary = join(dir, target.npmBinary);
      await copyFile(join(options.dist, target.file), binary);
      await chmod(binary, 0o755);
      await writeJson(join(dir, "package.json"), platformManifest(target, options.repository));
      tarballs.push(await npmPack(dir, out));
    }
    const dir = join(stage, pkg.name);
    await mkdir(join(dir, "bin"), { recursive: true });
    await copyFile(join(root, "packaging/npm/launcher.cjs"), join(dir, "bin/mcpmgr.cjs"));
    await chmod(join(dir, "bin/mcpmgr.cjs"), 0o755);
    await writeFile(join(dir, "README.md"), await readFile(join(root, "README.md")));
    await writeJson(join(dir, "package.json"), launcherManifest(options.repository));
    tarballs.push(await npmPack(dir, out));
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
  return tarballs;
}

function parseOptions(argv: readonly string[]): Options {
  let dist = join(root, "dist");
  let targets: readonly ReleaseTarget[] = releaseTargets;
  let repository: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[++i];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === "--dist") dist = resolve(value);
    else if (flag === "--only") targets = value.split(",").map(targetById);
    else if (flag === "--repository") {
      if (!/^https:\/\/\S+$/.test(value)) throw new Error(`--repository ${value}: must be an https:// URL`);
      repository = value;
    } else throw new Error(`unknown argument ${JSON.stringify(flag)} (use --dist, --only, --repository)`);
  }
  return { dist, targets, ...(repository ? { repository } : {}) };
}

if (import.meta.main) {
  try {
    for (const tarball of await pack(parseOptions(process.argv.slice(2)))) console.error(`packed ${tarball}`);
  } catch (err) {
    console.error(`pack: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
}
