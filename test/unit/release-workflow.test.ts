/**
 * .github/workflows/release.yml cannot run here; what it calls can (and is tested on its
 * own). This keeps the two in step: every script it runs exists, the steps come in an order
 * that never publishes a package pointing at assets not yet released, provenance covers
 * every release asset, the job has the permissions signing and releasing need, and a
 * pre-release reaches only the channels that have one.
 */
import { beforeAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { releaseTargets } from "../../scripts/lib/release-targets.ts";
import { REPO_ROOT } from "../support/processes.ts";

interface Step {
  name?: string;
  uses?: string;
  run?: string;
  with?: Record<string, string>;
}

let workflow: {
  on: { push: { tags: string[] } };
  jobs: Record<string, { permissions: Record<string, string>; steps: Step[] }>;
};
let steps: Step[];

beforeAll(async () => {
  workflow = Bun.YAML.parse(await Bun.file(join(REPO_ROOT, ".github/workflows/release.yml")).text()) as typeof workflow;
  steps = workflow.jobs.release?.steps ?? [];
});

/** Index of the first step whose `run` or `uses` matches. */
function stepIndex(pattern: RegExp): number {
  const index = steps.findIndex((s) => pattern.test(s.run ?? "") || pattern.test(s.uses ?? ""));
  if (index === -1) throw new Error(`no step matches ${pattern}`);
  return index;
}

test("it runs on version tags only", () => {
  expect(workflow.on.push.tags).toEqual(["v[0-9]+.[0-9]+.[0-9]+*"]);
  expect(Object.keys(workflow.on)).toEqual(["push"]);
});

test("the job may write releases, sign with an OIDC token and store attestations, nothing more", () => {
  expect(workflow.jobs.release?.permissions).toEqual({
    contents: "write",
    "id-token": "write",
    attestations: "write",
  });
});

test("every script it calls exists", () => {
  const runs = steps.map((s) => s.run ?? "").join("\n");
  const files = [...runs.matchAll(/\bbun (scripts\/[\w-]+\.ts)/g)].map((m) => m[1] as string);
  const scripts = [...runs.matchAll(/\bbun run ([\w-]+)/g)].map((m) => m[1] as string);
  expect(files.length).toBeGreaterThan(3);
  for (const file of files) expect(existsSync(join(REPO_ROOT, file))).toBe(true);
  for (const script of scripts) expect(Object.keys(pkg.scripts)).toContain(script);
  expect(existsSync(join(REPO_ROOT, ".ci/run"))).toBe(true);
});

test("tests, then build, gate, provenance; nothing is published before the GitHub release has the binaries", () => {
  const order = [
    stepIndex(/\.ci\/run/),
    stepIndex(/bun run compile --all/),
    stepIndex(/scripts\/verify-release\.ts --tag "\$TAG"\)/),
    stepIndex(/actions\/attest-build-provenance/),
    stepIndex(/bun run pack/),
    stepIndex(/scripts\/package-managers\.ts/),
    stepIndex(/gh release create/),
    stepIndex(/scripts\/publish-npm\.ts --provenance/),
    stepIndex(/scripts\/publish-package-managers\.ts .*--push/),
  ];
  expect(order).toEqual([...order].sort((a, b) => a - b));
});

test("provenance is attested for every binary and SHA256SUMS", () => {
  const attest = steps[stepIndex(/actions\/attest-build-provenance/)] as Step;
  const globs = (attest.with?.["subject-path"] ?? "")
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean)
    .map((pattern) => new Bun.Glob(pattern));
  for (const file of [...releaseTargets.map((t) => t.file), "SHA256SUMS"]) {
    expect(globs.some((glob) => glob.match(`dist/${file}`))).toBe(true);
  }
});

/**
 * The "Check the tag" step's own lines after the version is known, run by bash with `version` set,
 * in a git repository holding `tags` (GIT_DIR): the step outputs, in order.
 */
async function checkStepOutputs(version: string, tags: readonly string[]): Promise<string[]> {
  const check = steps[stepIndex(/scripts\/verify-release\.ts --tag "\$TAG"\)/)] as Step;
  const [, ...rest] = (check.run ?? "").trim().split("\n");
  const dir = mkdtempSync(join(tmpdir(), "mcpmgr-release-step-"));
  try {
    const repo = join(dir, "repo");
    const git = { ...process.env, GIT_DIR: join(repo, ".git") };
    await Bun.$`git init -q ${repo}`.quiet();
    const who = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"];
    await Bun.$`git ${who} commit -q --allow-empty -m one`.env(git).quiet();
    for (const tag of tags) await Bun.$`git tag ${tag}`.env(git).quiet();
    const file = join(dir, "output");
    await Bun.$`bash -euo pipefail -c ${rest.join("\n")}`.env({ ...git, version, GITHUB_OUTPUT: file }).quiet();
    return (await Bun.file(file).text()).trim().split("\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test("a fix for an older line (0.1.3 after 0.2.0) does not become GitHub's Latest release; a newer one does", async () => {
  const tags = ["v0.1.2", "v0.2.0", "v0.3.0-rc.1"];
  expect((await checkStepOutputs("0.1.3", tags)).at(-1)).toBe("latest=false");
  expect((await checkStepOutputs("0.2.1", tags)).at(-1)).toBe("latest=true");
  expect((await checkStepOutputs("0.2.0", tags)).at(-1)).toBe("latest=true"); // a re-run of the newest
  expect((await checkStepOutputs("0.3.0-rc.2", tags)).at(-1)).toBe("latest=false");

  // The command line the release step builds, run by bash with the step outputs put in and
  // `gh` (GitHub cannot be reached from a test) and the asset listing standing in as functions.
  const release = steps[stepIndex(/gh release create/)] as Step;
  const ghArgs = async (outputs: Record<string, string>) => {
    const dir = mkdtempSync(join(tmpdir(), "mcpmgr-release-gh-"));
    try {
      const script = (release.run ?? "").replace(
        /\$\{\{ steps\.release\.outputs\.(\w+) \}\}/g,
        (_, name: string) => outputs[name] ?? "",
      );
      const stand = `gh() { printf '%s\\n' "$@" > ${join(dir, "args")}; }\nbun() { printf '%s\\n' dist/mcpmgr-linux-x64 dist/SHA256SUMS; }\n`;
      await Bun.$`bash -euo pipefail -c ${stand + script}`.env({ ...process.env, TAG: `v${outputs.version}` }).quiet();
      return (await Bun.file(join(dir, "args")).text()).trim().split("\n");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  const older = await ghArgs({ version: "0.1.3", prerelease: "false", latest: "false" });
  expect(older.slice(0, 4)).toEqual(["release", "create", "v0.1.3", "--verify-tag"]);
  expect(older).toContain("--latest=false");
  expect(older).not.toContain("--prerelease");
  expect(older.slice(-2)).toEqual(["dist/mcpmgr-linux-x64", "dist/SHA256SUMS"]);
  expect(await ghArgs({ version: "0.2.1", prerelease: "false", latest: "true" })).toContain("--latest=true");
  const rc = await ghArgs({ version: "0.3.0-rc.2", prerelease: "true", latest: "false" });
  expect(rc).toContain("--prerelease");
  expect(rc).toContain("--latest=false");
});

test("a re-run finds its GitHub release made and goes on to npm and the tap (gh release create would fail: already_exists)", async () => {
  // A release whose npm publish or tap push failed is re-run whole; GitHub refuses a second
  // release of a tag (422 already_exists), which ended every re-run before npm was reached.
  // `gh` stands in as a function: `release view` answers as GitHub would for a published
  // release, a leftover draft or none, and every call is recorded.
  const release = steps[stepIndex(/gh release create/)] as Step;
  const calls = async (existing: "published" | "draft" | "none") => {
    const dir = mkdtempSync(join(tmpdir(), "mcpmgr-release-rerun-"));
    try {
      const script = (release.run ?? "").replace(/\$\{\{ steps\.release\.outputs\.(\w+) \}\}/g, (_, name: string) =>
        name === "latest" ? "true" : name === "prerelease" ? "false" : "0.2.0",
      );
      const log = join(dir, "calls");
      const stand = [
        `gh() { echo "$*" >> ${log}; if [ "$1 $2" = "release view" ]; then`,
        `  case "${existing}" in published) echo false ;; draft) echo true ;; *) echo "release not found" >&2; return 1 ;; esac; fi; }`,
        "bun() { printf '%s\\n' dist/mcpmgr-linux-x64 dist/SHA256SUMS; }",
        "",
      ].join("\n");
      await Bun.$`bash -euo pipefail -c ${stand + script}`.env({ ...process.env, TAG: "v0.2.0" }).quiet();
      return (await Bun.file(log).text()).trim().split("\n");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  const made = await calls("published");
  expect(made.some((call) => call.startsWith("release create"))).toBe(false);
  for (const existing of ["none", "draft"] as const) {
    expect((await calls(existing)).at(-1)).toStartWith("release create v0.2.0 --verify-tag");
  }
});

test("the release is built with SOURCE_DATE_EPOCH set to the commit's time (reproducible builds)", () => {
  const build = steps[stepIndex(/bun run compile --all/)] as Step;
  const lines = (build.run ?? "").trim().split("\n");
  const epoch = lines.indexOf('export SOURCE_DATE_EPOCH="$(git log -1 --format=%ct)"');
  expect(epoch).toBeGreaterThan(-1);
  expect(epoch).toBeLessThan(lines.indexOf("bun run compile --all"));
});

test("a pre-release tag is a GitHub pre-release and stays out of Homebrew and scoop (npm: publish-npm's dist-tag next)", async () => {
  const check = steps[stepIndex(/scripts\/verify-release\.ts --tag "\$TAG"\)/)] as Step & { id?: string };
  expect(check.id).toBe("release");
  // The step's own lines after the version is known, run for a stable and a pre-release version.
  const [first] = (check.run ?? "").trim().split("\n");
  expect(first).toBe('version="$(bun scripts/verify-release.ts --tag "$TAG")"');
  expect(await checkStepOutputs("1.2.0", [])).toEqual(["version=1.2.0", "prerelease=false", "latest=true"]);
  expect(await checkStepOutputs("1.2.0-rc.1", [])).toEqual(["version=1.2.0-rc.1", "prerelease=true", "latest=false"]);

  // The workflow's `${{ … }}` expressions and shell `${…}` as template literals with the `$` escaped: in plain
  // strings they look like mistaken JavaScript templates to the linter.
  const release = steps[stepIndex(/gh release create/)] as Step;
  expect(release.run).toContain(
    `if [ "\${{ steps.release.outputs.prerelease }}" = true ]; then prerelease=(--prerelease); fi`,
  );
  expect(release.run).toContain(`"\${prerelease[@]}"`);
  const stable = steps.filter(
    (s) =>
      /publish-package-managers\.ts/.test(s.run ?? "") ||
      s.with?.repository === `\${{ env.TAP }}` ||
      s.with?.repository === `\${{ env.BUCKET }}`,
  ) as (Step & { if?: string })[];
  expect(stable).toHaveLength(3);
  for (const step of stable) expect(step.if).toBe("steps.release.outputs.prerelease != 'true'");
});
