/**
 * Whether a Docker server container gets the set-ID guard is decided by the engine's own answer
 * (its `info`: Linux, x86_64) and the image's config (linux/amd64), not by this host's architecture
 * or by the socket being local: a local socket can reach another machine's engine (SSH-forwarded,
 * or a virtual machine's on an arm64 Mac), where the x86_64 guard would fail the start. This
 * machine's dockerd gives the positive answers and a real arm64 image config (loaded from a
 * hand-made archive: the engine reports what the image says); another machine's engine is an
 * `info` answer in Docker's format served on a Unix socket.
 */
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import { pack } from "tar-stream";
import type { ContainerEngine } from "../../src/runtime/docker/engine.ts";
import { guardApplies, imageTakesGuard } from "../../src/runtime/docker/setid-guard.ts";
import { enginePlatform, RETRY_AFTER_MS } from "../../src/runtime/docker/setid-seccomp.ts";
import type { ContainerPlacement } from "../../src/workload/placement.ts";
import { lookUpWhilePreparing, setIdGuardFor } from "../../src/workload/launch-container.ts";
import { specFor, testContext } from "../support/workload-context.ts";

setDefaultTimeout(60_000);

const dir = mkdtempSync(join(tmpdir(), "mcpmgr-guard-platform-"));
const volume = join(dir, "data");
mkdirSync(volume);
const servers: ReturnType<typeof Bun.serve>[] = [];
const local: ContainerEngine = {
  kind: "docker",
  endpoint: "/var/run/docker.sock",
  docker: new Docker({ socketPath: "/var/run/docker.sock" }),
};
const tags = { amd64: "mcpmgr-test/guard-platform:amd64", arm64: "mcpmgr-test/guard-platform:arm64" };
afterAll(async () => {
  for (const server of servers) server.stop(true);
  for (const tag of Object.values(tags))
    await local.docker
      .getImage(tag)
      .remove({ force: true })
      .catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

/**
 * An arm64 engine's `info`, as Docker 24 in colima's virtual machine on an Apple silicon Mac gives it
 * (written by hand in Docker's format, the fields read and a few around them; no arm64 engine here).
 */
const ARM64_INFO = {
  ID: "5f3a0c7e-0b9b-4c55-9d1e-2f6f4c1d8e21",
  ServerVersion: "24.0.7",
  OSType: "linux",
  Architecture: "aarch64",
  OperatingSystem: "Ubuntu 23.10",
  KernelVersion: "6.5.0-14-generic",
  NCPU: 2,
  SecurityOptions: ["name=apparmor", "name=seccomp,profile=builtin", "name=cgroupns"],
};

/** An engine that answers `info` as recorded (and nothing else), on a local Unix socket. */
function recordedEngine(label: string, info: object): ContainerEngine {
  const socket = join(dir, `${label}.sock`);
  servers.push(
    Bun.serve({
      unix: socket,
      fetch: (req) =>
        new URL(req.url).pathname.endsWith("/info") ? Response.json(info) : new Response("not found", { status: 404 }),
    }),
  );
  return { kind: "docker", endpoint: socket, docker: new Docker({ socketPath: socket }) };
}

/** Loads a one-file image whose config says linux/ARCH into the real engine (nothing runs it). */
async function loadImage(architecture: string, tag: string): Promise<string> {
  const layer = await tarOf([["hello", Buffer.from("hello\n")]]);
  const diffId = `sha256:${createHash("sha256").update(layer).digest("hex")}`;
  const config = Buffer.from(
    JSON.stringify({
      architecture,
      os: "linux",
      config: { Entrypoint: ["/hello"] },
      rootfs: { type: "layers", diff_ids: [diffId] },
    }),
  );
  const manifest = Buffer.from(JSON.stringify([{ Config: "config.json", RepoTags: [tag], Layers: ["layer.tar"] }]));
  const archive = await tarOf([
    ["layer.tar", layer],
    ["config.json", config],
    ["manifest.json", manifest],
  ]);
  const stream = await local.docker.loadImage(archive as never);
  await new Promise((resolve, reject) =>
    local.docker.modem.followProgress(stream, (e) => (e ? reject(e) : resolve(0))),
  );
  return (await local.docker.getImage(tag).inspect()).Id;
}

function tarOf(entries: [string, Buffer][]): Promise<Buffer> {
  const tar = pack();
  for (const [name, content] of entries) tar.entry({ name, mode: 0o755 }, content);
  tar.finalize();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    tar.on("data", (chunk: unknown) => chunks.push(chunk as Buffer));
    tar.on("end", () => resolve(Buffer.concat(chunks)));
    tar.on("error", reject);
  });
}

/** A container placement of `run IMAGE -v VOLUME:/data` on `engine`. */
function placementOn(engine: ContainerEngine): ContainerPlacement {
  const spec = specFor(["srv/image", "-v", `${volume}:/data`], { runtime: "container" });
  return { ...(spec.placement as ContainerPlacement), engine };
}

async function warnings(engine: ContainerEngine, image: string): Promise<string[]> {
  const { ctx, logged } = testContext();
  const placement = placementOn(engine);
  const spec = specFor(["srv/image", "-v", `${volume}:/data`], { runtime: "container" });
  await lookUpWhilePreparing(spec, placement, ctx, async () => image);
  return logged.filter((line) => line.startsWith("warn:") && line.includes("set-user-ID"));
}

test("this machine's dockerd says linux/x86_64: the guard applies, for its amd64 image, with no warning", async () => {
  expect(await enginePlatform(local)).toEqual({ os: "linux", architecture: "x86_64" });
  expect(guardApplies(local, await enginePlatform(local))).toBe(true);
  const image = await loadImage("amd64", tags.amd64);
  const facts = await local.docker.getImage(image).inspect();
  expect(imageTakesGuard({ os: facts.Os, architecture: facts.Architecture })).toBe(true);
  expect(await warnings(local, image)).toEqual([]);
  const guard = await setIdGuardFor(placementOn(local), image);
  expect(guard?.command.Entrypoint).toEqual(["/.mcpmgr-setid-guard/guard", "/.mcpmgr-setid-guard/filter", "/hello"]);
});

test("an arm64 engine on a local socket (colima's on a Mac, or an SSH-forwarded one): no guard, the warning", async () => {
  const engine = recordedEngine("arm64", ARM64_INFO);
  expect(await enginePlatform(engine)).toEqual({ os: "linux", architecture: "aarch64" });
  expect(guardApplies(engine, await enginePlatform(engine))).toBe(false);
  const said = await warnings(engine, "sha256:unused");
  expect(said).toHaveLength(1);
  expect(said[0]).toContain(volume);
  expect(said[0]).toContain("set-ID guard cannot run on this engine or image");
  expect(await setIdGuardFor(placementOn(engine), "sha256:unused")).toBeUndefined();
});

test("an engine that does not say Linux on x86_64, or does not answer, gets no guard", async () => {
  const windows = recordedEngine("windows", { ...ARM64_INFO, OSType: "windows", Architecture: "x86_64" });
  expect(guardApplies(windows, await enginePlatform(windows))).toBe(false);
  const silent = recordedEngine("silent", {});
  expect(guardApplies(silent, await enginePlatform(silent))).toBe(false);
  const gone: ContainerEngine = {
    kind: "docker",
    endpoint: join(dir, "nothing.sock"),
    docker: new Docker({ socketPath: join(dir, "nothing.sock") }),
  };
  expect(await enginePlatform(gone)).toBeUndefined();
  expect(guardApplies(gone, undefined)).toBe(false);
  // Over TCP the engine is not asked (and the guard not given), whatever it would say.
  const tcp: ContainerEngine = { kind: "docker", endpoint: "tcp://127.0.0.1:1", docker: local.docker };
  expect(await enginePlatform(tcp)).toBeUndefined();
  expect(guardApplies(tcp, { os: "linux", architecture: "x86_64" })).toBe(false);
  // Podman is never given the guard.
  expect(
    guardApplies(
      { ...local, kind: "podman", endpoint: join(dir, "podman.sock") },
      { os: "linux", architecture: "x86_64" },
    ),
  ).toBe(false);
});

test("an arm64 image on the x86_64 engine (it would run under emulation): no guard in front of it, and the warning", async () => {
  const image = await loadImage("arm64", tags.arm64);
  const facts = await local.docker.getImage(image).inspect();
  expect([facts.Os, facts.Architecture]).toEqual(["linux", "arm64"]);
  expect(guardApplies(local, await enginePlatform(local))).toBe(true);
  expect(await setIdGuardFor(placementOn(local), image)).toBeUndefined();
  const said = await warnings(local, image);
  expect(said).toHaveLength(1);
  expect(said[0]).toContain(volume);
});

test("one start decides the warning and the guard from one answer, even when a failed one comes due while the image is prepared", async () => {
  // An engine that did not answer (a dockerd restarting), asked by an earlier start just under
  // RETRY_AFTER_MS ago; it answers again (a Unix-socket relay to this machine's dockerd) by now.
  const socket = join(dir, "restarted.sock");
  const engine: ContainerEngine = { kind: "docker", endpoint: socket, docker: new Docker({ socketPath: socket }) };
  expect(await enginePlatform(engine, Date.now() - RETRY_AFTER_MS + 500)).toBeUndefined();
  const dueAt = Date.now() + 600;
  servers.push(
    Bun.serve({
      unix: socket,
      fetch: async (req) => {
        const url = new URL(req.url);
        const body = req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer();
        return fetch(`http://docker${url.pathname}${url.search}`, {
          method: req.method,
          headers: req.headers,
          ...(body ? { body } : {}),
          unix: "/var/run/docker.sock",
        } as RequestInit);
      },
    }),
  );
  const image = await loadImage("amd64", tags.amd64);
  const { ctx, logged } = testContext();
  const placement = placementOn(engine);
  const spec = specFor(["srv/image", "-v", `${volume}:/data`], { runtime: "container" });
  const now = Date.now();
  // The image's preparation lasts until the failed answer is due for its retry.
  await lookUpWhilePreparing(
    spec,
    placement,
    ctx,
    async () => {
      while (Date.now() < dueAt) await Bun.sleep(20);
      return image;
    },
    now,
  );
  const warned = logged.filter((line) => line.startsWith("warn:") && line.includes("set-user-ID")).length;
  const guard = await setIdGuardFor(placement, image, now);
  // Warned from the failed answer: no guard from a newer one (never both, never neither).
  expect([warned, guard !== undefined]).toEqual([1, false]);
});
