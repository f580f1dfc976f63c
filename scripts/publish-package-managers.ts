/**
 * Puts the formula and the manifest scripts/package-managers.ts wrote into checkouts of the
 * Homebrew tap and the scoop bucket, commits them, and (with --push) pushes:
 *   bun scripts/publish-package-managers.ts --version 0.2.0 --tap ./tap --bucket ./bucket [--dist DIR] [--push]
 * The formula goes to Formula/mcpmgr.rb, the manifest to bucket/mcpmgr.json (the layouts
 * `brew tap` and `scoop bucket add` expect). Files for another version are refused; a
 * checkout that already has these files gets no empty commit. Pushing uses the checkout's own
 * credentials (the workflow checks the repositories out with a token that may write to them).
 */
import { copyFile, mkdir, readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { olderThan } from "./lib/versions.ts";

interface Options {
  readonly version: string;
  readonly dist: string;
  readonly tap: string;
  readonly bucket: string;
  readonly push: boolean;
}

/** Commit identity when the checkout has none configured (as on a CI runner): GitHub's Actions bot. */
const BOT = [
  "-c",
  "user.name=github-actions[bot]",
  "-c",
  "user.email=41898282+github-actions[bot]@users.noreply.github.com",
];

function git(repo: string, args: string[]): string {
  const hasIdentity = Bun.spawnSync(["git", "-C", repo, "config", "user.email"], { stdout: "pipe" }).success;
  const run = Bun.spawnSync(["git", ...(hasIdentity ? [] : BOT), "-C", repo, ...args], {
    stdout: "pipe",
    stderr: "pipe",
  });
  if (!run.success) throw new Error(`git ${args.join(" ")} in ${repo} failed: ${run.stderr.toString().trim()}`);
  return run.stdout.toString();
}

async function checkVersions(options: Options, formula: string, manifest: string): Promise<void> {
  const formulaVersion = /^\s*version "([^"]+)"$/m.exec(await readFile(formula, "utf8"))?.[1];
  const manifestVersion = (JSON.parse(await readFile(manifest, "utf8")) as { version?: string }).version;
  for (const [file, found] of [
    [formula, formulaVersion],
    [manifest, manifestVersion],
  ] as const) {
    if (found !== options.version) {
      throw new Error(
        `${file} is for version ${found ?? "(none)"}, not ${options.version}; run scripts/package-managers.ts`,
      );
    }
  }
}

/** The version of the formula or manifest a checkout already has, if any. */
async function versionIn(file: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch {
    return undefined;
  }
  if (file.endsWith(".json")) return (JSON.parse(text) as { version?: string }).version;
  return /^\s*version "([^"]+)"$/m.exec(text)?.[1];
}

/** Copies `from` to `repo/path`, commits it; returns whether there was anything to commit. */
async function update(repo: string, from: string, path: string, message: string, push: boolean): Promise<boolean> {
  git(repo, ["rev-parse", "--git-dir"]); // a clear error when `repo` is not a checkout
  await mkdir(join(repo, path, ".."), { recursive: true });
  await copyFile(from, join(repo, path));
  git(repo, ["add", "--", path]);
  const changed = !Bun.spawnSync(["git", "-C", repo, "diff", "--cached", "--quiet"]).success;
  if (changed) git(repo, ["commit", "--quiet", "-m", message]);
  if (push) git(repo, ["push", "--quiet", "origin", "HEAD"]);
  return changed;
}

export async function publishPackageManagers(options: Options): Promise<{ tap: boolean; bucket: boolean }> {
  const formula = join(options.dist, "homebrew", "mcpmgr.rb");
  const manifest = join(options.dist, "scoop", "mcpmgr.json");
  await checkVersions(options, formula, manifest);
  const message = `mcpmgr ${options.version}`;
  const changed = { tap: false, bucket: false };
  for (const [what, repo, from, path] of [
    ["tap", options.tap, formula, "Formula/mcpmgr.rb"],
    ["bucket", options.bucket, manifest, "bucket/mcpmgr.json"],
  ] as const) {
    // Homebrew and scoop have one channel: a fix for an older line (0.1.3 after 0.2.0) must not
    // take every `brew upgrade` and `scoop update` back to it.
    const has = await versionIn(join(repo, path));
    if (has !== undefined && olderThan(options.version, has)) {
      console.error(`${what}: has mcpmgr ${has}, newer than ${options.version}: left as it is`);
      continue;
    }
    changed[what] = await update(repo, from, path, message, options.push);
    console.error(
      `${what}: ${changed[what] ? `committed ${message}` : "already up to date"}${options.push ? ", pushed" : ""}`,
    );
  }
  return changed;
}

function parseArgs(argv: readonly string[]): Options {
  const values: Record<string, string> = {};
  let push = false;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i] as string;
    if (flag === "--push") {
      push = true;
      continue;
    }
    const value = argv[++i];
    if (!["--version", "--dist", "--tap", "--bucket"].includes(flag) || value === undefined) {
      throw new Error(
        `unknown or incomplete argument ${JSON.stringify(flag)} (use --version, --tap, --bucket, --dist, --push)`,
      );
    }
    values[flag.slice(2)] = value;
  }
  const { version, tap, bucket } = values;
  if (!version || !tap || !bucket) {
    throw new Error("usage: publish-package-managers.ts --version X.Y.Z --tap DIR --bucket DIR [--dist DIR] [--push]");
  }
  return {
    version,
    tap: resolve(tap),
    bucket: resolve(bucket),
    dist: resolve(values.dist ?? join(import.meta.dir, "../dist")),
    push,
  };
}

if (import.meta.main) {
  try {
    await publishPackageManagers(parseArgs(process.argv.slice(2)));
  } catch (err) {
    console.error(`publish-package-managers: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
}
