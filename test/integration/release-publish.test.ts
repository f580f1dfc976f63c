/**
 * The release workflow's publishing steps, run here for real except for the final upload:
 *   - scripts/publish-npm.ts against a local registry with `npm publish --dry-run`: order
 *     (platform packages before mcpmgr), skipping what the registry already has, refusing
 *     an incomplete set, a pre-release under the dist-tag `next`;
 *   - scripts/publish-package-managers.ts into clones of local bare repositories standing
 *     in for the tap and the bucket: the commit, the push, no empty commit on a re-run, and
 *     no files of another version.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { releaseTargets } from "../../scripts/lib/release-targets.ts";
import { type LocalRegistry, startLocalRegistry } from "../support/npm-registry.ts";
import { REPO_ROOT } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let work: string;

async function run(cmd: string[], env: Record<string, string | undefined> = {}, cwd = REPO_ROOT) {
  const proc = Bun.spawn(cmd, { cwd, env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr };
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "mcpmgr-release-publish-"));
});

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

describe("publish-npm", () => {
  let dist: string;
  let registry: LocalRegistry;
  let env: Record<string, string>;

  /** A small package under the name and version a release tarball has (the binaries are not what is tested here). */
  async function packStandIn(name: string, into: string, version = pkg.version): Promise<string> {
    const dir = join(work, "src", version, name);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "package.json"), JSON.stringify({ name, version, license: "Apache-2.0" }));
    await writeFile(join(dir, "README.md"), `${name}\n`);
    const packed = await run(["npm", "pack", "--pack-destination", into], env, dir);
    expect(packed.code).toBe(0);
    return join(into, `${name}-${version}.tgz`);
  }

  beforeAll(async () => {
    dist = join(work, "dist");
    await mkdir(join(dist, "npm"), { recursive: true });
    env = { npm_config_cache: join(work, "npm-cache"), npm_config_update_notifier: "false" };
    const names = [...releaseTargets.map((t) => t.npmPackage), pkg.name];
    const tarballs = [];
    for (const name of names) tarballs.push(await packStandIn(name, join(dist, "npm")));
    // The registry already has the first platform package (a release that failed half-way).
    registry = await startLocalRegistry([tarballs[0] as string]);
    env = { ...env, npm_config_registry: registry.url, npm_config__authToken: "unused-in-dry-run" };
  });

  afterAll(async () => {
    await registry?.stop();
  });

  test("publishes the platform packages first and mcpmgr last, skipping what is already there", async () => {
    const result = await run([process.execPath, "scripts/publish-npm.ts", "--dist", dist, "--dry-run"], env);
    expect(result.code).toBe(0);
    const lines = result.stderr.trim().split("\n");
    const [first, ...rest] = releaseTargets.map((t) => t.npmPackage);
    expect(lines).toEqual([
      `${first}@${pkg.version} is already published: skipped`,
      ...rest.map((name) => `${name}@${pkg.version} published (dry run)`),
      `${pkg.name}@${pkg.version} published (dry run)`,
    ]);
  }, 120_000);

  test("a pre-release goes to the dist-tag next, so npm's latest stays on the last stable release", async () => {
    // The script as the release runs it, beside a package.json of a pre-release version (a tag v…-rc.1).
    const version = `${pkg.version}-rc.1`;
    const repo = join(work, "prerelease-repo");
    await mkdir(join(repo, "scripts", "lib"), { recursive: true });
    await writeFile(join(repo, "package.json"), JSON.stringify({ ...pkg, version }));
    for (const file of ["scripts/publish-npm.ts", "scripts/lib/release-targets.ts", "scripts/lib/versions.ts"]) {
      await writeFile(join(repo, file), await Bun.file(join(REPO_ROOT, file)).text());
    }
    const prereleaseDist = join(work, "prerelease-dist");
    await mkdir(join(prereleaseDist, "npm"), { recursive: true });
    for (const name of [...releaseTargets.map((t) => t.npmPackage), pkg.name]) {
      await packStandIn(name, join(prereleaseDist, "npm"), version);
    }
    const result = await run(
      [process.execPath, join(repo, "scripts/publish-npm.ts"), "--dist", prereleaseDist, "--dry-run"],
      env,
    );
    // npm 11 refuses a pre-release without --tag; npm 10 would have moved latest to it.
    expect(result.stderr).not.toContain("You must specify a tag");
    expect(result.code).toBe(0);
    expect(result.stderr.trim().split("\n")).toEqual(
      [...releaseTargets.map((t) => t.npmPackage), pkg.name].map(
        (name) => `${name}@${version} published (dry run, dist-tag next)`,
      ),
    );
  }, 120_000);

  test("a pre-release older than the registry's latest or next (an rc for an older line) moves neither next back nor behind latest", async () => {
    // The registry has 9.0.0 (latest) and 9.1.0-rc.1 (next); this is an rc of a 0.x fix made afterwards.
    // Published under next, `npx mcpmgr@next` would be older than `npx mcpmgr`.
    const version = `${pkg.version}-rc.1`;
    const names = [...releaseTargets.map((t) => t.npmPackage), pkg.name];
    const repo = join(work, "older-rc-repo");
    await mkdir(join(repo, "scripts", "lib"), { recursive: true });
    await writeFile(join(repo, "package.json"), JSON.stringify({ ...pkg, version }));
    for (const file of ["scripts/publish-npm.ts", "scripts/lib/release-targets.ts", "scripts/lib/versions.ts"]) {
      await writeFile(join(repo, file), await Bun.file(join(REPO_ROOT, file)).text());
    }
    const rcDist = join(work, "older-rc-dist");
    await mkdir(join(rcDist, "npm"), { recursive: true });
    for (const name of names) await packStandIn(name, join(rcDist, "npm"), version);
    const newer = join(work, "newer-line-on-registry");
    await mkdir(newer, { recursive: true });
    const held = [];
    for (const name of names)
      held.push(await packStandIn(name, newer, "9.0.0"), await packStandIn(name, newer, "9.1.0-rc.1"));
    const distTags = Object.fromEntries(names.map((name) => [name, { latest: "9.0.0", next: "9.1.0-rc.1" }]));
    const ahead = await startLocalRegistry(held, { distTags });
    try {
      const [major, minor] = pkg.version.split(".");
      const result = await run(
        [process.execPath, join(repo, "scripts/publish-npm.ts"), "--dist", rcDist, "--dry-run"],
        { ...env, npm_config_registry: ahead.url },
      );
      expect(result.code).toBe(0);
      expect(result.stderr.trim().split("\n")).toEqual([
        `npm's latest is mcpmgr@9.0.0, newer than ${version}: publishing under the dist-tag next-${major}.${minor} instead`,
        ...names.map((name) => `${name}@${version} published (dry run, dist-tag next-${major}.${minor})`),
      ]);
    } finally {
      await ahead.stop();
    }
  }, 120_000);

  test("a release older than the registry's latest (a fix for an older line) does not move latest back", async () => {
    // The registry's latest is 9.0.0; this release is a 0.x fix made afterwards. npm would make it
    // `latest`, and every `npm install -g mcpmgr` and `npx mcpmgr` would go back to it.
    const newer = join(work, "newer-on-registry");
    await mkdir(newer, { recursive: true });
    const newerTarballs = [];
    for (const name of [...releaseTargets.map((t) => t.npmPackage), pkg.name]) {
      newerTarballs.push(await packStandIn(name, newer, "9.0.0"));
    }
    const ahead = await startLocalRegistry(newerTarballs);
    try {
      const [major, minor] = pkg.version.split(".");
      const result = await run([process.execPath, "scripts/publish-npm.ts", "--dist", dist, "--dry-run"], {
        ...env,
        npm_config_registry: ahead.url,
      });
      // npm 11 refuses such a publish without --tag (npm 10, which Node 22 ships, moves latest back).
      expect(result.stderr).not.toContain("You must specify a tag");
      expect(result.code).toBe(0);
      expect(result.stderr.trim().split("\n")).toEqual([
        `npm's latest is mcpmgr@9.0.0, newer than ${pkg.version}: publishing under the dist-tag latest-${major}.${minor} instead`,
        ...[...releaseTargets.map((t) => t.npmPackage), pkg.name].map(
          (name) => `${name}@${pkg.version} published (dry run, dist-tag latest-${major}.${minor})`,
        ),
      ]);
    } finally {
      await ahead.stop();
    }
  }, 120_000);

  test("a stable release moves next off the pre-release it came from, so npx mcpmgr@next is not older than latest", async () => {
    // The registry as a pre-release left it: 0.1.0-rc.1 published under next (and, the first
    // version of each name, latest too).
    const rc = `${pkg.version}-rc.1`;
    const names = [...releaseTargets.map((t) => t.npmPackage), pkg.name];
    const held = join(work, "rc-on-registry");
    await mkdir(held, { recursive: true });
    const rcTarballs = [];
    for (const name of names) rcTarballs.push(await packStandIn(name, held, rc));
    const distTags = Object.fromEntries(names.map((name) => [name, { latest: rc, next: rc }]));
    const before = await startLocalRegistry(rcTarballs, { distTags });
    try {
      const result = await run([process.execPath, "scripts/publish-npm.ts", "--dist", dist, "--dry-run"], {
        ...env,
        npm_config_registry: before.url,
      });
      expect(result.code).toBe(0);
      expect(result.stderr.trim().split("\n")).toEqual([
        ...names.map((name) => `${name}@${pkg.version} published (dry run)`),
        ...names.map((name) => `${name}: dist-tag next would move from ${rc} to ${pkg.version} (dry run)`),
      ]);
    } finally {
      await before.stop();
    }

    // For real, on a registry that has the release but whose next was left behind (the move
    // failed, or the release predates it): a re-run publishes nothing and moves next.
    const stable = [];
    for (const name of names) stable.push(join(dist, "npm", `${name}-${pkg.version}.tgz`));
    const behind = await startLocalRegistry([...rcTarballs, ...stable], {
      distTags: Object.fromEntries(names.map((name) => [name, { latest: pkg.version, next: rc }])),
    });
    try {
      const result = await run([process.execPath, "scripts/publish-npm.ts", "--dist", dist], {
        ...env,
        npm_config_registry: behind.url,
      });
      expect(result.code).toBe(0);
      expect(result.stderr.trim().split("\n")).toEqual([
        ...names.map((name) => `${name}@${pkg.version} is already published: skipped`),
        ...names.map((name) => `${name}: dist-tag next moved from ${rc} to ${pkg.version}`),
      ]);
      for (const name of names) expect(behind.distTags(name)).toEqual({ latest: pkg.version, next: pkg.version });
    } finally {
      await behind.stop();
    }
  }, 120_000);

  test("refuses to publish anything when a platform's tarball is missing", async () => {
    const partial = join(work, "partial");
    await mkdir(join(partial, "npm"), { recursive: true });
    await packStandIn(pkg.name, join(partial, "npm"));
    const asked = registry.requests.length;
    const result = await run([process.execPath, "scripts/publish-npm.ts", "--dist", partial, "--dry-run"], env);
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe(
      `publish-npm: ${join(partial, "npm", `${releaseTargets[0]?.npmPackage}-${pkg.version}.tgz`)} is missing or not an npm tarball; run 'bun run pack' first`,
    );
    // Refused before the registry was even asked about any package.
    expect(registry.requests.length).toBe(asked);
  }, 60_000);
});

describe("publish-package-managers", () => {
  const version = pkg.version;
  let dist: string;
  let remotes: { tap: string; bucket: string };
  let clones: { tap: string; bucket: string };

  function git(args: string[], cwd = work) {
    const result = Bun.spawnSync(["git", "-c", "user.name=t", "-c", "user.email=t@example.test", ...args], {
      cwd,
      stdout: "pipe",
      stderr: "pipe",
    });
    if (!result.success) throw new Error(`git ${args.join(" ")}: ${result.stderr.toString()}`);
    return result.stdout.toString().trim();
  }

  async function generate(forVersion: string) {
    const sums = releaseTargets.map((t, i) => `${String(i + 1).padStart(64, "0")}  ${t.file}`).join("\n");
    await writeFile(join(dist, "SHA256SUMS"), `${sums}\n`);
    const made = await run([
      process.execPath,
      "scripts/package-managers.ts",
      "--dist",
      dist,
      "--version",
      forVersion,
      "--base-url",
      `https://github.com/acme/mcpmgr/releases/download/v${forVersion}`,
    ]);
    expect(made.code).toBe(0);
  }

  function publish(forVersion = version) {
    return run([
      process.execPath,
      "scripts/publish-package-managers.ts",
      "--version",
      forVersion,
      "--dist",
      dist,
      "--tap",
      clones.tap,
      "--bucket",
      clones.bucket,
      "--push",
    ]);
  }

  beforeAll(async () => {
    dist = join(work, "pm-dist");
    await mkdir(dist, { recursive: true });
    remotes = { tap: join(work, "homebrew-mcpmgr.git"), bucket: join(work, "scoop-mcpmgr.git") };
    clones = { tap: join(work, "tap"), bucket: join(work, "bucket") };
    for (const which of ["tap", "bucket"] as const) {
      git(["init", "--quiet", "--bare", "--initial-branch=main", remotes[which]]);
      // A repository with history, as a real tap has.
      const seed = join(work, `seed-${which}`);
      git(["init", "--quiet", "--initial-branch=main", seed]);
      await writeFile(join(seed, "README.md"), `${which}\n`);
      git(["add", "README.md"], seed);
      git(["commit", "--quiet", "-m", "start"], seed);
      git(["push", "--quiet", remotes[which], "main"], seed);
      git(["clone", "--quiet", remotes[which], clones[which]]);
    }
  });

  test("commits the formula and the manifest where brew and scoop look, and pushes them", async () => {
    await generate(version);
    const result = await publish();
    expect(result.stderr).toBe(
      `tap: committed mcpmgr ${version}, pushed\nbucket: committed mcpmgr ${version}, pushed\n`,
    );
    expect(result.code).toBe(0);
    expect(git(["--git-dir", remotes.tap, "log", "-1", "--format=%s"])).toBe(`mcpmgr ${version}`);
    expect(git(["--git-dir", remotes.tap, "show", "HEAD:Formula/mcpmgr.rb"])).toBe(
      (await Bun.file(join(dist, "homebrew/mcpmgr.rb")).text()).trim(),
    );
    expect(JSON.parse(git(["--git-dir", remotes.bucket, "show", "HEAD:bucket/mcpmgr.json"])).version).toBe(version);
  }, 60_000);

  test("running it again makes no empty commit", async () => {
    const before = git(["--git-dir", remotes.tap, "rev-parse", "HEAD"]);
    const result = await publish();
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("tap: already up to date, pushed\nbucket: already up to date, pushed\n");
    expect(git(["--git-dir", remotes.tap, "rev-parse", "HEAD"])).toBe(before);
  }, 60_000);

  test("refuses files generated for another version", async () => {
    await generate("9.9.9");
    const before = git(["--git-dir", remotes.bucket, "rev-parse", "HEAD"]);
    const result = await publish();
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe(
      `publish-package-managers: ${join(dist, "homebrew/mcpmgr.rb")} is for version 9.9.9, not ${version}; run scripts/package-managers.ts`,
    );
    expect(git(["--git-dir", remotes.bucket, "rev-parse", "HEAD"])).toBe(before);
  }, 60_000);

  test("a release older than the tap's and the bucket's (a fix for an older line) leaves them on the newer one", async () => {
    // The tap and the bucket have `version` (the test above); 0.0.1 is a fix for an older line made after it.
    await generate("0.0.1");
    const before = {
      tap: git(["--git-dir", remotes.tap, "rev-parse", "HEAD"]),
      bucket: git(["--git-dir", remotes.bucket, "rev-parse", "HEAD"]),
    };
    const result = await publish("0.0.1");
    expect(result.code).toBe(0);
    expect(result.stderr).toBe(
      `tap: has mcpmgr ${version}, newer than 0.0.1: left as it is\nbucket: has mcpmgr ${version}, newer than 0.0.1: left as it is\n`,
    );
    expect(git(["--git-dir", remotes.tap, "rev-parse", "HEAD"])).toBe(before.tap);
    expect(git(["--git-dir", remotes.bucket, "rev-parse", "HEAD"])).toBe(before.bucket);
  }, 60_000);
});
