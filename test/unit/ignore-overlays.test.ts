/** Ignore overlays over real temporary directory trees. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import {
  describeOverlays,
  emptyOverlayFile,
  loadGlobalIgnorePatterns,
  readLocalIgnoreFile,
  resolveOverlays,
  type Overlay,
} from "../../src/runtime/ignore-overlays.ts";
import { rejection } from "../support/errors.ts";

const posixOnly = process.platform === "win32" ? test.skip : test;
let root: string;
let counter = 0;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "mcpmgr-ignore-overlays-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A fresh directory holding `files` (relative path → content; a trailing "/" makes an empty folder). */
async function tree(files: Record<string, string>): Promise<string> {
  const dir = join(root, `t${counter++}`);
  await mkdir(dir, { recursive: true });
  for (const [rel, content] of Object.entries(files)) {
    const path = join(dir, rel);
    if (rel.endsWith("/")) {
      await mkdir(path, { recursive: true });
    } else {
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, content);
    }
  }
  return dir;
}

async function overlays(
  files: Record<string, string>,
  globalPatterns: string[] = [],
  maxEntries?: number,
): Promise<Overlay[]> {
  const hostPath = await tree(files);
  return resolveOverlays([{ hostPath, containerPath: "/data" }], {
    globalPatterns,
    ...(maxEntries === undefined ? {} : { maxEntries }),
  });
}

const summary = (list: readonly Overlay[]) => list.map((o) => `${o.kind} ${o.containerPath}`);

describe("resolveOverlays", () => {
  test("hides matching files and directories", async () => {
    const list = await overlays({
      ".mcpmgrignore": "# secrets\n\n.env\nsecrets\n",
      ".env": "A=1",
      "secrets/key.pem": "k",
      "src/a.ts": "",
    });
    expect(summary(list)).toEqual(["file /data/.env", "dir /data/secrets"]);
  });

  test("no patterns hides nothing, and .mcpmgrignore itself stays visible", async () => {
    expect(await overlays({ "a.txt": "", "b/c.txt": "" })).toEqual([]);
    expect(await overlays({ ".mcpmgrignore": "# nothing\n", "a.txt": "" })).toEqual([]);
  });

  test(".mcpmgrignore is hidden when a pattern names it", async () => {
    const list = await overlays({ ".mcpmgrignore": ".mcpmgrignore\n", "a.txt": "" });
    expect(summary(list)).toEqual(["file /data/.mcpmgrignore"]);
  });

  test("negation keeps a file visible", async () => {
    const list = await overlays({ ".mcpmgrignore": "*.key\n!public.key\n", "private.key": "", "public.key": "" });
    expect(summary(list)).toEqual(["file /data/private.key"]);
  });

  test("a trailing slash matches directories only", async () => {
    const list = await overlays({ ".mcpmgrignore": "build/\n", "build/out.js": "", "sub/build": "a file" });
    expect(summary(list)).toEqual(["dir /data/build"]);
  });

  test("** matches at any depth", async () => {
    const list = await overlays({
      ".mcpmgrignore": "**/creds/*.json\n",
      "creds/a.json": "",
      "x/y/creds/b.json": "",
      "x/y/creds/c.txt": "",
    });
    expect(summary(list)).toEqual(["file /data/creds/a.json", "file /data/x/y/creds/b.json"]);
  });

  test("global and local patterns combine, each overlay naming its source", async () => {
    const hostPath = await tree({ ".mcpmgrignore": "local.txt\n", "local.txt": "", "global.txt": "", "keep.txt": "" });
    const list = await resolveOverlays([{ hostPath, containerPath: "/data" }], {
      globalPatterns: ["global.txt"],
      globalSource: "/cfg/mcpmgrignore",
    });
    expect(list.map((o) => [o.containerPath, o.pattern, o.source])).toEqual([
      ["/data/global.txt", "global.txt", "/cfg/mcpmgrignore"],
      ["/data/local.txt", "local.txt", join(hostPath, ".mcpmgrignore")],
    ]);
  });

  test("a local negation can unhide what a global pattern hides", async () => {
    const list = await overlays({ ".mcpmgrignore": "!.env.example\n", ".env": "", ".env.example": "" }, [".env*"]);
    expect(summary(list)).toEqual(["file /data/.env"]);
  });

  test("a hidden directory is not descended into", async () => {
    const list = await overlays({
      ".mcpmgrignore": "private/\n*.pem\n",
      "private/inner.pem": "",
      "private/deep/x.pem": "",
      "top.pem": "",
    });
    expect(summary(list)).toEqual(["dir /data/private", "file /data/top.pem"]);
  });

  test("container paths map from the mount, host paths stay absolute, results sorted", async () => {
    const a = await tree({ ".mcpmgrignore": "*.secret\n", "z.secret": "", "d/a.secret": "" });
    const b = await tree({ "b.secret": "" });
    const list = await resolveOverlays(
      [
        { hostPath: a, containerPath: "/work/project/" },
        { hostPath: b, containerPath: "/other" },
      ],
      { globalPatterns: ["b.secret"] },
    );
    expect(list.map((o) => [o.containerPath, o.hostPath])).toEqual([
      ["/other/b.secret", join(b, "b.secret")],
      ["/work/project/d/a.secret", join(a, "d", "a.secret")],
      ["/work/project/z.secret", join(a, "z.secret")],
    ]);
  });

  test("a single-file mount is checked against the global patterns only; duplicates are merged", async () => {
    const dir = await tree({ ".mcpmgrignore": "config.json\n", "config.json": "{}", ".env": "" });
    const mounts = [
      { hostPath: join(dir, "config.json"), containerPath: "/etc/app/config.json" },
      { hostPath: join(dir, ".env"), containerPath: "/app/.env" },
      { hostPath: join(dir, ".env"), containerPath: "/app/.env" },
    ];
    const list = await resolveOverlays(mounts, { globalPatterns: [".env"] });
    expect(summary(list)).toEqual(["file /app/.env"]);
  });

  test("a missing mount source hides nothing", async () => {
    expect(
      await resolveOverlays([{ hostPath: join(root, "absent"), containerPath: "/x" }], { globalPatterns: ["*"] }),
    ).toEqual([]);
  });

  posixOnly("symlinks are not followed; a matching one is hidden as what it points to", async () => {
    const outside = await tree({ "secret.txt": "s" });
    const dir = await tree({ ".mcpmgrignore": "linked-dir\nlinked-file\n" });
    await symlink(outside, join(dir, "linked-dir"));
    await symlink(join(outside, "secret.txt"), join(dir, "linked-file"));
    await symlink(outside, join(dir, "visible-link"));
    const list = await resolveOverlays([{ hostPath: dir, containerPath: "/d" }], { globalPatterns: ["secret.txt"] });
    // visible-link/secret.txt is not listed: the walk does not follow the link into `outside`.
    expect(summary(list)).toEqual(["dir /d/linked-dir", "file /d/linked-file"]);
  });

  test("past maxEntries it throws INVALID_OPTION instead of leaving the rest visible", async () => {
    const files: Record<string, string> = { ".mcpmgrignore": "*.x\n" };
    for (let i = 0; i < 20; i++) files[`d/f${i}.txt`] = "";
    const err = await rejection(overlays(files, [], 10), "INVALID_OPTION");
    expect(err.hint).toBeDefined();
    // Hiding the big folder whole keeps the walk under the cap.
    expect(summary(await overlays({ ...files, ".mcpmgrignore": "d/\n" }, [], 10))).toEqual(["dir /data/d"]);
  });

  test("a mount with no pattern at all is not walked (no cap to reach, nothing could match)", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 20; i++) files[`d/f${i}.txt`] = "";
    // Walking it would pass the cap of 10 and throw; without a pattern there is nothing to walk for.
    expect(await overlays(files, [], 10)).toEqual([]);
    expect(await overlays({ ...files, ".mcpmgrignore": "# none yet\n\n   \n" }, ["# a comment"], 10)).toEqual([]);
    // One pattern, global or local, and the walk (and its cap) is back.
    await rejection(overlays(files, ["*.x"], 10), "INVALID_OPTION");
    await rejection(overlays({ ...files, ".mcpmgrignore": "*.x\n" }, [], 10), "INVALID_OPTION");
  });

  // Linux only: other systems' file systems refuse names that are not UTF-8.
  (process.platform === "linux" ? test : test.skip)(
    "a name that is not UTF-8 stops the walk instead of leaving what is in or behind it visible",
    async () => {
      const hostPath = await tree({ ".env": "" });
      const odd = Buffer.concat([Buffer.from(`${hostPath}/`), Buffer.from([0xff])]);
      await mkdir(odd);
      await writeFile(Buffer.concat([odd, Buffer.from("/.env")]), "API_KEY=1");
      const walk = () => resolveOverlays([{ hostPath, containerPath: "/data" }], { globalPatterns: ["*.env"] });
      // Read as "\uFFFD", the directory could not be opened: it was skipped, its .env left visible.
      const err = await rejection(walk(), "UNSAFE_MOUNT");
      expect(err.message).toContain("not valid UTF-8");
      // A matching file of such a name: an overlay at the U+FFFD path would not cover it.
      await rm(odd, { recursive: true });
      await writeFile(Buffer.concat([Buffer.from(`${hostPath}/a`), Buffer.from([0xfe]), Buffer.from(".env")]), "");
      await rejection(walk(), "UNSAFE_MOUNT");
      // Such a file that no pattern matches is left alone; a real U+FFFD in a name is hidden as usual.
      await writeFile(join(hostPath, "b\uFFFD.env"), "");
      expect(
        summary(await resolveOverlays([{ hostPath, containerPath: "/data" }], { globalPatterns: ["b*"] })),
      ).toEqual(["file /data/b\uFFFD.env"]);
    },
  );
});

describe("describeOverlays", () => {
  test("one line per overlay", () => {
    const lines = describeOverlays([
      {
        kind: "file",
        containerPath: "/data/.env",
        hostPath: "/home/u/proj/.env",
        pattern: ".env",
        source: "/home/u/proj/.mcpmgrignore",
      },
      {
        kind: "dir",
        containerPath: "/data/secrets",
        hostPath: "/home/u/proj/secrets",
        pattern: "secrets/",
        source: "/cfg/mcpmgrignore",
      },
    ]);
    expect(lines).toEqual([
      "/data/.env (file) hidden by .env in /home/u/proj/.mcpmgrignore",
      "/data/secrets (dir) hidden by secrets/ in /cfg/mcpmgrignore",
    ]);
  });
});

describe("loadGlobalIgnorePatterns", () => {
  test("[] when the file is absent", async () => {
    expect(await loadGlobalIgnorePatterns(join(root, "no-config"))).toEqual([]);
  });

  test("patterns without comments and blank lines", async () => {
    const configDir = await tree({ mcpmgrignore: "\uFEFF# global\r\n.env\r\n\r\n*.pem\n!ok.pem\n\\#literal\n" });
    expect(await loadGlobalIgnorePatterns(configDir)).toEqual([".env", "*.pem", "!ok.pem", "\\#literal"]);
  });
});

describe("emptyOverlayFile", () => {
  posixOnly("creates an empty 0444 file once and returns the same path after", async () => {
    const dataDir = join(root, "data");
    const path = await emptyOverlayFile(dataDir);
    expect(path).toBe(join(dataDir, "overlay-empty"));
    const first = await stat(path);
    expect(first.size).toBe(0);
    expect(first.mode & 0o777).toBe(0o444);
    expect(await readFile(path, "utf8")).toBe("");
    expect(await emptyOverlayFile(dataDir)).toBe(path);
    expect((await stat(path)).ino).toBe(first.ino); // not rewritten
  });

  posixOnly("replaces a file that is not empty", async () => {
    const dataDir = await tree({ "overlay-empty": "not empty" });
    const path = await emptyOverlayFile(dataDir);
    expect((await stat(path)).size).toBe(0);
    expect((await stat(path)).mode & 0o777).toBe(0o444);
  });
});

describe("a mount's own .mcpmgrignore is read as a regular file only (review H2)", () => {
  test("a symbolic link (to a host file) is refused, naming the file and what to do", async () => {
    const dir = await tree({ "secret.txt": "host secret" });
    await mkdir(join(dir, "vol"));
    await symlink("../secret.txt", join(dir, "vol/.mcpmgrignore"));
    const err = await rejection(readLocalIgnoreFile(join(dir, "vol")), "UNSAFE_MOUNT");
    expect(err.message).toBe(
      `${join(dir, "vol/.mcpmgrignore")} is a symbolic link; mcpmgr reads ignore patterns only from a regular file`,
    );
    expect(err.hint).toContain("replace it with a regular file");
    // resolveOverlays reads it the same way: the start stops rather than read through the link.
    const mount = { hostPath: join(dir, "vol"), containerPath: "/data" };
    await rejection(resolveOverlays([mount], { globalPatterns: [] }), "UNSAFE_MOUNT");
  });

  test("a FIFO is refused at once (no hang), a file past 1 MiB is refused, a regular file is read", async () => {
    const fifo = await tree({});
    expect(Bun.spawnSync(["mkfifo", join(fifo, ".mcpmgrignore")]).exitCode).toBe(0);
    expect((await rejection(readLocalIgnoreFile(fifo), "UNSAFE_MOUNT")).message).toContain("is not a regular file");
    const big = await tree({ ".mcpmgrignore": "x".repeat(1024 * 1024 + 1) });
    expect((await rejection(readLocalIgnoreFile(big), "UNSAFE_MOUNT")).message).toContain(
      "is larger than 1048576 bytes",
    );
    expect(await readLocalIgnoreFile(await tree({ ".mcpmgrignore": ".env\n" }))).toBe(".env\n");
    expect(await readLocalIgnoreFile(await tree({}))).toBeUndefined();
  });
});
