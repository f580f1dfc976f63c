/** Choosing a container engine: MCPMGR_RUNTIME, the sockets tried and their order, detection. */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  detectEngine,
  engineCandidates,
  engineKindOf,
  noEngineError,
  runtimeChoice,
} from "../../src/runtime/docker/engine.ts";
import { rejection } from "../support/errors.ts";

/** Runs a synchronous call as a promise, so rejection() can check what it throws. */
const attempt = async (fn: () => unknown) => fn();

const summary = (candidates: ReturnType<typeof engineCandidates>) => candidates.map((c) => [c.kind, c.endpoint]);

describe("runtimeChoice", () => {
  test.each([
    [undefined, undefined],
    ["", undefined],
    ["docker", "docker"],
    ["podman", "podman"],
    ["process", "process"],
  ] as const)("MCPMGR_RUNTIME=%p → %p", (value, expected) => {
    expect(runtimeChoice(value === undefined ? {} : { MCPMGR_RUNTIME: value })).toBe(expected);
  });

  test.each(["Docker", "containerd", "auto", " docker"])("MCPMGR_RUNTIME=%p is INVALID_OPTION", async (value) => {
    await rejection(
      attempt(() => runtimeChoice({ MCPMGR_RUNTIME: value })),
      "INVALID_OPTION",
    );
  });
});

describe("engineCandidates", () => {
  const home = "/home/u";

  test("without DOCKER_HOST: the user's rootless Podman and Docker, the system's, then Desktop (macOS, Linux), Colima, Rancher, OrbStack, Podman machine", () => {
    expect(summary(engineCandidates({ XDG_RUNTIME_DIR: "/run/user/1000" }, "linux", home))).toEqual([
      ["podman", "/run/user/1000/podman/podman.sock"],
      ["docker", "/run/user/1000/docker.sock"],
      ["podman", "/run/podman/podman.sock"],
      ["docker", "/var/run/docker.sock"],
      ["docker", "/home/u/.docker/run/docker.sock"],
      ["docker", "/home/u/.docker/desktop/docker.sock"],
      ["docker", "/home/u/.colima/default/docker.sock"],
      ["docker", "/home/u/.colima/docker.sock"],
      ["docker", "/home/u/.rd/docker.sock"],
      ["docker", "/home/u/.orbstack/run/docker.sock"],
      ["podman", "/home/u/.local/share/containers/podman/machine/podman.sock"],
    ]);
  });

  test("every local candidate is a socket path", () => {
    for (const candidate of engineCandidates({ XDG_RUNTIME_DIR: "/xdg" }, "darwin", home)) {
      expect(candidate.options).toEqual({ socketPath: candidate.endpoint });
    }
  });

  test("DOCKER_HOST unix:// comes first, as a socket path; a podman path makes it a Podman engine", () => {
    const [first, second] = engineCandidates(
      { DOCKER_HOST: "unix:///tmp/engine.sock", XDG_RUNTIME_DIR: "/xdg" },
      "linux",
      home,
    );
    expect(first).toEqual({
      kind: "docker",
      endpoint: "unix:///tmp/engine.sock",
      options: { socketPath: "/tmp/engine.sock" },
    });
    expect(second?.endpoint).toBe("/xdg/podman/podman.sock");

    const [podman] = engineCandidates({ DOCKER_HOST: "unix:///run/user/1000/podman/podman.sock" }, "linux", home);
    expect(podman).toMatchObject({ kind: "podman", options: { socketPath: "/run/user/1000/podman/podman.sock" } });
  });

  test("DOCKER_HOST tcp:// becomes host and port (2375 by default), https:// uses 2376", () => {
    const plain = process.env.DOCKER_TLS_VERIFY === "1" ? "https" : "http";
    const [withPort] = engineCandidates({ DOCKER_HOST: "tcp://10.0.0.5:2380" }, "linux", home);
    expect(withPort).toEqual({
      kind: "docker",
      endpoint: "tcp://10.0.0.5:2380",
      options: { host: "10.0.0.5", port: 2380, protocol: plain },
    });
    const [noPort] = engineCandidates({ DOCKER_HOST: "tcp://engine.local" }, "linux", home);
    expect(noPort?.options).toMatchObject({ host: "engine.local", port: plain === "https" ? 2376 : 2375 });
    const [tls] = engineCandidates({ DOCKER_HOST: "https://engine.local" }, "linux", home);
    expect(tls?.options).toEqual({ host: "engine.local", port: 2376, protocol: "https" });
  });

  test("DOCKER_HOST ssh:// is refused with a hint to forward the socket", () => {
    expect(() => engineCandidates({ DOCKER_HOST: "ssh://me@build-host" }, "linux", home)).toThrow(
      "engines over ssh:// are not supported",
    );
  });

  test("DOCKER_HOST npipe:// becomes a Windows pipe path; on win32 only the named pipes follow", () => {
    const list = engineCandidates(
      { DOCKER_HOST: "npipe:////./pipe/docker_engine_custom", XDG_RUNTIME_DIR: "/xdg" },
      "win32",
      "C:\\Users\\u",
    );
    expect(list).toEqual([
      {
        kind: "docker",
        endpoint: "npipe:////./pipe/docker_engine_custom",
        options: { socketPath: "\\\\.\\pipe\\docker_engine_custom" },
      },
      { kind: "docker", endpoint: "\\\\.\\pipe\\docker_engine", options: { socketPath: "\\\\.\\pipe\\docker_engine" } },
      {
        kind: "podman",
        endpoint: "\\\\.\\pipe\\podman-machine-default",
        options: { socketPath: "\\\\.\\pipe\\podman-machine-default" },
      },
    ]);
  });

  test("CONTAINER_HOST follows DOCKER_HOST and is always Podman", () => {
    const [docker, podman] = engineCandidates(
      { DOCKER_HOST: "unix:///a.sock", CONTAINER_HOST: "unix:///b.sock" },
      "linux",
      home,
    );
    expect(docker).toMatchObject({ kind: "docker", endpoint: "unix:///a.sock" });
    expect(podman).toMatchObject({ kind: "podman", endpoint: "unix:///b.sock", options: { socketPath: "/b.sock" } });
  });

  test.each(["ssh://user@host", "/var/run/docker.sock", "fd://", "docker.sock"])(
    "DOCKER_HOST=%p is INVALID_OPTION",
    async (value) => {
      await rejection(
        attempt(() => engineCandidates({ DOCKER_HOST: value }, "linux", home)),
        "INVALID_OPTION",
      );
    },
  );
});

describe("detectEngine", () => {
  // A per-user Podman socket is looked for under XDG_RUNTIME_DIR: an empty directory of the
  // test's own leaves only the system-wide places, which no Podman service uses on this machine
  // or in CI (the Podman tests start theirs on a socket in a temporary directory).
  const runtimeDir = mkdtempSync(join(tmpdir(), "mcpmgr-engine-"));
  afterAll(() => rmSync(runtimeDir, { recursive: true, force: true }));
  const noPodmanSocketIn = (env: Record<string, string>) =>
    engineCandidates(env)
      .filter((candidate) => candidate.kind === "podman")
      .map((candidate) => candidate.endpoint)
      .filter((endpoint) => existsSync(endpoint));

  test("want podman, DOCKER_HOST at a missing socket, no Podman socket here → undefined", async () => {
    const env = { DOCKER_HOST: "unix:///nonexistent.sock", XDG_RUNTIME_DIR: runtimeDir };
    expect(noPodmanSocketIn(env)).toEqual([]);
    expect(await detectEngine({ env, want: "podman", timeoutMs: 500 })).toBeUndefined();
  });

  // These need the Docker engine .ci/run starts: they fail, not skip, without it.

  test("finds the running Docker engine on its default socket, and it answers a ping", async () => {
    const env = { XDG_RUNTIME_DIR: runtimeDir };
    expect(noPodmanSocketIn(env)).toEqual([]);
    const engine = await detectEngine({ env });
    expect(engine?.kind).toBe("docker");
    expect(engine?.endpoint).toBe("/var/run/docker.sock");
    expect(String(await engine?.docker.ping())).toBe("OK");
  });

  test("rootless Docker (its socket in XDG_RUNTIME_DIR, reached through a docker context, no DOCKER_HOST) is found before the system's", async () => {
    // The real engine's socket, linked where rootless Docker puts its own, in a folder of this user's.
    const rootless = mkdtempSync(join(tmpdir(), "mcpmgr-engine-rootless-"));
    try {
      symlinkSync("/var/run/docker.sock", join(rootless, "docker.sock"));
      const env = { XDG_RUNTIME_DIR: rootless };
      expect(noPodmanSocketIn(env)).toEqual([]);
      const engine = await detectEngine({ env });
      expect(engine).toMatchObject({ kind: "docker", endpoint: join(rootless, "docker.sock") });
      expect(String(await engine?.docker.ping())).toBe("OK");
    } finally {
      rmSync(rootless, { recursive: true, force: true });
    }
  });

  test("DOCKER_HOST at the Docker socket is reported by its DOCKER_HOST form", async () => {
    const engine = await detectEngine({ env: { DOCKER_HOST: "unix:///var/run/docker.sock" } });
    expect(engine).toMatchObject({ kind: "docker", endpoint: "unix:///var/run/docker.sock" });
  });

  test("the kind is what the engine says it is, not what was asked for: podman wanted, DOCKER_HOST at Docker → docker", async () => {
    const engine = await detectEngine({ env: { DOCKER_HOST: "unix:///var/run/docker.sock" }, want: "podman" });
    expect(engine).toMatchObject({ kind: "docker", endpoint: "unix:///var/run/docker.sock" });
  });

  test("CONTAINER_HOST, Podman's variable, is passed over when its engine is not of the kind MCPMGR_RUNTIME wants", async () => {
    // The Docker socket stands for the engine of the other kind (under MCPMGR_RUNTIME=docker, a Podman
    // engine CONTAINER_HOST named was used): with no Podman socket here, nothing is found.
    const env = { CONTAINER_HOST: "unix:///var/run/docker.sock", XDG_RUNTIME_DIR: runtimeDir };
    expect(noPodmanSocketIn(env)).toEqual([]);
    expect(await detectEngine({ env, want: "podman", timeoutMs: 500 })).toBeUndefined();
    // Of the kind wanted, or with no kind wanted, it is used.
    expect(await detectEngine({ env, want: "docker" })).toMatchObject({
      kind: "docker",
      endpoint: "unix:///var/run/docker.sock",
    });
    expect(await detectEngine({ env })).toMatchObject({ kind: "docker", endpoint: "unix:///var/run/docker.sock" });
  });

  test("DOCKER_HOST at an engine that does not answer: no other engine is used, though Docker's default socket answers", async () => {
    // A workload's recorded engine is passed on as DOCKER_HOST: the next socket that answered took it over.
    for (const want of [undefined, "docker"] as const) {
      const env = { DOCKER_HOST: "unix:///nonexistent.sock", XDG_RUNTIME_DIR: runtimeDir };
      expect(await detectEngine({ env, ...(want ? { want } : {}), timeoutMs: 500 })).toBeUndefined();
    }
    expect(await detectEngine({ env: { XDG_RUNTIME_DIR: runtimeDir } })).toMatchObject({ kind: "docker" });
  });

  test("the real Docker engine's /version answer reads as docker", async () => {
    const engine = await detectEngine({ env: { DOCKER_HOST: "unix:///var/run/docker.sock" } });
    expect(engine).toBeDefined();
    const answer = (await engine?.docker.version()) as { Version?: string; Platform?: { Name?: string } };
    expect(answer.Version).toBeString();
    expect(engineKindOf(answer)).toBe("docker");
  });
});

describe("an engine socket in another user's reach", () => {
  // Whoever answers on the socket mcpmgr picks receives every container's environment (its
  // secrets) and plays its server. With XDG_RUNTIME_DIR in a folder every user may write (as
  // /tmp: sticky, root's), another user makes podman/podman.sock first: a listening socket of
  // uid OTHER that answers as a Podman engine and counts what it is asked.
  const OTHER = 61234;
  const shared = mkdtempSync(join(tmpdir(), "mcpmgr-engine-shared-"));
  chmodSync(shared, 0o1777);
  mkdirSync(join(shared, "podman"));
  const planted = join(shared, "podman", "podman.sock");
  let asked = 0;
  const impostor = Bun.serve({
    unix: planted,
    fetch(req) {
      asked += 1;
      const path = new URL(req.url).pathname.replace(/^\/v[\d.]+/, "");
      if (path === "/_ping") return new Response("OK");
      return Response.json({ Platform: { Name: "Podman Engine" }, Version: "4.3.1", ApiVersion: "1.41" });
    },
  });
  chownSync(join(shared, "podman"), OTHER, OTHER);
  chownSync(planted, OTHER, OTHER);
  afterAll(async () => {
    await impostor.stop(true);
    rmSync(shared, { recursive: true, force: true });
  });

  test("found by its usual place, it is passed over for the user's own engine, never asked", async () => {
    const engine = await detectEngine({ env: { XDG_RUNTIME_DIR: shared } });
    expect(engine?.endpoint).toBe("/var/run/docker.sock");
    expect(asked).toBe(0);
  });

  test("named by DOCKER_HOST (or recorded with a workload), it is refused, saying whose it is", async () => {
    const err = await rejection(detectEngine({ env: { DOCKER_HOST: `unix://${planted}` } }), "RUNTIME_UNAVAILABLE");
    expect(err.message).toContain(`${planted} belongs to uid ${OTHER}`);
    expect(err.hint).toContain("DOCKER_HOST");
    expect(asked).toBe(0);
  });

  test("the same socket of the user's own, in a folder of theirs, is used", async () => {
    chownSync(join(shared, "podman"), 0, 0);
    chownSync(planted, 0, 0);
    try {
      const engine = await detectEngine({ env: { XDG_RUNTIME_DIR: shared } });
      expect(engine).toMatchObject({ kind: "podman", endpoint: planted });
      expect(asked).toBeGreaterThan(0);
    } finally {
      chownSync(join(shared, "podman"), OTHER, OTHER);
      chownSync(planted, OTHER, OTHER);
    }
  });
});

test("engineKindOf: Podman names itself in Platform.Name or a component; anything else is Docker", () => {
  expect(engineKindOf({ Platform: { Name: "Podman Engine" }, Components: [{ Name: "Podman Engine" }] })).toBe("podman");
  expect(engineKindOf({ Components: [{ Name: "Conmon" }, { Name: "Podman Engine" }] })).toBe("podman");
  expect(
    engineKindOf({
      Platform: { Name: "Docker Engine - Community" },
      Components: [{ Name: "Engine" }, { Name: "containerd" }],
    }),
  ).toBe("docker");
  expect(engineKindOf({})).toBe("docker");
});

test("noEngineError is RUNTIME_UNAVAILABLE and names the engine asked for", () => {
  const err = noEngineError("MCPMGR_RUNTIME=podman", "podman");
  expect(err.code).toBe("RUNTIME_UNAVAILABLE");
  expect(err.message).toContain("podman");
  // Podman has no daemon to "start": the hint names its API socket and how to start it.
  expect(err.hint).toContain("podman.socket");
  expect(err.hint).toContain("podman system service");
  expect(err.hint).toContain("CONTAINER_HOST");
  expect(noEngineError("running an image").code).toBe("RUNTIME_UNAVAILABLE");
  expect(noEngineError("running an image").hint).toContain("DOCKER_HOST");
});
