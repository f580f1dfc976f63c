/**
 * MCPMGR_RUNTIME=podman with a DOCKER_HOST left in the environment. DOCKER_HOST names the engine mcpmgr
 * uses whatever MCPMGR_RUNTIME says (it is how a workload is kept on the engine it was created on), so:
 * a stale one is an error that says so and how to reach Podman; one naming Docker's engine is refused,
 * not used (the workload ran, and was recorded, on Docker); Podman's socket by CONTAINER_HOST still
 * serves once DOCKER_HOST is out of the way. Podman on a socket of the test's own, Docker the host's.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv, expectOneLineError, runCli } from "../support/cli-home.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";

setDefaultTimeout(60_000);

let dir: string;
let socket: string;
let service: ReturnType<typeof Bun.spawn>;
const name = `podman-docker-host-${process.pid}`;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "mcpmgr-podman-docker-host-"));
  socket = join(dir, "podman.sock");
  const { CONTAINER_HOST: _c, DOCKER_HOST: _d, ...env } = process.env;
  service = Bun.spawn(["podman", "system", "service", "--time=0", `unix://${socket}`], {
    stdout: "ignore",
    stderr: "ignore",
    env,
  });
  const deadline = Date.now() + 60_000;
  while (!existsSync(socket) && service.exitCode === null && Date.now() < deadline) await Bun.sleep(100);
  expect(existsSync(socket)).toBe(true);
});
afterAll(async () => {
  service.kill("SIGTERM");
  await service.exited;
  rmSync(dir, { recursive: true, force: true });
});

function podmanEnv(dockerHost: string | undefined): Record<string, string> {
  const { DOCKER_HOST: _d, ...env } = cliEnv(join(dir, "home"));
  return {
    ...env,
    MCPMGR_RUNTIME: "podman",
    CONTAINER_HOST: `unix://${socket}`,
    ...(dockerHost ? { DOCKER_HOST: dockerHost } : {}),
  };
}

const args = ["run", "--foreground", "--name", name, "--image-verification", "disabled", "mcpmgr-test/absent:0"];

test("a stale DOCKER_HOST: the error says MCPMGR_RUNTIME=podman was asked, that DOCKER_HOST decides, and the way out", () => {
  const stale = `unix://${join(dir, "stale.sock")}`;
  const line = expectOneLineError(runCli(podmanEnv(stale), args), 1);
  expect(line).toContain("MCPMGR_RUNTIME=podman");
  expect(line).toContain(stale);
  expect(line).toContain("env -u DOCKER_HOST");
});

test("DOCKER_HOST naming Docker's engine is refused under MCPMGR_RUNTIME=podman, nothing made on Docker", () => {
  const line = expectOneLineError(runCli(podmanEnv("unix:///var/run/docker.sock"), args), 2);
  expect(line).toContain("MCPMGR_RUNTIME=podman");
  expect(line).toContain("Docker engine");
  expect(line).toContain("env -u DOCKER_HOST");
  const made = Bun.spawnSync(["docker", "ps", "-aq", "--filter", `label=mcpmgr.workload=${name}`]);
  expect(made.stdout.toString().trim()).toBe("");
});

test("without DOCKER_HOST, Podman's socket (CONTAINER_HOST) is the engine", async () => {
  const proc = Bun.spawn([process.execPath, CLI_ENTRY, ...args], {
    cwd: REPO_ROOT,
    env: podmanEnv(undefined),
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  // The grant summary names the engine before the image is looked for (this one is absent: the run fails after).
  const stderr = await new Response(proc.stderr).text();
  await proc.exited;
  expect(stderr).toContain("podman container");
  expect(stderr).not.toContain("DOCKER_HOST");
});
