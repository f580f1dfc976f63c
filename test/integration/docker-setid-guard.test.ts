/**
 * The set-ID guard against this machine's Docker, whose daemon uses its compiled-in seccomp
 * profile (no file mcpmgr can extend): `mcpmgr run` starts the server behind the guard, which adds a
 * filter refusing set-ID modes, so the container's root (the host's root) cannot leave a set-user-ID
 * program in a writable volume, while the server runs as its image says and answers MCP
 * (docs/security.md W9).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, lstatSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fixtureImages, runInDocker, runInDockerFails, type FixtureImages } from "../support/docker-fixtures.ts";
import { freshIdVolume, idAsNobody } from "../support/setid-volume.ts";

setDefaultTimeout(60_000);

let images: FixtureImages;
/** The probe image with its entrypoint cleared: what runs is only `run`'s arguments, or the Cmd given. */
let bareImage: string;
let cmdImage: string;
/** The probe started by a script without "#!", which Docker's init (execvp) hands to /bin/sh. */
let scriptImage: string;

function build(tag: string, dockerfile: string): string {
  const dir = mkdtempSync(join(tmpdir(), "mcpmgr-guard-image-"));
  try {
    writeFileSync(join(dir, "Dockerfile"), dockerfile);
    const built = Bun.spawnSync(["docker", "build", "-q", "-t", tag, dir], { stderr: "pipe" });
    if (built.exitCode !== 0) throw new Error(`docker build ${tag}: ${built.stderr.toString()}`);
    return tag;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

beforeAll(async () => {
  images = await fixtureImages();
  const suffix = images.probe.split(":")[1];
  bareImage = build(`mcpmgr-test/guard-bare:${suffix}`, `FROM ${images.probe}\nENTRYPOINT []\nCMD []\n`);
  // A bare name in Cmd, found through the image's PATH (node is in /usr/bin of the base image).
  cmdImage = build(
    `mcpmgr-test/guard-cmd:${suffix}`,
    `FROM ${images.probe}\nENTRYPOINT []\nCMD ["node", "/app/probe.mjs"]\n`,
  );
  scriptImage = build(
    `mcpmgr-test/guard-script:${suffix}`,
    `FROM ${images.probe}\nRUN printf 'exec node /app/probe.mjs "$@"\\n' > /usr/local/bin/start-probe && chmod 755 /usr/local/bin/start-probe\nENTRYPOINT ["start-probe"]\nCMD []\n`,
  );
}, 300_000);

afterAll(() => {
  for (const tag of [bareImage, cmdImage, scriptImage])
    if (tag) Bun.spawnSync(["docker", "rmi", tag], { stderr: "pipe" });
});

const freshVolume = () => freshIdVolume("mcpmgr-guard-vol-");

test("Docker with its built-in profile: a server container's root cannot make set-ID files in a writable volume, and ordinary modes work", async () => {
  const dir = freshVolume();
  // The probe's entrypoint is `node /app/probe.mjs`: a bare name, found through PATH by the guard.
  const run = await runInDocker([images.probe, "--name", "docker-guard", "-v", `${dir}:/data`]);
  try {
    expect((await run.call("read_file", { path: "/proc/self/status" })).text).toMatch(/^Uid:\s+0\s/m);
    for (const mode of [0o4755, 0o2755, 0o6755])
      expect(`${mode.toString(8)}: ${(await run.call("chmod", { path: "/data/id", mode })).text}`).toBe(
        `${mode.toString(8)}: EPERM`,
      );
    expect((await run.call("create_file", { path: "/data/made", mode: 0o4755 })).text).toBe("EPERM");
    expect((await run.call("create_file", { path: "/data/made-g", mode: 0o2755 })).text).toBe("EPERM");
    expect((await run.call("make_dir", { path: "/data/shared", mode: 0o2775 })).text).toBe("EPERM");
    expect((await run.call("chmod", { path: "/data/id", mode: 0o700 })).text).toBe("changed");
    expect((await run.call("chmod", { path: "/data/id", mode: 0o755 })).text).toBe("changed");
    expect((await run.call("create_file", { path: "/data/plain", mode: 0o644 })).text).toBe("created");
    expect((await run.call("make_dir", { path: "/data/dir", mode: 0o755 })).text).toBe("made");
    expect((await run.call("write_file", { path: "/data/plain", text: "x" })).text).toBe("written");
    expect((await run.call("read_file", { path: "/data/plain" })).text).toBe("x");
    // The guard's filter is on the server (a second one on top of Docker's), with no_new_privs.
    const status = (await run.call("read_file", { path: "/proc/self/status" })).text;
    expect(status).toMatch(/^Seccomp_filters:\s+2$/m);
    expect(status).toMatch(/^NoNewPrivs:\s+1$/m);
    for (const name of ["id", "plain", "dir"])
      expect(`${name}: ${lstatSync(join(dir, name)).mode & 0o6000}`).toBe(`${name}: 0`);
    for (const name of ["made", "made-g", "shared"])
      expect(lstatSync(join(dir, name), { throwIfNoEntry: false })).toBeUndefined();
    // Protected: no warning.
    expect(run.output()).not.toContain("set-user-ID");
    const id = idAsNobody(dir);
    expect(id).toContain("uid=65534");
    expect(id).not.toContain("euid=0");
    await run.client.close();
  } finally {
    await run.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}, 300_000);

test("the guard runs the image's Cmd, or run's arguments, through PATH when the image has no entrypoint", async () => {
  const dir = freshVolume();
  try {
    for (const [name, args] of [
      ["docker-guard-cmd", [cmdImage]],
      ["docker-guard-args", [bareImage, "--", "node", "/app/probe.mjs"]],
    ] as const) {
      const [image, ...rest] = args;
      const run = await runInDocker([image, "--name", name, "-v", `${dir}:/data`, ...rest]);
      try {
        expect(`${name}: ${(await run.call("chmod", { path: "/data/id", mode: 0o4755 })).text}`).toBe(`${name}: EPERM`);
        expect(`${name}: ${(await run.call("chmod", { path: "/data/id", mode: 0o755 })).text}`).toBe(
          `${name}: changed`,
        );
        await run.client.close();
      } finally {
        await run.stop();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 300_000);

test('an entrypoint script without "#!" starts through /bin/sh as it did under Docker\'s init, behind the guard', async () => {
  const dir = freshVolume();
  const run = await runInDocker([scriptImage, "--name", "docker-guard-script", "-v", `${dir}:/data`]);
  try {
    expect((await run.call("chmod", { path: "/data/id", mode: 0o4755 })).text).toBe("EPERM");
    expect((await run.call("read_file", { path: "/proc/self/status" })).text).toMatch(/^Seccomp_filters:\s+2$/m);
    await run.client.close();
  } finally {
    await run.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}, 300_000);

test("a command found nowhere on PATH: the guard says so and the start fails", async () => {
  const run = await runInDockerFails([bareImage, "--name", "docker-guard-missing", "--", "no-such-server", "--stdio"]);
  expect(run.code).not.toBe(0);
  expect(run.err).toContain("no-such-server: executable file not found in PATH");
}, 120_000);

test("a volume where the guard is copied is refused before anything is made, and the host folder is left as it was", async () => {
  const dir = mkdtempSync(join(tmpdir(), "mcpmgr-guard-over-"));
  chmodSync(dir, 0o700);
  writeFileSync(join(dir, "notes"), "mine");
  try {
    // Without the refusal the engine copied the guard into the bound folder: root's, 0555.
    const run = await runInDockerFails(
      [images.probe, "--name", "docker-guard-over", "-v", `${dir}:/.mcpmgr-setid-guard/`],
      {},
      30_000,
    );
    expect(run.err).toContain(`the volume ${dir}:/.mcpmgr-setid-guard is where mcpmgr puts its set-ID guard`);
    expect(run.code).not.toBe(0);
    expect(lstatSync(dir).mode & 0o7777).toBe(0o700);
    expect(readdirSync(dir)).toEqual(["notes"]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);
