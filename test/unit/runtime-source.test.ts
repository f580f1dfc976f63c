/** Source parsing, the commands packages run with, and the sandbox's bwrap arguments. */
import { describe, expect, test } from "bun:test";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expandPermissions } from "../../src/config/permission-profile.ts";
import { McpmgrError } from "../../src/errors.ts";
import { packageCommand } from "../../src/runtime/package-command.ts";
import { bwrapArgs } from "../../src/runtime/sandbox.ts";
import { parseSource } from "../../src/runtime/source.ts";

describe("parseSource", () => {
  test.each([
    [
      "npx://@modelcontextprotocol/server-everything@1.2.3",
      { kind: "package", manager: "npx", name: "@modelcontextprotocol/server-everything", version: "1.2.3" },
    ],
    ["npx://@scope/pkg", { kind: "package", manager: "npx", name: "@scope/pkg" }],
    ["uvx://mcp-server-fetch", { kind: "package", manager: "uvx", name: "mcp-server-fetch" }],
    [
      "go://github.com/org/repo/cmd/x@v1.0.0",
      { kind: "package", manager: "go", name: "github.com/org/repo/cmd/x", version: "v1.0.0" },
    ],
    ["ghcr.io/org/image:tag", { kind: "image", ref: "ghcr.io/org/image:tag" }],
    ["fetch", { kind: "registry", name: "fetch" }],
  ] as const)("%s", (text, expected) => {
    expect(parseSource(text)).toEqual(expected as never);
  });

  test("local paths resolve against the working directory; URLs are remote", () => {
    expect(parseSource("npx://./srv", "/work")).toEqual({
      kind: "package",
      manager: "npx",
      name: "./srv",
      localPath: "/work/srv",
    });
    expect(parseSource("go://../x", "/work/a")).toMatchObject({ localPath: "/work/x" });
    const remote = parseSource("https://api.example.com/mcp");
    expect(remote.kind === "remote" && remote.url.href).toBe("https://api.example.com/mcp");
  });

  test.each(["./server.py", "../srv", "/opt/srv/index.js", "~/srv", "."])(
    "the local path %s is refused as one, pointing to the package runners' local form",
    (text) => {
      expect(() => parseSource(text)).toThrow(`${JSON.stringify(text)} is a local path, not a server source`);
    },
  );

  test.each(["npx://", "ftp://x", "bad name!", "npx://pkg@"])("%s is refused with a code", (text) => {
    expect(() => parseSource(text)).toThrow(McpmgrError);
  });
});

describe("packageCommand", () => {
  const which = (name: string) => `/usr/bin/${name}`;

  test("registry packages", () => {
    expect(packageCommand({ kind: "package", manager: "npx", name: "pkg", version: "2" }, ["--x"], which)).toEqual([
      "/usr/bin/npx",
      "-y",
      "pkg@2",
      "--x",
    ]);
    expect(packageCommand({ kind: "package", manager: "uvx", name: "mcp-server-time" }, [], which)).toEqual([
      "/usr/bin/uvx",
      "mcp-server-time",
    ]);
    expect(packageCommand({ kind: "package", manager: "go", name: "github.com/o/r" }, [], which)).toEqual([
      "/usr/bin/go",
      "run",
      "github.com/o/r@latest",
    ]);
  });

  test("local projects: a Node bin, a Python console script, a Go directory", async () => {
    const dir = await mkdtemp(join(tmpdir(), "mcpmgr-pkg-"));
    try {
      await writeFile(join(dir, "package.json"), JSON.stringify({ bin: { srv: "bin/srv.mjs" } }));
      await Bun.write(join(dir, "bin/srv.mjs"), "");
      await writeFile(
        join(dir, "pyproject.toml"),
        '[project]\nname = "srv"\n[project.scripts]\nmy-server = "srv:main"\n',
      );
      expect(packageCommand({ kind: "package", manager: "npx", name: dir, localPath: dir }, ["a"], which)).toEqual([
        "/usr/bin/node",
        join(dir, "bin/srv.mjs"),
        "a",
      ]);
      expect(packageCommand({ kind: "package", manager: "uvx", name: dir, localPath: dir }, [], which)).toEqual([
        "/usr/bin/uvx",
        "--from",
        dir,
        "my-server",
      ]);
      expect(packageCommand({ kind: "package", manager: "go", name: dir, localPath: dir }, [], which)).toEqual([
        "/usr/bin/go",
        "run",
        ".",
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("a missing toolchain names what to install", () => {
    try {
      packageCommand({ kind: "package", manager: "uvx", name: "x" }, [], () => null);
      throw new Error("expected an error");
    } catch (err) {
      expect((err as McpmgrError).code).toBe("TOOLCHAIN_MISSING");
      expect((err as McpmgrError).hint).toContain("uv");
    }
  });
});

describe("bwrapArgs", () => {
  test("profile none unshares the network; network shares it; home and /tmp are hidden; mounts as asked", async () => {
    const dir = await mkdtemp(join(tmpdir(), "mcpmgr-bwrap-"));
    try {
      const none = bwrapArgs({
        profile: expandPermissions("none"),
        volumes: [{ hostPath: dir, targetPath: "/tmp/data", readOnly: true }],
        home: "/home/u",
      });
      expect(none).toContain("--unshare-net");
      expect(none.join(" ")).toContain("--tmpfs /home/u");
      expect(none.join(" ")).toContain(`--ro-bind ${dir} /tmp/data`);
      expect(none.join(" ")).toContain("--cap-drop ALL");
      // An allow-list, not the host: no bind of /, no /run, /root, /home or /var; an unprivileged uid.
      expect(none.join(" ")).not.toContain("--ro-bind / /");
      expect(none.join(" ")).toContain("--unshare-user --uid 65534 --gid 65534");
      for (const path of ["/run", "/root", "/home", "/var", "/etc/shadow", "/etc"])
        expect(none.filter((_, i) => none[i - 1]?.endsWith("bind") || none[i - 2]?.endsWith("bind"))).not.toContain(
          path,
        );
      const network = bwrapArgs({
        profile: { ...expandPermissions("network"), write: [`${dir}:/home/u/out`] },
        volumes: [],
        home: "/home/u",
      });
      expect(network).not.toContain("--unshare-net");
      expect(network.join(" ")).toContain(`--bind ${dir} /home/u/out`);
      // A mount point of its own is created; one inside a read-only system directory must exist there.
      expect(
        bwrapArgs({
          profile: expandPermissions("none"),
          volumes: [{ hostPath: dir, targetPath: "/no-such-top-level-dir", readOnly: true }],
        }).join(" "),
      ).toContain(`--ro-bind ${dir} /no-such-top-level-dir`);
      expect(() =>
        bwrapArgs({
          profile: expandPermissions("none"),
          volumes: [{ hostPath: dir, targetPath: "/usr/no-such-dir", readOnly: true }],
        }),
      ).toThrow(McpmgrError);
      // Running from the home directory (or above it) must not reveal it again.
      const fromHome = bwrapArgs({
        profile: expandPermissions("none"),
        volumes: [],
        home: "/home/u",
        workingDir: "/home/u",
      }).join(" ");
      expect(fromHome).not.toContain("--ro-bind /home/u /home/u");
      const fromAbove = bwrapArgs({
        profile: expandPermissions("none"),
        volumes: [],
        home: `${dir}/h`,
        workingDir: dir,
      }).join(" ");
      expect(fromAbove).not.toContain(`--ro-bind ${dir} ${dir}`);
      // mcpmgr's own directories are hidden where a mount shows them, under the mount's name for them.
      await mkdir(join(dir, "state"));
      const hidden = bwrapArgs({
        profile: expandPermissions("none"),
        volumes: [{ hostPath: dir, targetPath: "/view", readOnly: true }],
        hidden: [join(dir, "state")],
      }).join(" ");
      expect(hidden).toContain("--tmpfs /view/state");
      expect(() =>
        bwrapArgs({
          profile: expandPermissions("none"),
          volumes: [{ hostPath: "/no/such/dir", targetPath: "/x", readOnly: false }],
        }),
      ).toThrow(McpmgrError);
      const inProject = bwrapArgs({
        profile: expandPermissions("none"),
        volumes: [],
        workingDir: dir,
        showWorkingDir: { coveredSockets: [join(dir, "state/agent.sock")] },
      }).join(" ");
      expect(inProject).toContain(`--ro-bind ${dir} ${dir}`);
      expect(inProject).toContain(`--chdir ${dir}`);
      // A socket in it is covered by an empty device node right after the directory's bind.
      expect(inProject).toContain(`--ro-bind ${dir} ${dir} --ro-bind /dev/null ${join(dir, "state/agent.sock")}`);
      // Not shown (mount-policy.ts found a reason): the server starts in its empty home ...
      const refused = bwrapArgs({ profile: expandPermissions("none"), volumes: [], workingDir: dir, home: "/home/u" });
      expect(refused.join(" ")).not.toContain(`--ro-bind ${dir} ${dir}`);
      expect(refused.join(" ")).toContain("--chdir /home/u");
      // ... unless a volume (or the local package) shows it at its own path.
      const viaVolume = bwrapArgs({
        profile: expandPermissions("none"),
        volumes: [{ hostPath: dir, targetPath: dir, readOnly: true }],
        workingDir: join(dir, "state"),
        home: "/home/u",
      }).join(" ");
      expect(viaVolume).toContain(`--chdir ${join(dir, "state")}`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

test("package specs and image references outside their shapes are refused before they reach a Dockerfile or a command line", () => {
  for (const text of [
    "npx://pkg;rm -rf /",
    "npx://pkg\nUSER root",
    "npx://$(id)",
    "uvx://pkg name",
    "go://github.com/org/x`id`",
    "ghcr.io/org/image:1 extra",
    "ghcr.io/org/image\n:1",
  ]) {
    let code: string | undefined;
    try {
      parseSource(text);
    } catch (err) {
      code = (err as { code?: string }).code;
    }
    expect(code).toBe("INVALID_ARGUMENT");
  }
  expect(parseSource("uvx://mcp-server-fetch==1.2.3")).toEqual({
    kind: "package",
    manager: "uvx",
    name: "mcp-server-fetch",
    version: "1.2.3",
  });
  expect(parseSource("npx://pkg@>=1.2")).toEqual({ kind: "package", manager: "npx", name: "pkg", version: ">=1.2" });
});
