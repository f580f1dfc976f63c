/**
 * Whether a GitHub release becomes the repository's "Latest" (what releases/latest/download/…,
 * the download path docs/install.md gives, serves):
 *   bun scripts/github-latest.ts --version 0.1.3     → prints true or false
 * GitHub makes every new release "Latest" unless told otherwise, so a fix for an older line
 * (0.1.3 after 0.2.0) would take the newer line's place. A release is "Latest" when it is
 * stable and no stable version tagged in this repository (git tag v*) is newer; the
 * workflow passes the answer to `gh release create --latest=…`. The tags are this
 * checkout's (the workflow checks out with every tag); GIT_DIR names another repository.
 */
import { isPrerelease, olderThan } from "./lib/versions.ts";

/** The decision, from the version being released and the repository's tags. */
export function makesLatest(version: string, tags: readonly string[]): boolean {
  if (isPrerelease(version)) return false;
  const released = tags
    .map((tag) => /^v(\d+\.\d+\.\d+)$/.exec(tag.trim())?.[1])
    .filter((v): v is string => v !== undefined);
  return !released.some((other) => olderThan(version, other));
}

function tagsHere(): string[] {
  const git = Bun.spawnSync(["git", "tag", "--list", "v*"], { stdout: "pipe", stderr: "pipe" });
  if (!git.success) throw new Error(`git tag --list failed: ${git.stderr.toString().trim()}`);
  return git.stdout.toString().split("\n").filter(Boolean);
}

if (import.meta.main) {
  const [flag, version] = process.argv.slice(2);
  if (flag !== "--version" || version === undefined || !/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(version)) {
    console.error("usage: github-latest.ts --version X.Y.Z[-PRE]");
    process.exit(1);
  }
  try {
    console.log(makesLatest(version, tagsHere()) ? "true" : "false");
  } catch (err) {
    console.error(`github-latest: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
}
