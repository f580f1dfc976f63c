/**
 * A container engine that goes away under a running server and comes back (a crashed or
 * upgraded dockerd, a restarted `podman system service`): the server's exit must still be seen.
 * The engine's `wait` for the container is cut with the connection after its headers, and never
 * settles by itself; without the re-attach loop settling the exit, the workload stayed "running"
 * with every request hanging. Podman on a socket of the test's own, so no other test (nor
 * anyone sharing dockerd) sees its engine go away.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServerContainer } from "../../src/runtime/docker/container.ts";
import { detectEngine, type ContainerEngine } from "../../src/runtime/docker/engine.ts";
import { fixtureImages } from "../support/docker-fixtures.ts";

setDefaultTimeout(120_000);

let dir: string;
let socket: string;
let service: ReturnType<typeof Bun.spawn> | undefined;
let image: string;
let engine: ContainerEngine;

function podman(...args: string[]): { code: number; out: string } {
  const result = Bun.spawnSync(["podman", ...args], { stdout: "pipe", stderr: "pipe", env: withoutEngineEnv() });
  return { code: result.exitCode, out: `${result.stdout}${result.stderr}`.trim() };
}

/** The podman CLI talks to its own storage directly, not to an engine named by the environment. */
function withoutEngineEnv(): Record<string, string | undefined> {
  const { CONTAINER_HOST: _c, DOCKER_HOST: _d, ...rest } = process.env;
  return rest;
}

async function startService(): Promise<void> {
  service = Bun.spawn(["podman", "system", "service", "--time=0", `unix://${socket}`], {
    stdout: "ignore",
    stderr: "ignore",
    env: withoutEngineEnv(),
  });
  const deadline = Date.now() + 60_000;
  while (!existsSync(socket) && service.exitCode === null && Date.now() < deadline) await Bun.sleep(100);
  expect(existsSync(socket)).toBe(true);
}

async function stopService(): Promise<void> {
  service?.kill("SIGTERM");
  await service?.exited;
  rmSync(socket, { force: true });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "mcpmgr-podman-restart-"));
  socket = join(dir, "podman.sock");
  await startService();
  const images = await fixtureImages();
  image = `localhost/${images.probe}`;
  if (podman("image", "exists", image).code !== 0) {
    const save = Bun.spawn(["docker", "save", images.probe], { stdout: "pipe" });
    const load = Bun.spawn(["podman", "load"], { stdin: save.stdout, stdout: "pipe", stderr: "pipe" });
    expect(await load.exited).toBe(0);
  }
  const found = await detectEngine({ env: { DOCKER_HOST: `unix://${socket}` }, want: "podman" });
  if (found === undefined) throw new Error("podman system service did not answer");
  engine = found;
}, 300_000);

afterAll(async () => {
  podman("rm", "-f", "mcpmgr-engine-restart-test");
  await stopService();
  rmSync(dir, { recursive: true, force: true });
});

/** Reads JSON-RPC lines from the stdio server. */
async function firstLine(stream: ReadableStream<Uint8Array>): Promise<{ id: number }> {
  const reader = stream.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("stdout ended");
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return JSON.parse(text.split("\n")[0] as string);
}

test("a server that stops while its engine is away is seen to have exited once the engine answers again", async () => {
  const server = await startServerContainer(
    engine,
    {
      name: "mcpmgr-engine-restart-test",
      Image: image,
      OpenStdin: true,
      StdinOnce: false,
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      Labels: { mcpmgr: "true", "mcpmgr.workload": "engine-restart-test" },
    },
    true,
  );
  let exitCode: number | null | undefined;
  void server.exited.then((code) => (exitCode = code));
  try {
    // Serving: the engine has answered the attach and the wait.
    server.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} })}\n`);
    expect((await firstLine(server.stdout)).id).toBe(1);
    // The engine goes away with its connections; the probe, its stdin closed, exits (code 0) meanwhile.
    await stopService();
    const exitedAway = Date.now() + 20_000;
    while (
      !podman("ps", "-a", "--filter", "name=mcpmgr-engine-restart-test", "--format", "{{.Status}}").out.startsWith(
        "Exited",
      ) &&
      Date.now() < exitedAway
    )
      await Bun.sleep(100);
    await startService();
    const deadline = Date.now() + 20_000;
    while (exitCode === undefined && Date.now() < deadline) await Bun.sleep(100);
    // The code the engine reports once it answers again: not a guess from a failed connection.
    expect(exitCode).toBe(0);
  } finally {
    if (service?.exitCode !== null) await startService();
    await server.stop(1_000);
  }
  expect(podman("ps", "-a", "--filter", "name=mcpmgr-engine-restart-test", "--format", "{{.Names}}").out).toBe("");
});
