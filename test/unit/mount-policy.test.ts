/**
 * What a mount the user did not spell out may show (review H1, H3): real directories, real
 * Unix sockets (a listening server), real symlinks. The registry rules refuse what lies in a
 * shared scratch tree and any directory holding a socket; the working directory gets the
 * same rules, except that it may hold mcpmgr's state (hidden under it, W3).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdir, mkdtemp, realpath, rm, symlink } from "node:fs/promises";
import { join } from "node:path";
import { sensitiveReason, workingDirReason } from "../../src/runtime/mount-policy.ts";
import { findSocket } from "../../src/runtime/socket-scan.ts";

let base: string;
let home: string;
let project: string;
let listener: ReturnType<typeof Bun.listen> | undefined;

beforeAll(async () => {
  // Not under /tmp: that whole tree is refused, which would hide what else is checked. The
  // repository's own scratch folder (.tmp/, ignored by git) stands for a project.
  await mkdir(join(import.meta.dir, "../../.tmp"), { recursive: true });
  base = await realpath(await mkdtemp(join(import.meta.dir, "../../.tmp/mount-policy-")));
  home = join(base, "home");
  project = join(base, "project");
  await mkdir(join(home, ".ssh"), { recursive: true });
  await mkdir(join(project, "src/deep/er"), { recursive: true });
  await mkdir(join(base, "with-socket/run/inner"), { recursive: true });
  await mkdir(join(base, "state/data"), { recursive: true });
  listener = Bun.listen({
    unix: join(base, "with-socket/run/inner/agent.sock"),
    socket: { data() {} },
  });
  await symlink("/run", join(project, "link-to-run"));
});

afterAll(async () => {
  listener?.stop(true);
  await rm(base, { recursive: true, force: true });
});

const context = () => ({ home, protectedDirs: [join(base, "state")] });

describe("registry mounts", () => {
  test("a directory inside /tmp, /var/tmp or /dev/shm is refused, not only the tree itself", async () => {
    const inTmp = await mkdtemp("/tmp/mcpmgr-policy-");
    try {
      expect(sensitiveReason(inTmp, context())).toContain("it lies in /tmp");
      expect(sensitiveReason("/tmp", context())).toContain("/tmp is shared by every program");
      expect(sensitiveReason("/dev/shm", context())).toContain("system directory /dev");
    } finally {
      await rm(inTmp, { recursive: true, force: true });
    }
  });

  test("a directory holding a socket anywhere below it is refused, naming the socket", () => {
    const socket = join(base, "with-socket/run/inner/agent.sock");
    expect(sensitiveReason(join(base, "with-socket"), context())).toBe(
      `it holds the socket ${socket} (a program answers there as you)`,
    );
    expect(sensitiveReason(socket, context())).toContain("it is a socket");
  });

  test("a plain project directory passes; symlinks in it are not followed (they resolve in the server's view)", () => {
    expect(sensitiveReason(project, context())).toBeUndefined();
  });

  test("the home directory, its credential stores and mcpmgr's state stay refused", () => {
    expect(sensitiveReason(home, context())).toContain("home directory");
    expect(sensitiveReason(join(home, ".ssh"), context())).toContain("credential store");
    expect(sensitiveReason(join(base, "state/data"), context())).toContain("mcpmgr's own state");
    expect(sensitiveReason(join(base, "state"), context())).toContain("is or lies in mcpmgr's own state");
    const stateInProject = { home, protectedDirs: [join(project, "src/deep")] };
    expect(sensitiveReason(project, stateInProject)).toContain("holds mcpmgr's own state");
  });
});

describe("the working directory", () => {
  test("/tmp, a directory in it, /run, /var/run, /etc and / are not shown", async () => {
    const inTmp = await mkdtemp("/tmp/mcpmgr-policy-");
    try {
      expect(workingDirReason("/tmp", context())).toContain("/tmp is shared");
      expect(workingDirReason(inTmp, context())).toContain("it lies in /tmp");
      expect(workingDirReason(await realpath("/var/run"), context())).toContain("system directory /run");
      expect(workingDirReason("/etc", context())).toContain("system directory /etc");
      expect(workingDirReason("/", context())).toContain("root");
    } finally {
      await rm(inTmp, { recursive: true, force: true });
    }
  });

  test("root's home: what lies in /root is a project like any other in a home directory", async () => {
    const rootHome = { home: "/root", protectedDirs: [] };
    expect(workingDirReason("/root", rootHome)).toContain("home directory");
    expect(workingDirReason("/root", context())).toContain("system directory /root");
  });

  test("the home directory, one holding it, a credential store and a directory holding a socket are not shown", () => {
    expect(workingDirReason(home, context())).toContain("home directory");
    expect(workingDirReason(base, context())).toContain("home directory");
    expect(workingDirReason(join(home, ".ssh"), context())).toContain("credential store");
    expect(workingDirReason(join(base, "with-socket"), context())).toContain("holds the socket");
  });

  test("a project directory is shown, also one holding mcpmgr's state (hidden under it); one inside that state is not", () => {
    expect(workingDirReason(project, context())).toBeUndefined();
    const besideHome = { home: join(base, "home"), protectedDirs: [join(project, "src/deep")] };
    expect(workingDirReason(project, besideHome)).toBeUndefined();
    expect(workingDirReason(join(project, "src/deep/er"), besideHome)).toContain("mcpmgr's own state");
  });
});

describe("the socket scan", () => {
  test("is bounded: past its budget it cannot say 'no socket', and says so", () => {
    expect(findSocket(project, { maxEntries: 2 })).toEqual({ kind: "too-big", maxEntries: 2 });
    expect(findSocket(project).kind).toBe("none");
  });

  test("does not descend into skipped directories (mcpmgr's own, hidden anyway)", () => {
    expect(findSocket(join(base, "with-socket"), { skip: [join(base, "with-socket/run")] }).kind).toBe("none");
  });
});
