/**
 * The process sandbox's hardening (issues 13 and 18), with real servers under real bwrap:
 * an unprivileged uid in a user namespace, a seccomp filter, an allow-listed view of the
 * host, and mcpmgr's own state hidden wherever a volume would show it, also through
 * symlinks; single-file volumes work.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { lstatSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CLI_ENTRY, REPO_ROOT, spawnUntil } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const PROBE = "npx://./test/fixtures/sandbox-probe";
/** The probe by its absolute path, for runs started in another working directory. */
const PROBE_ANYWHERE = `npx://${REPO_ROOT}/test/fixtures/sandbox-probe`;
const MCPMGR_HOME = process.env.MCPMGR_HOME as string;

async function runForeground(args: string[], env: Record<string, string> = {}, timeoutMs = 30_000, cwd?: string) {
  const running = await spawnUntil([process.execPath, CLI_ENTRY, "run", "--foreground", ...args], /^(http:\/\/\S+)$/m, {
    env,
    timeoutMs,
    ...(cwd ? { cwd } : {}),
  });
  const client = new Client({ name: "sandbox-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(running.match[1] as string)));
  const call = async (name: string, a: Record<string, unknown> = {}) =>
    ((await client.callTool({ name, arguments: a })) as { content: { text: string }[] }).content[0]?.text;
  return { ...running, client, call };
}

test("seccomp: mount, umount, unshare, setns, clone into new namespaces, ptrace, keyring, bpf, perf, io_uring, VM sockets... are refused; uid 65534, no capabilities", async () => {
  const run = await runForeground(["go://./test/fixtures/syscall-probe", "--permission-profile", "none"], {}, 90_000);
  try {
    const results = JSON.parse((await run.call("syscalls")) as string) as Record<string, string>;
    for (const call of [
      "mount",
      "umount2",
      "unshare",
      "setns",
      "clone_newuser",
      "ptrace",
      "process_vm_readv",
      "keyctl",
      "add_key",
      "bpf",
      "perf_event_open",
      "userfaultfd",
      "open_by_handle_at",
      "chroot",
    ])
      expect(`${call}: ${results[call]}`).toBe(`${call}: EPERM`);
    expect(results.io_uring_setup).toBe("ENOSYS");
    // VM sockets reach the hypervisor whatever the network namespace (M7): refused like
    // every family a server does not need; the families it uses still work.
    expect(results.socket_vsock).toBe("EAFNOSUPPORT");
    expect(results.socketpair_vsock).toBe("EAFNOSUPPORT");
    expect(results.socket_packet).toBe("EAFNOSUPPORT");
    for (const family of ["socket_unix", "socket_inet", "socket_inet6", "socket_netlink", "socketpair_unix"])
      expect(`${family}: ${results[family]}`).toBe(`${family}: ok`);
    // Ordinary children still start.
    expect(results.clone_plain).toBe("ok");
    expect(results.seccomp_mode).toBe("2");
    expect(results.uid).toBe("65534");
    expect(results.gid).toBe("65534");
    expect(results.cap_eff).toBe("0000000000000000");
    await run.client.close();
  } finally {
    await run.stop();
  }
}, 120_000);

test("the server sees an allow-list of the host: system files yes; /etc/shadow, the engine's state, /root, /home, /run no", async () => {
  const run = await runForeground([PROBE, "--permission-profile", "none"]);
  try {
    expect(await run.call("read_file", { path: "/etc/hosts" })).not.toMatch(/^E[A-Z]+$/);
    expect(await run.call("read_file", { path: "/etc/passwd" })).toContain("nobody:x:65534");
    for (const path of [
      "/etc/shadow",
      "/etc/gshadow",
      "/etc/machine-id",
      "/etc/ssl/private",
      "/var/lib/docker",
      "/root/.bashrc",
      "/home",
      "/run/docker.sock",
      "/var/run/docker.sock",
      "/sys/kernel",
    ])
      expect(`${path}: ${await run.call("read_file", { path })}`).toBe(`${path}: ENOENT`);
    // What the server's home and /tmp hold is its own: empty, writable, gone afterwards.
    expect(await run.call("write_file", { path: "/tmp/scratch.txt", text: "x" })).toBe("written");
    expect(await run.call("write_file", { path: "/new-top-level.txt" })).toBe("EROFS");
    // The host's kernel settings: when mcpmgr runs as root, the sandbox's uid 65534 is the host's
    // uid 0, which owns /proc/sys and may write there without any capability (core_pattern runs a
    // program as root on the host). Rewriting the value the kernel already has changes nothing
    // when the write goes through; /proc is read-only, so it must not. (As another user the
    // write is refused by the file's owner instead; the read-only mount answers first.)
    for (const path of ["/proc/sys/vm/swappiness", "/proc/sys/kernel/core_pattern"]) {
      const value = await run.call("read_file", { path });
      expect(value).not.toMatch(/^E[A-Z]+$/);
      expect(`${path}: ${await run.call("write_file", { path, text: value })}`).toBe(`${path}: EROFS`);
    }
    await run.client.close();
  } finally {
    await run.stop();
  }
}, 60_000);

test("the sandbox's /tmp, /dev/shm and home are bounded: 2 GiB each by default, MCPMGR_SANDBOX_TMPFS_SIZE sets it; a server filling them gets ENOSPC; /dev is read-only", async () => {
  // Both are tmpfs, held in the host's memory: without a size bwrap lets each take half of it.
  const byDefault = await runForeground([PROBE, "--permission-profile", "none"]);
  try {
    for (const dir of ["/tmp", "/dev/shm", (await byDefault.call("env", { name: "HOME" })) as string])
      expect(`${dir}: ${await byDefault.call("fs_size", { path: dir })}`).toBe(`${dir}: ${2 * 1024 ** 3}`);
    // A home that is new at every start: npm does not ask the registry for a newer npm each time, nor
    // print its notice as it exits, where it took the place of the server's last words in a crash report.
    expect(await byDefault.call("env", { name: "npm_config_update_notifier" })).toBe("false");
    // bwrap's /dev is a tmpfs as big as the others were: read-only, so nothing is written there.
    expect(await byDefault.call("write_file", { path: "/dev/filler" })).toBe("EROFS");
    expect(await byDefault.call("write_file", { path: "/dev/null" })).toBe("written");
    await byDefault.client.close();
  } finally {
    await byDefault.stop();
  }
  const small = await runForeground([PROBE, "--permission-profile", "none"], { MCPMGR_SANDBOX_TMPFS_SIZE: "8m" });
  try {
    const home = (await small.call("env", { name: "HOME" })) as string;
    for (const dir of ["/tmp", "/dev/shm", home]) {
      expect(await small.call("fill_file", { path: `${dir}/small`, mib: 4 })).toBe("written");
      expect(`${dir}: ${await small.call("fill_file", { path: `${dir}/big`, mib: 16 })}`).toBe(`${dir}: ENOSPC`);
    }
    await small.client.close();
  } finally {
    await small.stop();
  }
});

test("a MCPMGR_SANDBOX_TMPFS_SIZE too big to pass on is refused in one line before anything starts", () => {
  // It reached bwrap as "1.073741824e+21": bwrap refused --size, and the server "failed its handshake".
  const refused = Bun.spawnSync(
    [process.execPath, CLI_ENTRY, "run", "--foreground", PROBE, "--permission-profile", "none"],
    {
      env: { ...process.env, MCPMGR_RUNTIME: "process", NO_COLOR: "1", MCPMGR_SANDBOX_TMPFS_SIZE: "1000000000000g" },
      timeout: 60_000,
    },
  );
  const err = refused.stderr.toString().trim();
  expect(err).toBe(
    '[error] MCPMGR_SANDBOX_TMPFS_SIZE "1000000000000g": must be a size such as 512m or 2g (from 6m to 1024g) (hint: unset MCPMGR_SANDBOX_TMPFS_SIZE to use the default)',
  );
  expect(refused.exitCode).toBe(2);
});

test("no set-user-ID or set-group-ID file or directory is made in a writable volume (chmod, open, mkdir, mknod)", async () => {
  // Run by root, the sandbox's uid is the host's uid 0: a setuid program it leaves in a volume
  // runs as root for every user of the host, whatever nosuid the sandbox's own mount has.
  const volume = await mkdtemp(join(REPO_ROOT, ".tmp-setid-"));
  const run = await runForeground([PROBE, "--permission-profile", "none", "-v", `${volume}:/data`]);
  try {
    expect(await run.call("write_file", { path: "/data/tool", text: "#!/bin/sh\nid\n" })).toBe("written");
    for (const mode of [0o4755, 0o2755, 0o6755])
      expect(`${mode.toString(8)}: ${await run.call("chmod", { path: "/data/tool", mode })}`).toBe(
        `${mode.toString(8)}: EPERM`,
      );
    expect(await run.call("create_file", { path: "/data/made", mode: 0o4755 })).toBe("EPERM");
    expect(await run.call("make_dir", { path: "/data/shared", mode: 0o2775 })).toBe("EPERM");
    // Ordinary modes still work, and so does opening a file that exists (its mode argument unused).
    expect(await run.call("chmod", { path: "/data/tool", mode: 0o755 })).toBe("changed");
    expect(await run.call("create_file", { path: "/data/plain", mode: 0o644 })).toBe("created");
    expect(await run.call("make_dir", { path: "/data/dir", mode: 0o755 })).toBe("made");
    expect(await run.call("read_file", { path: "/data/tool" })).toContain("id");
    for (const name of ["tool", "plain", "dir"])
      expect(`${name}: ${lstatSync(join(volume, name)).mode & 0o6000}`).toBe(`${name}: 0`);
    expect(lstatSync(join(volume, "made"), { throwIfNoEntry: false })).toBeUndefined();
    await run.client.close();
  } finally {
    await run.stop();
    await rm(volume, { recursive: true, force: true });
  }
});

describe("the working directory is shown unless it lies where the host is; its sockets are covered (review H1)", () => {
  let inTmp: string;
  let project: string;
  const listeners: ReturnType<typeof Bun.listen>[] = [];
  const listen = (path: string) => listeners.push(Bun.listen({ unix: path, socket: { data() {} } }));

  beforeAll(async () => {
    // A directory in /tmp holding the user's socket, as tmux's /tmp/tmux-UID does.
    inTmp = await mkdtemp(join(tmpdir(), "mcpmgr-cwd-"));
    listen(join(inTmp, "default"));
    // A project outside every system or scratch tree, holding a development server's socket.
    await mkdir(join(REPO_ROOT, ".tmp"), { recursive: true });
    project = await mkdtemp(join(REPO_ROOT, ".tmp", "cwd-project-"));
    await mkdir(join(project, "run"));
    listen(join(project, "run/dev.sock"));
    await writeFile(join(project, "readme.txt"), "project file");
  });
  afterAll(async () => {
    for (const listener of listeners) listener.stop(true);
    await rm(inTmp, { recursive: true, force: true });
    await rm(project, { recursive: true, force: true });
  });

  test("started in /tmp, a directory in it, /var/run or /etc: not shown, the server starts in its empty home; the summary says why", async () => {
    // The host's own sockets are really there: the test can fail.
    expect(lstatSync("/var/run/docker.sock").isSocket()).toBe(true);
    for (const [cwd, probes, why] of [
      [inTmp, [["unix_connect", join(inTmp, "default")]], "it lies in /tmp"],
      ["/tmp", [["unix_connect", join(inTmp, "default")]], "/tmp is shared by every program"],
      ["/var/run", [["unix_connect", "/var/run/docker.sock"]], "system directory /run"],
      ["/etc", [["read_file", "/etc/shadow"]], "system directory /etc"],
    ] as const) {
      const run = await runForeground([PROBE_ANYWHERE, "--permission-profile", "none"], {}, 30_000, cwd);
      try {
        for (const [tool, path] of probes)
          expect(`${cwd}: ${tool} ${path}: ${await run.call(tool, { path })}`).toBe(`${cwd}: ${tool} ${path}: ENOENT`);
        // The server's /tmp stays its own: nothing of the host's shows through it.
        expect(await run.call("read_file", { path: join(inTmp, "default") })).toBe("ENOENT");
        const note = run
          .output()
          .split("\n")
          .find((line) => line.includes("not shown: the working directory"));
        expect(note).toContain(why);
        expect(note).toContain("the server starts in its empty home");
        expect(note).toContain('to show it anyway, add -v "$PWD:$PWD:ro"');
        expect(run.output()).not.toContain("(working directory)");
        await run.client.close();
      } finally {
        await run.stop();
      }
    }
  }, 180_000);

  test("a project directory holding a socket is shown read-only with the socket covered; its .mcpmgrignore applies", async () => {
    await writeFile(join(project, ".env"), "API_KEY=project-secret");
    await writeFile(join(project, ".mcpmgrignore"), ".env\n");
    const socket = join(project, "run/dev.sock");
    const run = await runForeground([PROBE_ANYWHERE, "--permission-profile", "none"], {}, 30_000, project);
    try {
      // The socket's inode is there on the host, and a program answers on it: the sandbox must not reach it.
      expect(lstatSync(socket).isSocket()).toBe(true);
      expect(await run.call("unix_connect", { path: socket })).not.toBe("connected");
      expect(await run.call("read_file", { path: join(project, "readme.txt") })).toBe("project file");
      expect(await run.call("write_file", { path: join(project, "run/x.txt") })).toBe("EROFS");
      expect(await run.call("read_file", { path: join(project, ".env") })).toBe("");
      expect(run.output()).toContain(`read   ${project}  (working directory)`);
      expect(run.output()).toContain(`covered: the socket ${socket} in the working directory`);
      await run.client.close();
    } finally {
      await run.stop();
      await rm(join(project, ".env"));
      await rm(join(project, ".mcpmgrignore"));
    }
  }, 60_000);

  test("a local package's .mcpmgrignore applies in the process sandbox", async () => {
    const pkg = await mkdtemp(join(REPO_ROOT, ".tmp", "local-package-"));
    try {
      for (const file of ["package.json", "probe.mjs"])
        await writeFile(join(pkg, file), await readFile(join(REPO_ROOT, "test/fixtures/sandbox-probe", file)));
      await writeFile(join(pkg, ".env"), "API_KEY=package-secret");
      await writeFile(join(pkg, ".mcpmgrignore"), ".env\n");
      const run = await runForeground([`npx://${pkg}`, "--permission-profile", "none"], {}, 30_000, project);
      try {
        expect(await run.call("read_file", { path: join(pkg, "package.json") })).toContain("mcpmgr-sandbox-probe");
        expect(await run.call("read_file", { path: join(pkg, ".env") })).toBe("");
        await run.client.close();
      } finally {
        await run.stop();
      }
    } finally {
      await rm(pkg, { recursive: true, force: true });
    }
  }, 60_000);

  test("the documented opt-in: -v shows the directory the user names, and the server starts there", async () => {
    const run = await runForeground(
      [PROBE_ANYWHERE, "--permission-profile", "none", "-v", `${inTmp}:${inTmp}:ro`],
      {},
      30_000,
      inTmp,
    );
    try {
      expect(await run.call("unix_connect", { path: join(inTmp, "default") })).toBe("connected");
      await run.client.close();
    } finally {
      await run.stop();
    }
  }, 60_000);
});

describe("mcpmgr's state stays hidden whatever the volume", () => {
  let scratch: string;
  const secret = "secret-marker-7f3a";
  const planted: string[] = [];
  const saved = new Map<string, Buffer | undefined>();

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), "mcpmgr-hide-"));
    // The preload's MCPMGR_HOME lives in /tmp: plant what the review read there.
    for (const rel of [
      "data/secrets.enc.json",
      "state/workloads/other/workload.json",
      "state/logs/other.log",
      "config/registry.json",
    ]) {
      const path = join(MCPMGR_HOME, rel);
      await mkdir(dirname(path), { recursive: true });
      saved.set(rel, await readFile(path).catch(() => undefined));
      await writeFile(path, secret);
      planted.push(rel);
    }
    await writeFile(join(scratch, "visible.txt"), "visible");
    await symlink(MCPMGR_HOME, join(scratch, "home-link"));
    await symlink(dirname(MCPMGR_HOME), join(scratch, "parent-link"));
  });
  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true });
    // The planted files are not valid state: later tests share this MCPMGR_HOME.
    for (const rel of planted) {
      const before = saved.get(rel);
      if (before) await writeFile(join(MCPMGR_HOME, rel), before);
      else await rm(join(MCPMGR_HOME, rel), { force: true });
    }
    await rm(join(MCPMGR_HOME, "state/workloads/other"), { recursive: true, force: true });
  });

  test("-v /tmp:/tmp/view:ro with profile none: secrets, workload records, logs and config are not visible", async () => {
    const run = await runForeground([
      PROBE,
      "--permission-profile",
      "none",
      "-v",
      `${dirname(MCPMGR_HOME)}:/tmp/view:ro`,
    ]);
    try {
      // The volume works (the test can fail) ...
      expect(await run.call("read_file", { path: join("/tmp/view", basename(scratch), "visible.txt") })).toBe(
        "visible",
      );
      // ... but mcpmgr's home under it is an empty directory.
      for (const rel of planted) {
        const path = join("/tmp/view", basename(MCPMGR_HOME), rel);
        expect(`${path}: ${await run.call("read_file", { path })}`).toBe(`${path}: ENOENT`);
      }
      await run.client.close();
    } finally {
      await run.stop();
    }
  }, 60_000);

  test("a writable -v showing mcpmgr's home: the empty directories hiding it take no files (tmpfs, held in memory)", async () => {
    // Each is a tmpfs of its own, which bwrap sizes at half the host's memory: writable, a
    // server filled the host's memory through them.
    const volume = await mkdtemp(join(REPO_ROOT, ".tmp-hidden-"));
    const state = join(volume, "state");
    const run = await runForeground(
      [PROBE_ANYWHERE, "--permission-profile", "none", "-v", `${volume}:/data`],
      { MCPMGR_HOME: state },
      30_000,
      volume,
    );
    try {
      expect(await run.call("write_file", { path: "/data/visible.txt" })).toBe("written");
      for (const path of ["/data/state/filler", "/data/state/data/filler", "/data/state/state/filler"])
        expect(`${path}: ${await run.call("write_file", { path })}`).toBe(`${path}: EROFS`);
      await run.client.close();
    } finally {
      await run.stop();
      await rm(volume, { recursive: true, force: true });
    }
  });

  test("a -v source that is a symlink to mcpmgr's home, or to its parent, shows nothing of it", async () => {
    const run = await runForeground([
      PROBE,
      "-v",
      `${join(scratch, "home-link")}:/state:ro`,
      "-v",
      `${join(scratch, "parent-link")}:/parent:ro`,
    ]);
    try {
      expect(await run.call("read_file", { path: join("/parent", basename(scratch), "visible.txt") })).toBe("visible");
      for (const rel of planted) {
        for (const path of [join("/state", rel), join("/parent", basename(MCPMGR_HOME), rel)])
          expect(`${path}: ${await run.call("read_file", { path })}`).toBe(`${path}: ENOENT`);
      }
      await run.client.close();
    } finally {
      await run.stop();
    }
  }, 60_000);

  test("a single-file volume is mounted (read-only and read-write)", async () => {
    const one = join(scratch, "one.txt");
    const two = join(scratch, "two.txt");
    await writeFile(one, "one");
    await writeFile(two, "two");
    const run = await runForeground([PROBE, "-v", `${one}:/one.txt:ro`, "-v", `${two}:/data/two.txt`]);
    try {
      expect(await run.call("read_file", { path: "/one.txt" })).toBe("one");
      expect(await run.call("write_file", { path: "/one.txt" })).toBe("EROFS");
      expect(await run.call("write_file", { path: "/data/two.txt", text: "changed" })).toBe("written");
      expect(await Bun.file(two).text()).toBe("changed");
      await run.client.close();
    } finally {
      await run.stop();
    }
  }, 60_000);
});

describe("a registry entry's mounts (process runtime)", () => {
  let dir: string;
  const registry = async (permissions: unknown) => {
    const path = join(dir, "registry.json");
    await writeFile(
      path,
      JSON.stringify({
        servers: [
          {
            name: "greedy",
            description: "a registry entry asking for host paths",
            transport: "stdio",
            source: { npx: "mcpmgr-sandbox-probe" },
            permissions,
            tools: ["read_file"],
          },
        ],
      }),
    );
    return { MCPMGR_REGISTRY: path };
  };
  const cli = (args: string[], env: Record<string, string>) => {
    const result = Bun.spawnSync([process.execPath, CLI_ENTRY, ...args], {
      env: { ...process.env, NO_COLOR: "1", ...env },
      timeout: 60_000,
    });
    return { code: result.exitCode, out: result.stdout.toString(), err: result.stderr.toString() };
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "mcpmgr-registry-mounts-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test("the engine's socket directory and mcpmgr's home are refused before anything starts", async () => {
    for (const path of ["/var/run", "/run", MCPMGR_HOME, join(MCPMGR_HOME, "data")]) {
      const refused = cli(["run", "--foreground", "greedy"], await registry({ read: [path] }));
      expect(refused.code).toBe(2);
      expect(refused.err).toContain("registry entry greedy asks to read");
      expect(refused.err).toContain(`--allow-registry-mount`);
      expect(refused.err).not.toContain("gets (");
    }
    // A symlink to a refused path is the refused path.
    await symlink("/var/run", join(dir, "innocent"));
    const viaLink = cli(["run", "--foreground", "greedy"], await registry({ write: [join(dir, "innocent")] }));
    expect(viaLink.code).toBe(2);
    expect(viaLink.err).toContain("asks to write /run");
  });

  test("a directory in /tmp holding the user's socket (tmux's /tmp/tmux-UID), or any in /tmp, is refused (review H3)", async () => {
    // tmux's default layout: /tmp/tmux-UID/default, a server that runs commands as the user.
    const tmuxDir = join(dir, "tmux-0");
    await mkdir(tmuxDir);
    const tmux = Bun.listen({ unix: join(tmuxDir, "default"), socket: { data() {} } });
    try {
      const refused = cli(["run", "--foreground", "greedy"], await registry({ read: [tmuxDir] }));
      expect(refused.code).toBe(2);
      expect(refused.err).toContain(`registry entry greedy asks to read ${tmuxDir}, refused: it lies in /tmp`);
      expect(refused.err).toContain(`--allow-registry-mount ${tmuxDir}`);
      expect(refused.err).not.toContain("gets (");
      // Below a granted path or not, a socket anywhere in a registry mount is refused by itself.
      const nested = join(REPO_ROOT, ".tmp");
      await mkdir(nested, { recursive: true });
      const outside = await mkdtemp(join(nested, "registry-socket-"));
      const devServer = Bun.listen({ unix: join(outside, "dev.sock"), socket: { data() {} } });
      try {
        const holding = cli(["run", "--foreground", "greedy"], await registry({ write: [outside] }));
        expect(holding.code).toBe(2);
        expect(holding.err).toContain(`it holds the socket ${join(outside, "dev.sock")}`);
      } finally {
        devServer.stop(true);
        await rm(outside, { recursive: true, force: true });
      }
    } finally {
      tmux.stop(true);
    }
  });

  test("a detached run prints what the workload gets before the supervisor starts; a granted path is listed", async () => {
    const data = join(dir, "data");
    await mkdir(data);
    const env = await registry({ read: ["/etc", `${data}:/data`] });
    // Both need the grant: /etc is a system directory, the scratch directory lies in /tmp.
    const started = cli(
      ["run", "greedy", "--name", "greedy-detached", "--allow-registry-mount", "/etc", "--allow-registry-mount", data],
      env,
    );
    try {
      expect(`${started.code} ${started.err}`).toStartWith("0 ");
      expect(started.err).toContain("greedy-detached gets (process sandbox");
      expect(started.err).toMatch(/read {3}\/etc {2}\(registry entry greedy\)/);
      expect(started.err).toContain(`read   ${data} -> /data  (registry entry greedy)`);
      expect(started.err).toContain("network: none");
      expect(started.err).toContain("devices: /dev/null");
      // The summary comes before the workload runs in the background.
      expect(started.err.indexOf("gets (")).toBeLessThan(started.err.indexOf("is running in the background"));
    } finally {
      cli(["rm", "greedy-detached"], env);
    }
  });
});

test("a package npx cannot fetch fails saying so, without sending the user to npm's log in the sandbox's private home", () => {
  const failed = Bun.spawnSync(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      "--foreground",
      "npx://mcpmgr-no-such-package-for-tests",
      "--permission-profile",
      "none",
    ],
    { env: { ...process.env, MCPMGR_RUNTIME: "process", NO_COLOR: "1" }, timeout: 60_000 },
  );
  const err = failed.stderr.toString();
  expect(failed.exitCode).toBe(1);
  expect(err).toContain("npm error code ENOTCACHED");
  expect(err).not.toContain("A complete log of this run can be found in");
  expect(err).not.toContain(".npm/_logs");
});
