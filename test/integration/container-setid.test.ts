/**
 * A container's root is the host's root on a rootful engine: a set-user-ID program it leaves in
 * a writable volume would run as root for the host's users (a `nosuid` mount in the container
 * does not reach the host's path). Against real engines: on Podman, `mcpmgr run` gives the
 * container Podman's own default profile refusing set-ID modes, so the planted program stays
 * without the bit and `nobody` runs it as `nobody`; on Docker, the same derived profile passed
 * as text is accepted and enforced (Docker compiles its default in, so `run` adds it only when
 * the daemon names a profile file; otherwise the set-ID guard does the refusing:
 * docker-setid-guard.test.ts). The warning is said where neither can be had: an engine reached over
 * TCP (its files are not this host's), here this machine's Docker behind a TCP forwarder, and an
 * engine on a local socket whose /info says another architecture than the guard's (a proxy rewrites it).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, lstatSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import { withoutSetIdModes } from "../../src/runtime/docker/setid-seccomp.ts";
import { fixtureImages, runInDocker, runInDockerFails, type FixtureImages } from "../support/docker-fixtures.ts";
import { startPodmanService, type PodmanService } from "../support/podman-service.ts";
import { freshIdVolume, idAsNobody } from "../support/setid-volume.ts";
import { CLI_ENTRY, spawnCollect } from "../support/processes.ts";

setDefaultTimeout(60_000);

let images: FixtureImages;
let podman: PodmanService;

beforeAll(async () => {
  images = await fixtureImages();
  podman = await startPodmanService("mcpmgr-setid-");
  // The probe image Docker built, copied into Podman's store.
  if (Bun.spawnSync(["podman", "image", "exists", `localhost/${images.probe}`]).exitCode !== 0) {
    const save = Bun.spawn(["docker", "save", images.probe], { stdout: "pipe" });
    const load = Bun.spawn(["podman", "load"], { stdin: save.stdout, stdout: "pipe", stderr: "pipe" });
    expect(await load.exited).toBe(0);
  }
}, 300_000);

afterAll(async () => {
  await podman?.stop();
});

const freshVolume = () => freshIdVolume("mcpmgr-setid-vol-");

test("Podman: the container's root cannot make a set-user-ID or set-group-ID file in a writable volume; nobody's id stays nobody's", async () => {
  const dir = freshVolume();
  const run = await runInDocker([`localhost/${images.probe}`, "--name", "podman-setid", "-v", `${dir}:/data`], {
    env: { MCPMGR_RUNTIME: "podman", DOCKER_HOST: `unix://${podman.socket}` },
  });
  try {
    for (const mode of [0o4755, 0o2755, 0o6755])
      expect(`${mode.toString(8)}: ${(await run.call("chmod", { path: "/data/id", mode })).text}`).toBe(
        `${mode.toString(8)}: EPERM`,
      );
    expect((await run.call("create_file", { path: "/data/made", mode: 0o4755 })).text).toBe("EPERM");
    expect((await run.call("make_dir", { path: "/data/shared", mode: 0o2775 })).text).toBe("EPERM");
    // Ordinary modes work, and opening a file that exists (its mode argument unused).
    expect((await run.call("chmod", { path: "/data/id", mode: 0o700 })).text).toBe("changed");
    expect((await run.call("chmod", { path: "/data/id", mode: 0o755 })).text).toBe("changed");
    expect((await run.call("create_file", { path: "/data/plain", mode: 0o644 })).text).toBe("created");
    expect((await run.call("make_dir", { path: "/data/dir", mode: 0o755 })).text).toBe("made");
    expect((await run.call("write_file", { path: "/data/plain", text: "x" })).text).toBe("written");
    expect((await run.call("read_file", { path: "/data/plain" })).text).toBe("x");
    for (const name of ["id", "plain", "dir"])
      expect(`${name}: ${lstatSync(join(dir, name)).mode & 0o6000}`).toBe(`${name}: 0`);
    expect(lstatSync(join(dir, "made"), { throwIfNoEntry: false })).toBeUndefined();
    // Podman's profile is extended: no warning.
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

test("Docker: the profile derived from an engine's default, passed as text, refuses set-ID modes and allows the rest", async () => {
  const dir = freshVolume();
  const profile = withoutSetIdModes(JSON.parse(readFileSync("/usr/share/containers/seccomp.json", "utf8")));
  const docker = new Docker();
  const container = await docker.createContainer({
    Image: images.probe,
    Entrypoint: ["sh", "-c"],
    Cmd: [
      "chmod 4755 /data/id; echo suid=$?; chmod 2755 /data/id; echo sgid=$?; chmod 700 /data/id; echo plain=$?; chmod 755 /data/id; cp /data/id /data/copy; echo copy=$?",
    ],
    HostConfig: {
      CapDrop: ["ALL"],
      SecurityOpt: ["no-new-privileges", `seccomp=${JSON.stringify(profile)}`],
      Mounts: [{ Type: "bind", Source: dir, Target: "/data" }],
    },
  });
  try {
    await container.start();
    expect((await container.wait()).StatusCode).toBe(0);
    const logs = (await container.logs({ stdout: true, stderr: false })).toString();
    expect(logs).toContain("suid=1");
    expect(logs).toContain("sgid=1");
    expect(logs).toContain("plain=0");
    expect(logs).toContain("copy=0");
    expect(lstatSync(join(dir, "id")).mode & 0o7777).toBe(0o755);
    expect(idAsNobody(dir)).not.toContain("euid=0");
  } finally {
    await container.remove({ force: true });
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Runs `script` in a hardened Docker container with the volume and `profile` as its seccomp profile; its output. */
async function inDockerWithProfile(dir: string, profile: object, script: string): Promise<string> {
  const container = await new Docker().createContainer({
    Image: images.probe,
    Entrypoint: ["sh", "-c"],
    Cmd: [script],
    HostConfig: {
      CapDrop: ["ALL"],
      SecurityOpt: ["no-new-privileges", `seccomp=${JSON.stringify(profile)}`],
      Mounts: [{ Type: "bind", Source: dir, Target: "/data" }],
    },
  });
  try {
    await container.start();
    expect((await container.wait()).StatusCode).toBe(0);
    return (await container.logs({ stdout: true, stderr: false })).toString();
  } finally {
    await container.remove({ force: true });
  }
}

test("Docker: a daemon profile that allows by default (a deny list) gets the refusals too", async () => {
  const dir = freshVolume();
  try {
    const denyList = {
      defaultAction: "SCMP_ACT_ALLOW",
      syscalls: [{ names: ["kexec_load"], action: "SCMP_ACT_ERRNO" }],
    };
    const logs = await inDockerWithProfile(
      dir,
      withoutSetIdModes(denyList),
      "chmod 4755 /data/id; echo suid=$?; chmod 700 /data/id; echo plain=$?; chmod 755 /data/id",
    );
    expect(logs).toContain("suid=1");
    expect(logs).toContain("plain=0");
    expect(lstatSync(join(dir, "id")).mode & 0o7777).toBe(0o755);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("Docker: a mode call the engine allowed only with a capability the container lacks stays refused", async () => {
  const dir = freshVolume();
  try {
    // Podman's default with chmod let run only for a holder of CAP_FOWNER (all are dropped).
    const engine = JSON.parse(readFileSync("/usr/share/containers/seccomp.json", "utf8")) as {
      syscalls: { names: string[]; action: string }[];
    };
    const syscalls = engine.syscalls.map((rule) => ({ ...rule, names: rule.names.filter((n) => n !== "chmod") }));
    syscalls.push({ names: ["chmod"], action: "SCMP_ACT_ALLOW", includes: { caps: ["CAP_FOWNER"] } } as never);
    const logs = await inDockerWithProfile(
      dir,
      withoutSetIdModes({ ...engine, syscalls: syscalls.filter((rule) => rule.names.length > 0) }),
      "chmod 700 /data/id; echo plain=$?",
    );
    expect(logs).toContain("plain=1");
    expect(lstatSync(join(dir, "id")).mode & 0o7777).toBe(0o755);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("Docker over TCP: run warns that a writable volume can receive a set-user-ID program, not for a read-only one", async () => {
  // Its files are not this host's: neither the daemon's profile file nor the guard can be used.
  const dir = freshVolume();
  const tcp = await slowInfoProxy(0, { tcp: true });
  try {
    const env = { DOCKER_HOST: tcp.dockerHost };
    const writable = await runInDocker([images.probe, "--name", "docker-setid-warn", "-v", `${dir}:/data`], { env });
    await writable.client.close();
    await writable.stop();
    expect(writable.output()).toContain(
      `docker-setid-warn's container can leave set-user-ID programs in its writable volumes (${dir})`,
    );
    const readOnly = await runInDocker([images.probe, "--name", "docker-setid-ro", "-v", `${dir}:/data:ro`], { env });
    await readOnly.client.close();
    await readOnly.stop();
    expect(readOnly.output()).not.toContain("set-user-ID");
  } finally {
    tcp.close();
    rmSync(dir, { recursive: true, force: true });
  }
}, 300_000);

test("Docker over TCP, a background run: the warning is in the terminal and in the workload's log", async () => {
  const dir = freshVolume();
  const home = mkdtempSync(join(tmpdir(), "mcpmgr-setid-home-"));
  const name = `docker-setid-bg-${process.pid}`;
  const tcp = await slowInfoProxy(0, { tcp: true });
  const env = {
    ...process.env,
    NO_COLOR: "1",
    MCPMGR_HOME: home,
    MCPMGR_RUNTIME: "docker",
    DOCKER_HOST: tcp.dockerHost,
  };
  const mcpmgr = (...args: string[]) => spawnCollect([process.execPath, CLI_ENTRY, ...args], env);
  const line = `${name}'s container can leave set-user-ID programs in its writable volumes (${dir})`;
  try {
    const run = await mcpmgr("run", images.probe, "--name", name, "-v", `${dir}:/data`);
    expect({ code: run.code, err: run.code === 0 ? "" : run.stderr }).toEqual({ code: 0, err: "" });
    // Once: the supervisor's line relayed during the first start must not repeat the preflight's.
    expect((run.stdout + run.stderr).split(line).length - 1).toBe(1);
    expect((await mcpmgr("logs", name, "--proxy")).stdout).toContain(line);
    // `restart` and `start` have no preflight: the supervisor's line is relayed, once, on stderr.
    const restarted = await mcpmgr("restart", name);
    expect({ code: restarted.code, said: restarted.stderr.split(line).length - 1 }).toEqual({ code: 0, said: 1 });
    expect(restarted.stdout).not.toContain(line);
    expect((await mcpmgr("stop", name)).code).toBe(0);
    const started = await mcpmgr("start", name);
    expect({ code: started.code, said: started.stderr.split(line).length - 1 }).toEqual({ code: 0, said: 1 });
  } finally {
    await mcpmgr("rm", name);
    tcp.close();
    rmSync(home, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  }
}, 300_000);

/**
 * The Docker socket behind a proxy that holds each `/info` request for `holdMs` (an engine slow to
 * answer, as Podman is under load) and notes which requests began while one was held: on a Unix
 * socket, or with `tcp` on a loopback port (an engine mcpmgr takes for another machine's); with
 * `armv7l` its /info says that architecture (the rest of the engine is this machine's).
 */
async function slowInfoProxy(holdMs: number, options: { tcp?: boolean; armv7l?: boolean } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "mcpmgr-slow-info-"));
  chmodSync(dir, 0o700);
  const path = join(dir, "engine.sock");
  let holding = 0;
  const duringHold: string[] = [];
  const server = createServer((client) => {
    const upstream = connect("/var/run/docker.sock");
    // An engine on another machine's architecture behind a local socket (forwarded over SSH, or a
    // virtual machine's): its /info says so. Same length, so the body's framing holds.
    if (options.armv7l)
      upstream.on("data", (chunk: Buffer) =>
        client.write(
          Buffer.from(chunk.toString("latin1").replace('"Architecture":"x86_64"', '"Architecture":"armv7l"'), "latin1"),
        ),
      );
    else upstream.pipe(client);
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
    client.on("close", () => upstream.destroy());
    client.on("data", (chunk) => {
      const request = /^[A-Z]+ (\S+) HTTP\//.exec(chunk.toString("latin1", 0, 300))?.[1];
      if (request !== undefined && holding > 0) duringHold.push(request);
      if (request === undefined || !/\/info(?:\?|$)/.test(request)) return void upstream.write(chunk);
      holding++;
      client.pause();
      setTimeout(() => {
        holding--;
        upstream.write(chunk);
        client.resume();
      }, holdMs);
    });
  });
  await new Promise<void>((resolve) =>
    options.tcp ? server.listen(0, "127.0.0.1", resolve) : server.listen(path, resolve),
  );
  const address = server.address();
  return {
    dockerHost:
      options.tcp && typeof address === "object" && address ? `tcp://127.0.0.1:${address.port}` : `unix://${path}`,
    duringHold,
    close: () => {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

test("a foreground run with a writable volume prepares the image while the engine's profile is looked up, and is guarded", async () => {
  const dir = freshVolume();
  const proxy = await slowInfoProxy(1500);
  try {
    const run = await runInDocker([images.probe, "--name", "docker-setid-overlap", "-v", `${dir}:/data`], {
      env: { DOCKER_HOST: proxy.dockerHost },
    });
    await run.client.close();
    await run.stop();
    // The daemon names no profile file: the set-ID guard protects the container, so no warning.
    expect(run.output()).not.toContain("set-user-ID");
    // The image is looked at while /info is held (it waited for the answer before: nothing began meanwhile).
    expect(proxy.duringHold.filter((request) => request.includes("/images/"))).not.toEqual([]);
  } finally {
    proxy.close();
    rmSync(dir, { recursive: true, force: true });
  }
}, 300_000);

test("a foreground run whose image cannot be pulled says the set-ID warning before the error, not after it or never", async () => {
  const dir = freshVolume();
  // The pull fails at once (nothing listens on port 1). Over TCP, where the warning is said (a local
  // Docker's containers get the guard instead, whatever its look-up answers).
  const proxy = await slowInfoProxy(1500, { tcp: true });
  try {
    const run = await runInDockerFails(
      ["localhost:1/mcpmgr-no-such-image:1", "--name", "docker-setid-nopull", "-v", `${dir}:/data`],
      {
        DOCKER_HOST: proxy.dockerHost,
      },
    );
    expect(run.code).toBe(1);
    const warning = run.err.indexOf("docker-setid-nopull's container can leave set-user-ID programs");
    const error = run.err.indexOf("could not pull localhost:1/mcpmgr-no-such-image:1");
    expect(error).toBeGreaterThan(-1);
    expect(warning).toBeGreaterThan(-1);
    expect(warning).toBeLessThan(error);
    expect(run.err.split("set-user-ID programs").length).toBe(2);
  } finally {
    proxy.close();
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);

test("a local socket whose engine says another architecture: no guard, the warning, and the server runs as before", async () => {
  const dir = freshVolume();
  const proxy = await slowInfoProxy(0, { armv7l: true });
  try {
    const run = await runInDocker([images.probe, "--name", "docker-setid-armv7l", "-v", `${dir}:/data`], {
      env: { DOCKER_HOST: proxy.dockerHost },
    });
    const entrypoint = (await new Docker().getContainer("mcpmgr-docker-setid-armv7l").inspect()).Config.Entrypoint;
    await run.client.close();
    await run.stop();
    expect(run.output()).toContain(
      `docker-setid-armv7l's container can leave set-user-ID programs in its writable volumes (${dir})`,
    );
    expect(JSON.stringify(entrypoint)).not.toContain(".mcpmgr-setid-guard");
  } finally {
    proxy.close();
    rmSync(dir, { recursive: true, force: true });
  }
}, 300_000);

test("on a local socket whose engine says another architecture, the warning comes before a pull error, also when /info is slow", async () => {
  const dir = freshVolume();
  const proxy = await slowInfoProxy(1500, { armv7l: true });
  try {
    const run = await runInDockerFails(
      ["localhost:1/mcpmgr-no-such-image:1", "--name", "docker-setid-armv7l-nopull", "-v", `${dir}:/data`],
      { DOCKER_HOST: proxy.dockerHost },
    );
    expect(run.code).toBe(1);
    const warning = run.err.indexOf("docker-setid-armv7l-nopull's container can leave set-user-ID programs");
    const error = run.err.indexOf("could not pull localhost:1/mcpmgr-no-such-image:1");
    expect(error).toBeGreaterThan(-1);
    expect(warning).toBeGreaterThan(-1);
    expect(warning).toBeLessThan(error);
  } finally {
    proxy.close();
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);
