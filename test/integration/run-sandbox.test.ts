/**
 * The process sandbox's hardening (issues 13 and 18), with real servers under real bwrap:
 * an unprivileged uid in a user namespace, a seccomp filter, an allow-listed view of the
 * host, and mcpmgr's own state hidden wherever a volume would show it, also through
 * symlinks; single-file volumes work.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CLI_ENTRY, spawnUntil } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const PROBE = "npx://./test/fixtures/sandbox-probe";
const MCPMGR_HOME = process.env.MCPMGR_HOME as string;

async function runForeground(args: string[], env: Record<string, string> = {}, timeoutMs = 30_000) {
  const running = await spawnUntil([process.execPath, CLI_ENTRY, "run", "--foreground", ...args], /^(http:\/\/\S+)$/m, {
    env,
    timeoutMs,
  });
  const client = new Client({ name: "sandbox-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(running.match[1] as string)));
  const call = async (name: string, a: Record<string, unknown> = {}) =>
    ((await client.callTool({ name, arguments: a })) as { content: { text: string }[] }).content[0]?.text;
  return { ...running, client, call };
}

test("seccomp: mount, umount, unshare, setns, clone into new namespaces, ptrace, keyring, bpf, perf, io_uring... are refused; uid 65534, no capabilities", async () => {
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
    await run.client.close();
  } finally {
    await run.stop();
  }
}, 60_000);

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

  test("a detached run prints what the workload gets before the supervisor starts; a granted path is listed", async () => {
    const data = join(dir, "data");
    await mkdir(data);
    const env = await registry({ read: ["/etc", `${data}:/data`] });
    const started = cli(["run", "greedy", "--name", "greedy-detached", "--allow-registry-mount", "/etc"], env);
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
