/**
 * Which port an HTTP server gets in its container: with --network host the registry
 * entry's port or --target-port (the server then listens on that host port); with none, the
 * image's single EXPOSEd TCP port rather than the 8080 default. --target-host does not
 * apply to containers.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findFreePort } from "../../src/proxy/serve.ts";
import {
  docker,
  fixtureImages,
  leftovers,
  runInDocker,
  runInDockerFails,
  type FixtureImages,
} from "../support/docker-fixtures.ts";
import { CLI_ENTRY } from "../support/processes.ts";
import { spawnUntilNotice } from "../support/until-notice.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let images: FixtureImages;
let scratch: string;

beforeAll(async () => {
  images = await fixtureImages();
  scratch = await mkdtemp(join(tmpdir(), "mcpmgr-docker-ports-"));
}, 300_000);

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** The HTTP probe with EXPOSE lines on top (a UDP port must not count as a server port). */
function withExposed(expose: string): string {
  const tag = `${images.httpProbe.replace("/http-probe:", "/http-probe-exposed:")}-${expose.replace(/[^0-9a-z]+/g, "-")}`;
  if (docker("image", "inspect", tag).code === 0) return tag;
  const built = Bun.spawnSync(["docker", "build", "-q", "-t", tag, "-"], {
    stdin: Buffer.from(`FROM ${images.httpProbe}\nEXPOSE ${expose}\n`),
    stdout: "pipe",
    stderr: "pipe",
  });
  if (built.exitCode !== 0) throw new Error(`docker build ${tag} failed: ${built.stderr.toString()}`);
  return tag;
}

test("--network host: the server listens on the registry entry's port, or --target-port, and the proxy reaches it there", async () => {
  const [entryPort, flagPort] = [await findFreePort(), await findFreePort()];
  const registry = join(scratch, "registry.json");
  const entry = {
    name: "hostnet-http",
    description: "the HTTP probe",
    transport: "streamable-http",
    targetPort: entryPort,
    source: { image: images.httpProbe },
    permissions: "network",
    tools: ["whoami"],
  };
  await writeFile(registry, JSON.stringify({ servers: [entry] }));
  for (const [extra, port] of [
    [[], entryPort],
    [["--target-port", String(flagPort)], flagPort],
  ] as const) {
    const run = await runInDocker(["hostnet-http", "--name", "docker-hostnet-port", "--network", "host", ...extra], {
      env: { MCPMGR_REGISTRY: registry },
    });
    try {
      expect((await run.call("whoami")).text).toContain(`port=${port}`);
      expect(docker("inspect", "mcpmgr-docker-hostnet-port", "--format", "{{.HostConfig.NetworkMode}}").out).toBe(
        "host",
      );
      await run.client.close();
    } finally {
      await run.stop();
    }
  }
}, 120_000);

test("--network host: a chosen port something already listens on is refused; an image's EXPOSE is not used there", async () => {
  const busy = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("someone else") });
  try {
    const refused = await runInDockerFails([
      images.httpProbe,
      "--name",
      "docker-hostnet-busy",
      "--transport",
      "streamable-http",
      "--network",
      "host",
      "--target-port",
      String(busy.port),
    ]);
    expect(refused.code).not.toBe(0);
    expect(refused.err).toContain(`port ${busy.port} is already in use`);
  } finally {
    await busy.stop(true);
  }
  const run = await runInDocker([
    withExposed("7071 9999/udp"),
    "--name",
    "docker-hostnet-exposed",
    "--transport",
    "streamable-http",
    "--network",
    "host",
  ]);
  try {
    expect((await run.call("whoami")).text).not.toContain("port=7071");
    await run.client.close();
  } finally {
    await run.stop();
  }
}, 120_000);

test("without --target-port or a registry port, the image's single EXPOSEd TCP port is the server's", async () => {
  const run = await runInDocker([
    withExposed("7071 9999/udp"),
    "--name",
    "docker-exposed-port",
    "--transport",
    "streamable-http",
  ]);
  try {
    expect((await run.call("whoami")).text).toContain("port=7071");
    await run.client.close();
  } finally {
    await run.stop();
  }
}, 120_000);

test("`run --help` says --target-host does not apply to container workloads (which refuse it)", async () => {
  const help = Bun.spawnSync([process.execPath, CLI_ENTRY, "run", "--help"], {
    env: { ...process.env, NO_COLOR: "1" },
    stdout: "pipe",
  }).stdout.toString();
  const line = help.split("\n").find((l) => l.includes("--target-host")) ?? "";
  expect(line).toContain("container workloads refuse it");
}, 60_000);

test("an HTTP server's image run without --transport: the still-starting notice says it is spoken to over stdio, and how to run it over HTTP", async () => {
  const notice = "docker-http-as-stdio is still starting: its server has not answered yet";
  const { run, stderr } = await spawnUntilNotice(
    [process.execPath, CLI_ENTRY, "run", images.httpProbe, "--name", "docker-http-as-stdio"],
    { env: { ...process.env, MCPMGR_RUNTIME: "docker", NO_COLOR: "1" } },
    notice,
    60_000,
  );
  run.kill("SIGINT");
  await run.exited;
  const line = stderr.split("\n").find((each) => each.includes(notice)) ?? "";
  expect(line).toContain(
    "it is spoken to over stdio: if the image serves MCP over HTTP, run it with --transport streamable-http (or sse) and --target-port PORT",
  );
  expect(leftovers("docker-http-as-stdio").containers).toEqual([]);
}, 120_000);
