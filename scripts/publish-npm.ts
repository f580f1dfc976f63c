/**
 * Publishes the tarballs `bun run pack` wrote to dist/npm/, the platform packages first and
 * `mcpmgr` last (so its optional dependencies exist the moment it does):
 *   bun scripts/publish-npm.ts [--dist DIR] [--provenance] [--dry-run] [--tag TAG]
 * A pre-release version (1.2.0-rc.1) goes to the dist-tag `next` unless --tag names another, so
 * `npm install -g mcpmgr` keeps installing the last stable release (npm would move `latest` to it;
 * npm 11 refuses a pre-release without a tag); a stable version older than the registry's `latest`
 * goes to `latest-MAJOR.MINOR`, a pre-release older than its `latest` or `next` to `next-MAJOR.MINOR`. `next` never stays behind `latest`: after a stable release, a
 * `next` older than npm's `latest` (the rc the release came from) is moved to `latest`, so
 * `npx mcpmgr@next` is never older than `npx mcpmgr`. A package whose version the registry already has is
 * skipped, so a release that failed half-way can be published again. Every tarball must be there, with the name and version
 * its file name says: a release never goes out with a platform missing.
 * The registry and the credentials are npm's own configuration (.npmrc, NODE_AUTH_TOKEN).
 */
import { join, resolve } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { releaseTargets } from "./lib/release-targets.ts";
import { isPrerelease, olderThan, precedes } from "./lib/versions.ts";

interface Options {
  readonly dist: string;
  readonly provenance: boolean;
  readonly dryRun: boolean;
  readonly tag?: string;
}

interface Outcome {
  readonly name: string;
  readonly action: "published" | "skipped";
}

async function npm(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn(["npm", ...args], {
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, npm_config_update_notifier: "false" },
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr };
}

function manifestOf(tarball: string): { name?: string; version?: string } {
  const tar = Bun.spawnSync(["tar", "-xzOf", tarball, "package/package.json"], { stdout: "pipe", stderr: "pipe" });
  if (!tar.success) throw new Error(`${tarball} is missing or not an npm tarball; run 'bun run pack' first`);
  return JSON.parse(tar.stdout.toString());
}

/** Whether the registry already has name@version (a 404 means no; any other failure stops the release). */
async function published(name: string, version: string): Promise<boolean> {
  const view = await npm(["view", `${name}@${version}`, "version", "--json"]);
  if (view.code === 0) return view.stdout.includes(`"${version}"`);
  if (/\bE404\b/.test(view.stdout + view.stderr)) return false;
  throw new Error(`npm view ${name}@${version} failed: ${(view.stderr || view.stdout).trim().split("\n")[0]}`);
}

/**
 * The dist-tag a version is published under when none is asked for, from the registry's tags:
 * undefined (npm's `latest`) for a stable release, `next` for a pre-release, and for a version
 * older than the registry's `latest` (a fix for an older line, 0.1.3 after 0.2.0, or its
 * 0.1.3-rc.1) `latest-MAJOR.MINOR` or `next-MAJOR.MINOR`: npm would otherwise move `latest`
 * back (npm 10) or refuse it half-way through the release (npm 11), and `next` would go
 * behind `latest`. A pre-release older than the registry's `next` (0.2.1-rc.1 while `next` is
 * 0.3.0-rc.1) goes to `next-MAJOR.MINOR` too: `next` does not go back either.
 */
export function distTagFor(version: string, tags: Readonly<Record<string, string>>): string | undefined {
  const prerelease = isPrerelease(version);
  const channel = prerelease ? "next" : "latest";
  // A stable release is compared with `latest` only: the `next` it leaves behind is moved after it (nextAfter).
  const newer = (prerelease ? (["latest", "next"] as const) : (["latest"] as const)).find((held) => {
    const other = tags[held];
    return other !== undefined && (prerelease ? precedes(version, other) : olderThan(version, other));
  });
  if (newer === undefined) return prerelease ? "next" : undefined;
  const [major, minor] = version.split(".");
  const tag = `${channel}-${major}.${minor}`;
  console.error(
    `npm's ${newer} is ${pkg.name}@${tags[newer]}, newer than ${version}: publishing under the dist-tag ${tag} instead`,
  );
  return tag;
}

/** The registry's dist-tags of `name` (none when it was never published: a 404). */
async function distTagsOf(name: string): Promise<Record<string, string>> {
  const view = await npm(["view", name, "dist-tags", "--json"]);
  if (view.code === 0) return view.stdout.trim() === "" ? {} : (JSON.parse(view.stdout) as Record<string, string>);
  if (/\bE404\b/.test(view.stdout + view.stderr)) return {};
  throw new Error(`npm view ${name} dist-tags failed: ${(view.stderr || view.stdout).trim().split("\n")[0]}`);
}

/**
 * Where `next` goes after a stable release: to the version npm's `latest` then names, when
 * `next` is older than it (it was on this release's rc, or on an rc of an older line); a
 * `next` ahead of `latest` (an rc of the coming version) stays. Undefined: leave it.
 */
export function nextAfter(tags: Readonly<Record<string, string>>, latest: string): string | undefined {
  const next = tags.next;
  return next !== undefined && precedes(next, latest) ? latest : undefined;
}

export async function publishAll(options: Options): Promise<Outcome[]> {
  const version = pkg.version;
  const names = [...releaseTargets.map((t) => t.npmPackage), pkg.name];
  const tarballs = names.map((name) => ({ name, path: join(options.dist, "npm", `${name}-${version}.tgz`) }));
  for (const { name, path } of tarballs) {
    const manifest = manifestOf(path);
    if (manifest.name !== name || manifest.version !== version) {
      throw new Error(`${path} holds ${manifest.name}@${manifest.version}, not ${name}@${version}`);
    }
  }
  // Asked after the tarballs are checked: an incomplete set is refused before the registry is.
  const tags = options.tag === undefined ? await distTagsOf(pkg.name) : {};
  const tag = options.tag ?? distTagFor(version, tags);
  const outcomes: Outcome[] = [];
  for (const { name, path } of tarballs) {
    if (await published(name, version)) {
      console.error(`${name}@${version} is already published: skipped`);
      outcomes.push({ name, action: "skipped" });
      continue;
    }
    const args = ["publish", path, "--access", "public"];
    if (options.provenance) args.push("--provenance");
    if (options.dryRun) args.push("--dry-run");
    if (tag) args.push("--tag", tag);
    const result = await npm(args);
    if (result.code !== 0) throw new Error(`npm ${args.join(" ")} failed:\n${result.stderr.trim()}`);
    const notes = [...(options.dryRun ? ["dry run"] : []), ...(tag ? [`dist-tag ${tag}`] : [])];
    console.error(`${name}@${version} published${notes.length > 0 ? ` (${notes.join(", ")})` : ""}`);
    outcomes.push({ name, action: "published" });
  }
  // After every package is there (a move that fails leaves the release published; a re-run moves it).
  if (options.tag === undefined && !isPrerelease(version))
    await moveNext(
      names,
      nextAfter(tags, tag === undefined ? version : (tags.latest as string)),
      tags.next,
      options.dryRun,
    );
  return outcomes;
}

async function moveNext(
  names: readonly string[],
  to: string | undefined,
  from: string | undefined,
  dryRun: boolean,
): Promise<void> {
  if (to === undefined) return;
  for (const name of names) {
    if (dryRun) {
      console.error(`${name}: dist-tag next would move from ${from} to ${to} (dry run)`);
      continue;
    }
    const args = ["dist-tag", "add", `${name}@${to}`, "next"];
    const result = await npm(args);
    if (result.code !== 0) throw new Error(`npm ${args.join(" ")} failed:\n${result.stderr.trim()}`);
    console.error(`${name}: dist-tag next moved from ${from} to ${to}`);
  }
}

function parseArgs(argv: readonly string[]): Options {
  let dist = resolve(import.meta.dir, "../dist");
  let provenance = false;
  let dryRun = false;
  let tag: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === "--provenance") provenance = true;
    else if (flag === "--dry-run") dryRun = true;
    else if (flag === "--dist" || flag === "--tag") {
      const value = argv[++i];
      if (value === undefined) throw new Error(`${flag} needs a value`);
      if (flag === "--dist") dist = resolve(value);
      else tag = value;
    } else throw new Error(`unknown argument ${JSON.stringify(flag)} (use --dist, --provenance, --dry-run, --tag)`);
  }
  return { dist, provenance, dryRun, ...(tag ? { tag } : {}) };
}

if (import.meta.main) {
  try {
    await publishAll(parseArgs(process.argv.slice(2)));
  } catch (err) {
    console.error(`publish-npm: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
}
