/**
 * The container runtime against a real Docker engine: stdio and HTTP images behind the
 * proxy, hardening, labels, mounts, profile none, ignore overlays, image verification
 * and pull failures. Images are built locally (this machine cannot pull).
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  docker,
  fixtureImages,
  leftovers,
  networkGateway,
  runInDocker,
  runInDockerFails as runFails,
  type FixtureImages,
} from "../support/docker-fixtures.ts";
import { until } from "../support/gateway-group.ts";
import { CLI_ENTRY } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const runForeground = (args: string[], env: Record<string, string> = {}, cwd?: string) =>
  runInDocker(args, { env, ...(cwd ? { cwd } : {}), timeoutMs: 60_000 });
let images: FixtureImages;
let scratch: string;

beforeAll(async () => {
  images = await fixtureImages();
  scratch = await mkdtemp(join(tmpdir(), "mcpmgr-docker-"));
}, 300_000);

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

function inspect(name: string): {
  Config: { Labels: Record<string, string>; User: string };
  HostConfig: Record<string, unknown>;
  State: { Running: boolean };
} {
  const result = docker("inspect", name);
  expect(result.code).toBe(0);
  return (JSON.parse(result.out) as ReturnType<typeof inspect>[])[0] as ReturnType<typeof inspect>;
}

test("a stdio image runs hardened and labelled behind the bridge; stop removes it", async () => {
  const name = "docker-stdio";
  const run = await runForeground([
    images.probe,
    "--name",
    name,
    "-l",
    "team=search",
    "--label",
    "tier=dev",
    "-e",
    "PROBE_SETTING=on",
  ]);
  try {
    expect((await run.call("env", { name: "PROBE_SETTING" })).text).toBe("on");
    const info = inspect(`mcpmgr-${name}`);
    expect(info.Config.Labels).toMatchObject({
      mcpmgr: "true",
      "mcpmgr.workload": name,
      "mcpmgr.transport": "stdio",
      "mcpmgr.group": "default",
      team: "search",
      tier: "dev",
    });
    expect(Number(info.Config.Labels["mcpmgr.port"])).toBeGreaterThan(0);
    expect(info.HostConfig.CapDrop).toEqual(["ALL"]);
    expect(info.HostConfig.SecurityOpt).toEqual(["no-new-privileges"]);
    expect(info.HostConfig.Privileged).toBe(false);
    expect(info.HostConfig.Memory).toBeGreaterThan(0);
    expect(info.HostConfig.PidsLimit).toBeGreaterThan(0);
    // The host's environment never reaches the container.
    expect((await run.call("env", { name: "MCPMGR_RUNTIME" })).text).toBe("(unset)");
    await run.client.close();
  } finally {
    expect(await run.stop("SIGTERM")).toBe(0);
  }
  expect(leftovers(name)).toEqual({ containers: [], networks: [] });
}, 120_000);

test("SIGHUP (a closed terminal or ssh session) stops a foreground run like SIGTERM: its container is removed", async () => {
  const name = "docker-hangup";
  const run = await runForeground([images.probe, "--name", name]);
  expect((await run.call("env", { name: "HOME" })).text).not.toBe("");
  await run.client.close();
  // By default SIGHUP ended mcpmgr at once, leaving mcpmgr-docker-hangup running with nobody to remove it.
  expect(await run.stop("SIGHUP")).toBe(0);
  expect(leftovers(name)).toEqual({ containers: [], networks: [] });
}, 120_000);

test("a killed foreground run's containers: the refusal says how to remove them, and that command does", async () => {
  const name = "docker-orphan";
  // What a foreground run killed with SIGKILL leaves: its container, labelled, with no record and nobody serving it.
  const { NODE_BASE_IMAGE } = await import("../support/docker-images.ts");
  docker("rm", "-f", `mcpmgr-${name}`);
  const made = docker(
    "run",
    "-d",
    "--name",
    `mcpmgr-${name}`,
    "--label",
    "mcpmgr=true",
    "--label",
    `mcpmgr.workload=${name}`,
    NODE_BASE_IMAGE,
    "sleep",
    "300",
  );
  expect(made.code).toBe(0);
  try {
    const refused = await runFails([images.probe, "--name", name]);
    expect(refused.code).toBe(1);
    const hint = /\(hint: .*remove what it left: (docker rm -f .*)\)$/m.exec(refused.err);
    expect(hint).not.toBeNull();
    const removal = Bun.spawnSync(["sh", "-c", hint?.[1] as string], { stdout: "pipe", stderr: "pipe" });
    expect(removal.exitCode).toBe(0);
    expect(leftovers(name).containers).toEqual([]);
  } finally {
    docker("rm", "-f", `mcpmgr-${name}`);
  }
}, 120_000);

test("an HTTP image is published on loopback only and reached through the forwarder; -p adds a port", async () => {
  const name = "docker-http";
  const extra = 20_000 + Math.floor(Math.random() * 20_000);
  const run = await runForeground([
    images.httpProbe,
    "--name",
    name,
    "--transport",
    "streamable-http",
    "--target-port",
    "9090",
    "-p",
    `${extra}:9090`,
  ]);
  try {
    const whoami = (await run.call("whoami")).text;
    expect(whoami).toContain("transport=streamable-http");
    expect(whoami).toContain("port=9090");
    expect(whoami).toContain("uid=");
    const info = inspect(`mcpmgr-${name}`);
    const bindings =
      (info.HostConfig.PortBindings as Record<string, { HostIp: string; HostPort: string }[]>)["9090/tcp"] ?? [];
    expect(bindings.length).toBe(2);
    for (const binding of bindings) expect(binding.HostIp).toBe("127.0.0.1");
    expect(bindings.map((b) => Number(b.HostPort))).toContain(extra);
    // The extra publish reaches the server directly.
    const direct = await fetch(`http://127.0.0.1:${extra}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    });
    expect(await direct.json()).toEqual({ jsonrpc: "2.0", id: 1, result: {} });
    await run.client.close();
  } finally {
    expect(await run.stop("SIGTERM")).toBe(0);
  }
  expect(leftovers(name).containers).toEqual([]);
}, 120_000);

describe("mounts and profiles", () => {
  test("-v mounts read-write and :ro read-only; relative host paths resolve; the host tree stays hidden", async () => {
    const rw = join(scratch, "rw");
    const ro = join(scratch, "ro");
    await mkdir(rw);
    await mkdir(ro);
    await writeFile(join(ro, "note.txt"), "read me");
    const run = await runForeground(
      [images.probe, "--name", "docker-mounts", "-v", "rw:/data", "-v", `${ro}:/config:ro`],
      {},
      scratch,
    );
    try {
      expect((await run.call("read_file", { path: "/config/note.txt" })).text).toBe("read me");
      const roWrite = await run.call("write_file", { path: "/config/new.txt" });
      expect(roWrite.isError).toBe(true);
      expect(roWrite.text).toBe("EROFS");
      // Runs as root in this image, but --cap-drop ALL removes DAC override: the mount's own modes still apply.
      const rwWrite = await run.call("write_file", { path: "/data/out.txt", text: "from the container" });
      expect(rwWrite.isError).toBe(false);
      expect(await Bun.file(join(rw, "out.txt")).text()).toBe("from the container");
      expect((await run.call("read_file", { path: join(scratch, "ro", "note.txt") })).isError).toBe(true);
      await run.client.close();
    } finally {
      await run.stop();
    }
  }, 120_000);

  test("profile none: the container has no network at all", async () => {
    const listener = Bun.listen({
      hostname: "0.0.0.0",
      port: 0,
      socket: {
        data() {},
        open(socket) {
          socket.end();
        },
      },
    });
    try {
      const run = await runForeground([images.probe, "--name", "docker-none", "--permission-profile", "none"]);
      try {
        expect(inspect("mcpmgr-docker-none").HostConfig.NetworkMode).toBe("none");
        const attempt = await run.call("tcp_connect", { host: networkGateway(), port: listener.port });
        expect(attempt.isError).toBe(true);
        await run.client.close();
      } finally {
        await run.stop();
      }
      // The same probe on the default bridge does reach the host: the test can fail.
      const open = await runForeground([images.probe, "--name", "docker-bridge"]);
      try {
        expect((await open.call("tcp_connect", { host: networkGateway(), port: listener.port })).text).toBe(
          "connected",
        );
        await open.client.close();
      } finally {
        await open.stop();
      }
    } finally {
      listener.stop(true);
    }
  }, 120_000);
});

test(".mcpmgrignore and the global ignore file hide files and directories; --print-resolved-overlays shows them", async () => {
  const project = join(scratch, "project");
  await mkdir(join(project, "private"), { recursive: true });
  await writeFile(join(project, ".mcpmgrignore"), "private/\n*.key\n");
  await writeFile(join(project, "server.key"), "KEY");
  await writeFile(join(project, "private", "data.txt"), "PRIVATE");
  await writeFile(join(project, "readme.txt"), "public");
  await writeFile(join(project, ".env"), "TOKEN=1");
  const home = await mkdtemp(join(tmpdir(), "mcpmgr-docker-home-"));
  await mkdir(join(home, "config"), { recursive: true });
  // MCPMGR_HOME puts the config directory at $MCPMGR_HOME/config.
  await writeFile(join(home, "config", "mcpmgrignore"), ".env\n");
  const run = await runForeground(
    [images.probe, "--name", "docker-ignore", "-v", `${project}:/work`, "--print-resolved-overlays"],
    { MCPMGR_HOME: home },
  );
  try {
    expect(run.output()).toContain("/work/.env (file)");
    expect(run.output()).toContain("/work/private (dir)");
    expect(run.output()).toContain("/work/server.key (file)");
    expect((await run.call("read_file", { path: "/work/readme.txt" })).text).toBe("public");
    expect((await run.call("read_file", { path: "/work/server.key" })).text).toBe("");
    expect((await run.call("read_file", { path: "/work/.env" })).text).toBe("");
    expect((await run.call("read_file", { path: "/work/private/data.txt" })).isError).toBe(true);
    // The server cannot edit the patterns that hide things from it, even on a writable mount.
    expect((await run.call("write_file", { path: "/work/.mcpmgrignore", text: "" })).text).toBe("EROFS");
    await run.client.close();
  } finally {
    await run.stop();
  }
  // --ignore-globally=false: only the directory's own file applies.
  const local = await runForeground(
    [images.probe, "--name", "docker-ignore-local", "-v", `${project}:/work`, "--ignore-globally=false"],
    { MCPMGR_HOME: home },
  );
  try {
    expect((await local.call("read_file", { path: "/work/.env" })).text).toBe("TOKEN=1");
    expect((await local.call("read_file", { path: "/work/server.key" })).text).toBe("");
    await local.client.close();
  } finally {
    await local.stop();
    await rm(home, { recursive: true, force: true });
  }
}, 120_000);

test("a registry entry with an image runs in a container with the entry's defaults", async () => {
  const registry = join(scratch, "registry.json");
  await writeFile(
    registry,
    JSON.stringify({
      servers: [
        {
          name: "probe-image",
          description: "the probe as an image entry",
          transport: "stdio",
          source: { image: images.probe },
          permissions: "none",
          tools: ["env"],
          env: [{ name: "PROBE_MODE", default: "from-entry" }],
        },
        {
          name: "http-image",
          description: "the HTTP probe as an image entry",
          transport: "streamable-http",
          targetPort: 7070,
          source: { image: images.httpProbe },
          permissions: "network",
          tools: ["whoami"],
        },
      ],
    }),
  );
  const run = await runForeground(["probe-image"], { MCPMGR_REGISTRY: registry });
  try {
    expect((await run.call("env", { name: "PROBE_MODE" })).text).toBe("from-entry");
    expect(inspect("mcpmgr-probe-image").HostConfig.NetworkMode).toBe("none");
    await run.client.close();
  } finally {
    await run.stop();
  }
  const http = await runForeground(["http-image"], { MCPMGR_REGISTRY: registry });
  try {
    expect((await http.call("whoami")).text).toContain("port=7070");
    await http.client.close();
  } finally {
    await http.stop();
  }
}, 120_000);

test("a network that does not exist is a clear error, and nothing is left behind", async () => {
  const { code, err } = await runFails([
    images.probe,
    "--name",
    "docker-no-net",
    "--network",
    "mcpmgr-no-such-network",
  ]);
  expect(code).toBe(2);
  expect(err).toContain("docker network create");
  expect(err).toContain("mcpmgr-no-such-network");
  // One error line (after the summary of what the workload would get).
  expect(
    err
      .trim()
      .split("\n")
      .filter((line) => line.includes("[error]")),
  ).toHaveLength(1);
  expect(err).toContain("docker-no-net gets (docker container");
  expect(leftovers("docker-no-net").containers).toEqual([]);
});

/**
 * `run --foreground` of a container whose "server" never answers initialize (node-base has no
 * entrypoint), so the run stays in its handshake until it is interrupted.
 */
async function runNeverReady(name: string) {
  const { NODE_BASE_IMAGE } = await import("../support/docker-images.ts");
  return Bun.spawn(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      "--foreground",
      NODE_BASE_IMAGE,
      "--name",
      name,
      "--",
      "node",
      "-e",
      "setInterval(() => {}, 1e6)",
    ],
    { env: { ...process.env, MCPMGR_RUNTIME: "docker", NO_COLOR: "1" }, stdout: "pipe", stderr: "pipe" },
  );
}

test("Ctrl-C while the server is still starting leaves no container behind", async () => {
  const name = "docker-ctrl-c";
  const proc = await runNeverReady(name);
  expect(await until(() => leftovers(name).containers.length === 1, 30_000)).toBe(true);
  proc.kill("SIGINT");
  expect(await proc.exited).toBe(130);
  expect(await new Response(proc.stderr).text()).toContain("while it was starting");
  expect(leftovers(name)).toEqual({ containers: [], networks: [] });
}, 60_000);

test("two Ctrl-C in quick succession while the server is still starting: the first is acknowledged, and no container is left behind", async () => {
  // The first gives the start a while to wind down; the second quits at once. The container, already
  // up, is asked to go at the first: left to the wind-down, a second Ctrl-C 50 ms later left it running.
  const name = "docker-ctrl-c-twice";
  const proc = await runNeverReady(name);
  try {
    expect(await until(() => leftovers(name).containers.length === 1, 30_000)).toBe(true);
    proc.kill("SIGINT");
    await Bun.sleep(50); // a keypress's distance, not a wait for anything
    proc.kill("SIGINT");
    expect(await proc.exited).toBe(130);
    expect(await new Response(proc.stderr).text()).toContain(
      `SIGINT: stopping ${name} while it starts (Ctrl-C again quits at once)`,
    );
    // The engine finishes the removal it was asked for after the client is gone.
    expect(await until(() => leftovers(name).containers.length === 0, 10_000)).toBe(true);
  } finally {
    proc.kill("SIGKILL");
    const left = leftovers(name).containers;
    if (left.length > 0) docker("rm", "-f", ...left);
  }
}, 60_000);

test("a second foreground run cannot take over a name in use; mcpmgr's own directories stay hidden under a mount", async () => {
  const home = join(scratch, "home-under-mount");
  await mkdir(join(home, "config"), { recursive: true });
  await writeFile(join(home, "config", "marker.txt"), "mcpmgr state");
  const first = await runForeground([images.probe, "--name", "docker-taken", "-v", `${scratch}:/scratch:ro`], {
    MCPMGR_HOME: home,
  });
  try {
    // The mount covers MCPMGR_HOME: its directories are empty in the container.
    expect((await first.call("read_file", { path: "/scratch/home-under-mount/config/marker.txt" })).text).toBe(
      "ENOENT",
    );
    // The same home: the name is held by the first run.
    const second = await runFails([images.probe, "--name", "docker-taken"], { MCPMGR_HOME: home });
    expect(second.code).toBe(1);
    expect(second.err).toContain("a foreground run named docker-taken is running");
    // Another home on the same engine: the container name is another installation's.
    const elsewhere = await runFails([images.probe, "--name", "docker-taken"]);
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.err).toContain("is taken on this docker engine by another mcpmgr installation's workload");
    expect((await first.call("env", { name: "HOME" })).isError).toBe(false);
    await first.client.close();
  } finally {
    await first.stop();
  }
}, 120_000);

describe("image verification and pulls", () => {
  test("enabled refuses a tag-only image; a digest-pinned one runs; warn warns; disabled is silent", async () => {
    const refused = await runFails([images.probe, "--image-verification", "enabled"]);
    expect(refused.code).toBe(1);
    expect(refused.err).toContain("image verification failed");

    const id = docker("image", "inspect", images.probe, "--format", "{{.Id}}").out;
    const repo = images.probe.split(":")[0] as string;
    const pinned = await runForeground([`${repo}@${id}`, "--name", "docker-pinned", "--image-verification", "enabled"]);
    try {
      expect((await pinned.call("env", { name: "HOME" })).isError).toBe(false);
      expect(pinned.output()).not.toContain("image verification");
      await pinned.client.close();
    } finally {
      await pinned.stop();
    }

    const warned = await runForeground([images.probe, "--name", "docker-warn"]);
    await warned.client.close();
    await warned.stop();
    expect(warned.output()).toContain("image verification: ");

    const silent = await runForeground([images.probe, "--name", "docker-silent", "--image-verification", "disabled"]);
    await silent.client.close();
    await silent.stop();
    expect(silent.output()).not.toContain("image verification");
  }, 180_000);

  test("a missing image that cannot be pulled is a clear error", async () => {
    const { code, err } = await runFails(["127.0.0.1:9/mcpmgr/absent:1"]);
    expect(code).toBe(1);
    expect(err).toContain("could not pull 127.0.0.1:9/mcpmgr/absent:1");
    expect(err).toContain("hint:");
    expect(err).not.toContain("    at ");
  }, 60_000);
});
