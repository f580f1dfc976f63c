/**
 * MCPMGR_RUNTIME=podman with a DOCKER_HOST left in the environment. DOCKER_HOST names the engine mcpmgr
 * uses whatever MCPMGR_RUNTIME says (it is how a workload is kept on the engine it was created on), so:
 * a stale one is an error that says so and how to reach Podman; one naming Docker's engine is refused,
 * not used (the workload ran, and was recorded, on Docker); Podman's socket by CONTAINER_HOST still
 * serves once DOCKER_HOST is out of the way. But a workload's `start` passes its recorded engine on in those
 * two variables: its errors speak of the engine it was created on, not of variables to unset. Podman on a
 * socket of the test's own, Docker the host's.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { resolvePaths } from "../../src/state/paths.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";
import { cliEnv, expectOneLineError, runCli } from "../support/cli-home.ts";
import { type PodmanService, startPodmanService } from "../support/podman-service.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";

setDefaultTimeout(60_000);

let podman: PodmanService;
let dir: string;
let socket: string;
const name = `podman-docker-host-${process.pid}`;

beforeAll(async () => {
  podman = await startPodmanService("mcpmgr-podman-docker-host-");
  ({ dir, socket } = podman);
});
afterAll(async () => {
  await podman.stop();
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

/** `start` of a recorded container workload of `runtime` at `endpoint`, the user's environment naming no engine. */
async function startRecorded(
  runtime: "docker" | "podman",
  endpoint: string,
): Promise<{ code: number; stderr: string }> {
  const { DOCKER_HOST: _d, MCPMGR_RUNTIME: _r, ...env } = cliEnv(join(dir, `home-${runtime}`));
  const workload = `recorded-${runtime}-${process.pid}`;
  await new WorkloadStore(resolvePaths(env)).create({
    name: workload,
    source: { kind: "image", ref: "mcpmgr-test/absent:0" },
    transport: "stdio",
    proxyPort: 9,
    runtime,
    runtimeEndpoint: endpoint,
    runOptions: ["mcpmgr-test/absent:0", "--name", workload, "--image-verification", "disabled", "--proxy-port", "9"],
  });
  const result = runCli(env, ["start", workload]);
  runCli(env, ["rm", workload]);
  return { code: result.code, stderr: result.stderr };
}

test("start of a workload whose recorded engine is down: that engine named, no variables to unset", async () => {
  const stale = `unix://${join(dir, "gone.sock")}`;
  const { code, stderr } = await startRecorded("docker", stale);
  expect(code).toBe(1);
  expect(stderr).toContain(`the workload was created on Docker at ${stale}, where no container engine answers`);
  expect(stderr).toContain("start Docker there");
  expect(stderr).toContain("mcpmgr export");
  // The user set neither: the supervisor passes the record's engine on in them.
  expect(stderr).not.toContain("MCPMGR_RUNTIME=");
  expect(stderr).not.toContain("DOCKER_HOST");
});

test("start of a workload created on Podman whose socket now answers as Docker: said as its engine, not refused as options", async () => {
  const { code, stderr } = await startRecorded("podman", "unix:///var/run/docker.sock");
  expect(code).toBe(1);
  expect(stderr).toContain(
    "was created on Podman at unix:///var/run/docker.sock, which now answers as a Docker engine",
  );
  expect(stderr).toContain("mcpmgr export");
  expect(stderr).not.toContain("env -u DOCKER_HOST");
});
