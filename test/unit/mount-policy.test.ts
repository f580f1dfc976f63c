/**
 * What a mount the user did not spell out may show (review H1, H3): real directories, real
 * Unix sockets (a listening server), real symlinks. The registry rules refuse what lies in a
 * shared scratch tree and any directory holding a socket; the working directory is hidden
 * by the same rules about where it lies (it may hold mcpmgr's state, hidden under it, W3),
 * while the sockets in it, found in /proc/net/unix, are covered and its size does not matter.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmod, mkdir, mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { McpmgrError } from "../../src/errors.ts";
import { type HostContext, sensitiveReason, workingDirView } from "../../src/runtime/mount-policy.ts";
import { findSocket, socketsBelow } from "../../src/runtime/socket-scan.ts";

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

/** Why the working directory is hidden; undefined when it is shown. */
function workingDirReason(path: string, ctx: HostContext): string | undefined {
  const view = workingDirView(path, ctx);
  return view.shown ? undefined : view.reason;
}

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

  test("the home directory, one holding it and a credential store are not shown", () => {
    expect(workingDirReason(home, context())).toContain("home directory");
    expect(workingDirReason(base, context())).toContain("home directory");
    expect(workingDirReason(join(home, ".ssh"), context())).toContain("credential store");
  });

  test("a directory holding a listening socket is shown, with the socket named to be covered", () => {
    expect(workingDirView(join(base, "with-socket"), context())).toEqual({
      shown: true,
      path: join(base, "with-socket"),
      realPath: join(base, "with-socket"),
      sockets: [join(base, "with-socket/run/inner/agent.sock")],
    });
  });

  test("a tree too big to walk or with an unreadable directory is shown: the sockets come from /proc/net/unix", async () => {
    const big = join(base, "big-project");
    await mkdir(join(big, "data/postgres"), { recursive: true });
    await mkdir(join(big, "node_modules"), { recursive: true });
    await Promise.all(Array.from({ length: 60 }, (_, i) => writeFile(join(big, "node_modules", `f${i}`), "")));
    await chmod(join(big, "data/postgres"), 0o000);
    try {
      // The walk alone would give up here (budget 2); the view does not walk where /proc/net/unix is there.
      expect(findSocket(big, { maxEntries: 2 }).kind).toBe("too-big");
      expect(workingDirView(big, context())).toMatchObject({ shown: true, sockets: [] });
    } finally {
      await chmod(join(big, "data/postgres"), 0o755);
    }
  });

  test("a working directory that no longer exists is a clear error, not a raw ENOENT", () => {
    try {
      workingDirView(join(base, "gone"), context());
      throw new Error("expected an error");
    } catch (err) {
      expect(err).toBeInstanceOf(McpmgrError);
      expect((err as McpmgrError).message).toBe(`working directory ${join(base, "gone")} does not exist`);
    }
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

  test("socketsBelow reads /proc/net/unix: only bound sockets below the directory that are sockets there now", async () => {
    const socket = join(base, "with-socket/run/inner/agent.sock");
    const list = join(base, "unix-list");
    await writeFile(join(project, "not-a-socket"), "");
    await writeFile(
      list,
      [
        "Num       RefCount Protocol Flags    Type St Inode Path",
        `0000000000000000: 00000002 00000000 00010000 0001 01 11 ${socket}`,
        `0000000000000000: 00000002 00000000 00010000 0001 01 12 ${join(project, "not-a-socket")}`,
        "0000000000000000: 00000002 00000000 00010000 0001 01 13 @abstract",
        "0000000000000000: 00000003 00000000 00000000 0001 03 14",
        `0000000000000000: 00000002 00000000 00010000 0001 01 15 ${join(project, "gone.sock")}`,
      ].join("\n"),
    );
    expect(socketsBelow(base, { procNetUnix: list })).toEqual([socket]);
    expect(socketsBelow(project, { procNetUnix: list })).toEqual([]);
    expect(socketsBelow(base, { procNetUnix: list, skip: [join(base, "with-socket/run")] })).toEqual([]);
    // Without the list, a walk finds it (and gives up quietly past its budget).
    expect(socketsBelow(base, { procNetUnix: join(base, "no-such-list") })).toEqual([socket]);
    expect(socketsBelow(base, { procNetUnix: join(base, "no-such-list"), maxEntries: 1 })).toEqual([]);
  });

  test("does not descend into skipped directories (mcpmgr's own, hidden anyway)", () => {
    expect(findSocket(join(base, "with-socket"), { skip: [join(base, "with-socket/run")] }).kind).toBe("none");
  });
});
