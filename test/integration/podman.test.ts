/**
 * Podman through its Docker-compatible API socket (`podman system service`, started here on
 * a socket of the test's own so no other test sees a Podman engine): the conformance
 * fixture's image (copied from Docker with `docker save | podman load`) runs under
 * `mcpmgr run` with MCPMGR_RUNTIME=podman, hardened and labelled like on Docker, passes
 * the same conformance checks as the fixture directly, and leaves nothing behind.
 * .ci/run installs podman (and catatonit, its init).
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  expectSameChecks,
  runConformance,
  startConformanceServer,
  type RunningFixture,
} from "../support/conformance.ts";
import { fixtureImages } from "../support/docker-fixtures.ts";
import { CLI_ENTRY, spawnUntil, type Running } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let dir: string;
let socket: string;
let service: ReturnType<typeof Bun.spawn>;
let image: string;
let fixture: RunningFixture;
let run: Running & { match: RegExpExecArray };

function podman(...args: string[]): { code: number; out: string; err: string } {
  const result = Bun.spawnSync(["podman", ...args], { stdout: "pipe", stderr: "pipe" });
  return { code: result.exitCode, out: result.stdout.toString().trim(), err: result.stderr.toString().trim() };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "mcpmgr-podman-"));
  socket = join(dir, "podman.sock");
  service = Bun.spawn(["podman", "system", "service", "--time=0", `unix://${socket}`], {
    stdout: "ignore",
    stderr: "pipe",
  });
  const deadline = Date.now() + 60_000;
  while (!existsSync(socket) && service.exitCode === null && Date.now() < deadline) await Bun.sleep(100);
  expect(existsSync(socket)).toBe(true);

  // The image Docker built for the container tests, copied into Podman's store.
  const images = await fixtureImages();
  image = `localhost/${images.conformance}`;
  if (podman("image", "exists", image).code !== 0) {
    const save = Bun.spawn(["docker", "save", images.conformance], { stdout: "pipe" });
    const load = Bun.spawn(["podman", "load"], { stdin: save.stdout, stdout: "pipe", stderr: "pipe" });
    expect(await load.exited).toBe(0);
  }

  fixture = await startConformanceServer();
  run = await spawnUntil(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      "--foreground",
      image,
      "--name",
      "podman-conformance",
      "--permission-profile",
      "none",
      "--image-verification",
      "disabled",
      "--label",
      "suite=podman",
    ],
    /^(http:\/\/\S+)$/m,
    { env: { MCPMGR_RUNTIME: "podman", DOCKER_HOST: `unix://${socket}` }, timeoutMs: 60_000 },
  );
}, 300_000);

afterAll(async () => {
  await run?.stop();
  await fixture?.stop();
  service?.kill();
  await service?.exited;
  rmSync(dir, { recursive: true, force: true });
});

test(
  "a stdio image on Podman: hardened and labelled, the conformance checks pass as directly, nothing left after stop",
  async () => {
    const inspected = JSON.parse(podman("inspect", "mcpmgr-podman-conformance").out)[0];
    expect(inspected.Config.Labels).toMatchObject({
      mcpmgr: "true",
      "mcpmgr.workload": "podman-conformance",
      suite: "podman",
    });
    expect(inspected.HostConfig.NetworkMode).toBe("none");
    expect(inspected.HostConfig.SecurityOpt).toContain("no-new-privileges");
    // Podman reports every default capability as dropped by name, and none effective.
    expect(inspected.HostConfig.CapDrop).toContain("CAP_CHOWN");
    expect(inspected.HostConfig.CapDrop).toContain("CAP_NET_BIND_SERVICE");
    expect(inspected.EffectiveCaps ?? []).toEqual([]);

    const direct = await runConformance(fixture.url);
    const viaPodman = await runConformance(run.match[1] as string);
    expectSameChecks(viaPodman, direct);

    await run.stop();
    expect(
      podman("ps", "-a", "--filter", "label=mcpmgr.workload=podman-conformance", "--format", "{{.Names}}").out,
    ).toBe("");
  },
  { timeout: 300_000 },
);
