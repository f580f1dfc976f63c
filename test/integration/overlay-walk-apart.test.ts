/**
 * The supervisor's ignore-overlay walk in a child process (`mcpmgr __resolve-overlays`,
 * workload/overlay-walk.ts): the same overlays, and the same typed errors, as the walk in process.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import {
  type MountForOverlay,
  type ResolveOverlaysOptions,
  resolveOverlays,
} from "../../src/runtime/ignore-overlays.ts";
import { resolveOverlaysApart, WALK_VERSION } from "../../src/workload/overlay-walk.ts";
import { rejection } from "../support/errors.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";

setDefaultTimeout(60_000);

/** This checkout's CLI, as the supervisor's selfCommand names it when not compiled. */
const CHILD = [process.execPath, join(import.meta.dir, "../../src/main.ts"), "__resolve-overlays"];
const posixOnly = process.platform === "win32" ? test.skip : test;
let root: string;
let counter = 0;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "mcpmgr-overlay-walk-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function tree(files: Record<string, string>): Promise<string> {
  const dir = join(root, `t${counter++}`);
  for (const [rel, content] of Object.entries(files)) {
    const path = join(dir, rel);
    if (rel.endsWith("/")) await mkdir(path, { recursive: true });
    else {
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, content);
    }
  }
  return dir;
}

async function both(mounts: MountForOverlay[], options: ResolveOverlaysOptions) {
  return {
    inProcess: await resolveOverlays(mounts, options),
    apart: await resolveOverlaysApart(mounts, options, undefined, CHILD),
  };
}

describe("resolveOverlaysApart", () => {
  posixOnly("finds exactly the overlays the walk in process finds", async () => {
    const outside = await tree({ "secret.txt": "s" });
    const local = "# hide\n.env\nsecrets/\n*.pem\n!keep.pem\nlinked-dir\n";
    const dir = await tree({
      ".mcpmgrignore": local,
      ".env": "A=1",
      "src/.env": "B=2",
      "src/a.ts": "",
      "secrets/x": "",
      "certs/a.pem": "",
      "certs/keep.pem": "",
      "node_modules/pkg/.env": "",
      "node_modules/pkg/index.js": "",
    });
    await symlink(outside, join(dir, "linked-dir"));
    const other = await tree({ "deep/er/id_rsa": "", "ok.txt": "" });
    const single = join(await tree({ "cfg/id_rsa": "" }), "cfg/id_rsa");
    const mounts = [
      { hostPath: dir, containerPath: "/work" },
      { hostPath: other, containerPath: "/other" },
      { hostPath: single, containerPath: "/keys/id_rsa" },
      { hostPath: join(root, "absent"), containerPath: "/absent" },
    ];
    const { inProcess, apart } = await both(mounts, {
      globalPatterns: ["id_rsa"],
      globalSource: "/cfg/mcpmgrignore",
      localIgnoreFiles: new Map([
        [dir, local],
        [other, undefined],
      ]),
    });
    expect(apart).toEqual(inProcess);
    expect(apart.map((o) => `${o.kind} ${o.containerPath} ${o.pattern}`)).toEqual([
      "file /keys/id_rsa id_rsa",
      "file /other/deep/er/id_rsa id_rsa",
      "file /work/.env .env",
      "file /work/certs/a.pem *.pem",
      "dir /work/linked-dir linked-dir",
      "file /work/node_modules/pkg/.env .env",
      "dir /work/secrets secrets/",
      "file /work/src/.env .env",
    ]);
  });

  test("the text handed over is what counts, not the file in the mount (it is not read again)", async () => {
    const dir = await tree({ ".mcpmgrignore": "a.txt\n", "a.txt": "", "b.txt": "" });
    const options = { globalPatterns: [], localIgnoreFiles: new Map([[dir, "b.txt\n"]]) };
    const { inProcess, apart } = await both([{ hostPath: dir, containerPath: "/d" }], options);
    expect(apart).toEqual(inProcess);
    expect(apart.map((o) => o.containerPath)).toEqual(["/d/b.txt"]);
  });

  test("past the entry cap: the same typed error, code, message, hint and exit code", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 20; i++) files[`d/f${i}.txt`] = "";
    const dir = await tree(files);
    const mounts = [{ hostPath: dir, containerPath: "/d" }];
    const options = { globalPatterns: [".env"], maxEntries: 10 };
    const inProcess = await rejection(resolveOverlays(mounts, options), "INVALID_OPTION");
    const apart = await rejection(resolveOverlaysApart(mounts, options, undefined, CHILD), "INVALID_OPTION");
    expect(apart.message).toBe(inProcess.message);
    expect(apart.hint).toBe(inProcess.hint);
    expect(apart.exitCode).toBe(inProcess.exitCode);
  });

  test("a child that ends without an answer: the walk runs in process instead, and says why", async () => {
    const dir = await tree({ ".env": "", "a.txt": "" });
    const mounts = [{ hostPath: dir, containerPath: "/d" }];
    const options = { globalPatterns: [".env"] };
    const why: string[] = [];
    const dying = [process.execPath, "-e", "console.error('walk broke'); process.exit(3)"];
    const list = await resolveOverlaysApart(mounts, options, (line) => why.push(line), dying);
    expect(list).toEqual(await resolveOverlays(mounts, options));
    expect(list.map((o) => o.containerPath)).toEqual(["/d/.env"]);
    expect(why).toHaveLength(1);
    expect(why[0]).toContain("walk broke");
  });

  test("a child that answers something else (another version) counts as no answer", async () => {
    const dir = await tree({ ".env": "" });
    const mounts = [{ hostPath: dir, containerPath: "/d" }];
    const why: string[] = [];
    const odd = [process.execPath, "-e", "console.log(JSON.stringify({ result: [] }))"];
    const list = await resolveOverlaysApart(mounts, { globalPatterns: [".env"] }, (line) => why.push(line), odd);
    expect(list.map((o) => o.containerPath)).toEqual(["/d/.env"]);
    expect(why).toHaveLength(1);
  });

  test("a child that hangs is stopped after its time and the walk runs in process (a start never waits for good)", async () => {
    const dir = await tree({ ".env": "" });
    const why: string[] = [];
    const hanging = [process.execPath, "-e", "setInterval(() => {}, 1000)"];
    const list = await resolveOverlaysApart(
      [{ hostPath: dir, containerPath: "/d" }],
      { globalPatterns: [".env"] },
      (line) => why.push(line),
      hanging,
      300,
    );
    expect(list.map((o) => o.containerPath)).toEqual(["/d/.env"]);
    expect(why).toHaveLength(1);
    expect(why[0]).toContain("no answer within 300 ms");
  }, 15_000);

  test("a child that cannot be started (the executable gone in an upgrade): the walk runs in process", async () => {
    const dir = await tree({ ".env": "" });
    const why: string[] = [];
    const list = await resolveOverlaysApart(
      [{ hostPath: dir, containerPath: "/d" }],
      { globalPatterns: [".env"] },
      (line) => why.push(line),
      [join(root, "no-such-binary")],
    );
    expect(list.map((o) => o.containerPath)).toEqual(["/d/.env"]);
    expect(why[0]).toContain("no-such-binary");
  });
});

/**
 * This checkout's CLI copied with another version in its package.json: an mcpmgr installed over the
 * one a supervisor runs (which re-executes the installed executable for its child).
 */
async function otherVersion(version: string): Promise<string[]> {
  const dir = join(root, `v${counter++}`);
  await mkdir(dir, { recursive: true });
  await cp(join(REPO_ROOT, "src"), join(dir, "src"), { recursive: true });
  const manifest = JSON.parse(await readFile(join(REPO_ROOT, "package.json"), "utf8")) as Record<string, unknown>;
  await writeFile(join(dir, "package.json"), JSON.stringify({ ...manifest, version }));
  await symlink(join(REPO_ROOT, "node_modules"), join(dir, "node_modules"));
  return [process.execPath, join(dir, "src/main.ts"), "__resolve-overlays"];
}

describe("a child of another version (mcpmgr upgraded while the supervisor runs)", () => {
  posixOnly("is not trusted: the walk runs in process, and the log line names both versions", async () => {
    const dir = await tree({ ".env": "", "a.txt": "" });
    const mounts = [{ hostPath: dir, containerPath: "/d" }];
    const why: string[] = [];
    const list = await resolveOverlaysApart(
      mounts,
      { globalPatterns: [".env"] },
      (line) => why.push(line),
      await otherVersion("99.0.0-upgraded"),
    );
    expect(list.map((o) => o.containerPath)).toEqual(["/d/.env"]);
    expect(why).toHaveLength(1);
    expect(why[0]).toContain("ran in the supervisor itself");
    expect(why[0]).toContain("mcpmgr 99.0.0-upgraded (development)");
    expect(why[0]).toContain(`this supervisor mcpmgr ${WALK_VERSION}`);
  });

  test("one from before versions were exchanged, whose answer names none, is not trusted either", async () => {
    const dir = await tree({ ".env": "" });
    const why: string[] = [];
    // Its answer in the old shape: overlays, no version (here a walk that found nothing, read differently).
    const older = [process.execPath, "-e", "await Bun.stdin.text(); console.log(JSON.stringify({ overlays: [] }))"];
    const list = await resolveOverlaysApart(
      [{ hostPath: dir, containerPath: "/d" }],
      { globalPatterns: [".env"] },
      (line) => why.push(line),
      older,
    );
    expect(list.map((o) => o.containerPath)).toEqual(["/d/.env"]);
    expect(why).toHaveLength(1);
    expect(why[0]).toContain("of an earlier version");
  });

  test("asked by an older supervisor (a request without a version), the child answers nothing it could take, and says why", async () => {
    const dir = await tree({ ".env": "" });
    const child = Bun.spawn(CHILD, { stdin: "pipe", stdout: "pipe", stderr: "pipe" });
    child.stdin.write(JSON.stringify({ mounts: [{ hostPath: dir, containerPath: "/d" }], globalPatterns: [".env"] }));
    await child.stdin.end();
    const [out, err, code] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ]);
    const reply = JSON.parse(out) as Record<string, unknown>;
    // An older supervisor takes only `overlays` or `error`: anything else, and it walks itself.
    expect({ code, overlays: "overlays" in reply, error: "error" in reply }).toEqual({
      code: 1,
      overlays: false,
      error: false,
    });
    expect(err.trim()).toBe(
      `mcpmgr ${WALK_VERSION} walks only for a supervisor of its own version, and this one is of an earlier version: restart the workload to run it on this version`,
    );
  });
});

describe("a detached workload's supervisor", () => {
  posixOnly("hides what the global and the mount's patterns match, walked apart", async () => {
    const home = await mkdtemp(join(tmpdir(), "mcpmgr-overlay-walk-home-"));
    const volume = await tree({
      ".mcpmgrignore": "token.txt\n",
      ".env": "API_KEY=1",
      "token.txt": "t",
      "ok.txt": "visible",
    });
    await mkdir(join(home, "config"), { recursive: true });
    await writeFile(join(home, "config/mcpmgrignore"), ".env\n");
    const mcpmgr = (...args: string[]) => {
      const result = Bun.spawnSync([process.execPath, CLI_ENTRY, ...args], {
        env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home, MCPMGR_RUNTIME: "process" },
        timeout: 120_000,
      });
      return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
    };
    const client = new Client({ name: "overlay-walk", version: "1.0.0" });
    try {
      const probe = `npx://${REPO_ROOT}/test/fixtures/sandbox-probe`;
      const started = mcpmgr(
        "run",
        probe,
        "--name",
        "walked",
        "--permission-profile",
        "none",
        "-v",
        `${volume}:${volume}:ro`,
      );
      expect(`${started.code} ${started.stderr}`).toStartWith("0 ");
      await client.connect(new StreamableHTTPClientTransport(new URL(started.stdout.trim())));
      const read = async (path: string) =>
        ((await client.callTool({ name: "read_file", arguments: { path } })) as { content: { text: string }[] })
          .content[0]?.text;
      expect(await read(join(volume, "ok.txt"))).toBe("visible");
      expect(await read(join(volume, ".env"))).toBe("");
      expect(await read(join(volume, "token.txt"))).toBe("");
      // Walked in the child, not in the supervisor after a failed child.
      const proxyLog = mcpmgr("logs", "walked", "--proxy");
      expect(proxyLog.code).toBe(0);
      expect(proxyLog.stdout).not.toContain("ran in the supervisor itself");
    } finally {
      await client.close().catch(() => {});
      mcpmgr("rm", "walked");
      await rm(home, { recursive: true, force: true });
    }
  });
});
