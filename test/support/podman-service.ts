/**
 * A `podman system service` of a test's own, on a socket in a fresh temporary directory, so Podman tests never
 * depend on (or disturb) a service the host may run. CONTAINER_HOST and DOCKER_HOST are left out of the
 * service's environment: either would point Podman's own client elsewhere.
 */
import { expect } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface PodmanService {
  /** The temporary directory holding the socket; tests may keep their own files there. */
  dir: string;
  /** The service's socket path (use as `unix://${socket}`). */
  socket: string;
  /** Stops the service and removes `dir`. */
  stop(): Promise<void>;
}

/** Starts the service and waits (polling, up to 60 s) until its socket exists. */
export async function startPodmanService(prefix: string): Promise<PodmanService> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const socket = join(dir, "podman.sock");
  const { CONTAINER_HOST: _c, DOCKER_HOST: _d, ...env } = process.env;
  const service = Bun.spawn(["podman", "system", "service", "--time=0", `unix://${socket}`], {
    stdout: "ignore",
    stderr: "ignore",
    env,
  });
  const deadline = Date.now() + 60_000;
  while (!existsSync(socket) && service.exitCode === null && Date.now() < deadline) await Bun.sleep(100);
  expect(existsSync(socket)).toBe(true);
  return {
    dir,
    socket,
    async stop() {
      service.kill("SIGTERM");
      await service.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
