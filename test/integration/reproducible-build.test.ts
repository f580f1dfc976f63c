/**
 * Two builds of one commit are byte-identical, wherever the checkout is (anyone can rebuild a
 * release binary and compare it with SHA256SUMS), and the executable does not depend on the
 * build machine's files. Real builds (`bun scripts/compile.ts`, one target: a compile takes
 * seconds) of two copies of this checkout in two folders of different depth, each its own git
 * repository with the same commit (same tree, author, dates), SOURCE_DATE_EPOCH set as the
 * release workflow sets it.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "../support/processes.ts";

setDefaultTimeout(60_000);

let work: string;

async function sh(cmd: string[], cwd: string, env: Record<string, string> = {}): Promise<string> {
  const proc = Bun.spawn(cmd, { cwd, env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  if (code !== 0) throw new Error(`${cmd.join(" ")} in ${cwd} failed (${code}): ${stderr.trim()}`);
  return stdout;
}

/** This checkout's files (committed or not, ignored ones left out) and node_modules, as a repository of its own at `dir`. */
async function copyCheckout(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  const files = (await sh(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], REPO_ROOT))
    .split("\0")
    .filter(Boolean);
  for (const file of files) {
    const from = Bun.file(join(REPO_ROOT, file));
    if (await from.exists()) await Bun.write(join(dir, file), from);
  }
  // Hard links: a folder of its own (Bun sees this path), without copying 300 MB.
  await sh(["cp", "-al", join(REPO_ROOT, "node_modules"), join(dir, "node_modules")], REPO_ROOT);
  const at = { GIT_AUTHOR_DATE: "@1700000000 +0000", GIT_COMMITTER_DATE: "@1700000000 +0000" };
  await sh(["git", "init", "-q"], dir);
  await sh(["git", "add", "-A"], dir);
  await sh(
    ["git", "-c", "user.name=build", "-c", "user.email=build@example.invalid", "commit", "-qm", "build"],
    dir,
    at,
  );
}

/** The release workflow's SOURCE_DATE_EPOCH: the commit's time. */
async function commitTime(dir: string): Promise<string> {
  return (await sh(["git", "log", "-1", "--format=%ct"], dir)).trim();
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "mcpmgr-reproducible-"));
});

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

test("two builds of one commit in two folders are byte-identical and name neither folder", async () => {
  const checkouts = [join(work, "a"), join(work, "deeper", "checkout-b")];
  const sums: string[] = [];
  for (const dir of checkouts) {
    await copyCheckout(dir);
    const epoch = await commitTime(dir);
    expect(epoch).toBe("1700000000");
    await sh([process.execPath, "scripts/compile.ts", "--target", "linux-x64", "--outdir", join(dir, "out")], dir, {
      SOURCE_DATE_EPOCH: epoch,
    });
    sums.push(await readFile(join(dir, "out", "SHA256SUMS"), "utf8"));
    const binary = await readFile(join(dir, "out", "mcpmgr-linux-x64"));
    expect(binary.includes(Buffer.from(dir))).toBe(false);
  }
  expect(sums[1]).toBe(sums[0] as string);
}, 180_000);

test("Cedar (--authz-config) works in an executable whose build folder is gone", async () => {
  // cedar-wasm read its .wasm from the build machine's node_modules: ENOENT everywhere else.
  const dir = join(work, "gone");
  await copyCheckout(dir);
  const binary = join(work, "mcpmgr");
  await sh([process.execPath, "scripts/compile.ts", "--target", "linux-x64", "--outdir", join(work, "out")], dir);
  await sh(["mv", join(work, "out", "mcpmgr-linux-x64"), binary], work);
  await rm(dir, { recursive: true, force: true });
  const policy = join(work, "authz.json");
  await writeFile(
    policy,
    JSON.stringify({
      version: "1.0",
      type: "cedarv1",
      cedar: { policies: ["permit(principal, action, resource);"], entities_json: "[]" },
    }),
  );
  const home = join(work, "home");
  await mkdir(home, { recursive: true });
  // The policy is read and handed to Cedar before the server is looked for; a server that
  // does not exist ends the run right after.
  const proc = Bun.spawn([binary, "run", "--authz-config", policy, "--name", "cedar-check", "npx:///nonexistent"], {
    cwd: work,
    env: { ...process.env, HOME: home, MCPMGR_HOME: join(home, "mcpmgr") },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  await proc.exited;
  expect(stdout + stderr).not.toContain("cedar_wasm_bg.wasm");
  expect(stdout + stderr).toContain("/nonexistent");
}, 180_000);
