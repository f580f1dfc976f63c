/**
 * Container workloads through the detached lifecycle (run, list, logs, crash restart,
 * stop, start, export, rm, run --from-config), rm of an isolated workload, and the stdio
 * attach surviving a dropped connection.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { link, mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startServerContainer } from "../../src/runtime/docker/container.ts";
import { detectEngine } from "../../src/runtime/docker/engine.ts";
import { docker, fixtureImages, leftovers, type FixtureImages } from "../support/docker-fixtures.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let images: FixtureImages;
let home: string;

function mcpmgr(...args: string[]) {
  const result = Bun.spawnSync([process.execPath, CLI_ENTRY, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home, MCPMGR_RUNTIME: "docker" },
    timeout: 240_000,
  });
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

interface Row {
  name: string;
  status: string;
  url: string;
  runtime: string;
  restarts: number;
}
const row = (name: string) =>
  (JSON.parse(mcpmgr("list", "--format", "json").stdout) as Row[]).find((r) => r.name === name);

async function callEnv(url: string, name: string): Promise<string | undefined> {
  const client = new Client({ name: "docker-workload-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    const result = (await client.callTool({ name: "env", arguments: { name } })) as { content: { text: string }[] };
    return result.content[0]?.text;
  } finally {
    await client.close();
  }
}

async function until(predicate: () => boolean, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate() && Date.now() < deadline) await Bun.sleep(200);
  expect(predicate()).toBe(true);
}

const containerId = (name: string) => docker("ps", "-q", "--filter", `name=^mcpmgr-${name}$`).out;

beforeAll(async () => {
  images = await fixtureImages();
  home = await mkdtemp(join(tmpdir(), "mcpmgr-docker-workloads-"));
}, 300_000);

afterAll(async () => {
  for (const name of ["dw", "dw-killed", "dw-iso", "dw-twin", "dw-slow", "dw-pull", "dw-upgraded"]) mcpmgr("rm", name);
  await rm(home, { recursive: true, force: true });
});

test("a detached container workload: list, crash restart, stop, start, export, rm", async () => {
  const started = mcpmgr("run", images.probe, "--name", "dw", "-e", "PROBE_MODE=detached", "--label", "team=a");
  expect(started.stderr).toContain("running in the background");
  expect(started.code).toBe(0);
  const url = started.stdout.trim();
  expect(row("dw")).toMatchObject({ status: "running", runtime: "docker", url });
  expect(await callEnv(url, "PROBE_MODE")).toBe("detached");
  // The container's stderr is the workload's log.
  await until(() => mcpmgr("logs", "dw").stdout.includes("sandbox-probe ready"), 20_000);

  // The container dies: the supervisor starts a new one on the same URL.
  const first = containerId("dw");
  expect(first).not.toBe("");
  docker("kill", `mcpmgr-dw`);
  await until(
    () =>
      (row("dw")?.restarts ?? 0) >= 1 &&
      row("dw")?.status === "running" &&
      containerId("dw") !== "" &&
      containerId("dw") !== first,
  );
  expect(await callEnv(url, "PROBE_MODE")).toBe("detached");

  expect(mcpmgr("stop", "dw").code).toBe(0);
  expect(leftovers("dw")).toEqual({ containers: [], networks: [] });
  expect(row("dw")?.status).toBe("stopped");

  expect(mcpmgr("start", "dw").code).toBe(0);
  expect(containerId("dw")).not.toBe("");
  expect(await callEnv(url, "PROBE_MODE")).toBe("detached");

  const exported = join(home, "dw.json");
  expect(mcpmgr("export", "dw", exported).code).toBe(0);
  const record = (await Bun.file(exported).json()) as {
    runtime: string;
    runtimeEndpoint?: string;
    labels: Record<string, string>;
  };
  expect(record.runtime).toBe("docker");
  expect(record.runtimeEndpoint).toBe("unix:///var/run/docker.sock");
  expect(record.labels).toEqual({ team: "a" });

  expect(mcpmgr("rm", "dw").code).toBe(0);
  expect(leftovers("dw")).toEqual({ containers: [], networks: [] });
  expect(row("dw")).toBeUndefined();

  // The exported file brings the same container workload back: image, environment, labels.
  const again = mcpmgr("run", "--from-config", exported);
  expect(again.code).toBe(0);
  const againUrl = again.stdout.trim();
  expect(row("dw")).toMatchObject({ status: "running", runtime: "docker", url: againUrl });
  expect(await callEnv(againUrl, "PROBE_MODE")).toBe("detached");
  const imageId = docker("image", "inspect", images.probe, "--format", "{{.Id}}").out;
  expect(docker("inspect", "mcpmgr-dw", "--format", '{{index .Config.Labels "team"}} {{.Config.Image}}').out).toBe(
    `a ${imageId}`,
  );
  expect(mcpmgr("rm", "dw").code).toBe(0);
  expect(leftovers("dw")).toEqual({ containers: [], networks: [] });
}, 300_000);

test("an isolated server restarts after an upgrade removed the executable its supervisor runs", async () => {
  // The supervisor runs from its own copy of the runtime (a link to the bun running this test, so the
  // helper image is the one the other tests use), which the "upgrade" then removes.
  const installed = join(home, "old-version", "bin");
  await mkdir(installed, { recursive: true });
  const executable = join(installed, "bun");
  await link(process.execPath, executable);
  const started = Bun.spawnSync(
    [executable, CLI_ENTRY, "run", images.probe, "--name", "dw-upgraded", "--isolate-network"],
    { cwd: REPO_ROOT, env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home, MCPMGR_RUNTIME: "docker" } },
  );
  expect(started.exitCode).toBe(0);
  const url = started.stdout.toString().trim();
  await rm(join(home, "old-version"), { recursive: true, force: true });
  const client = new Client({ name: "docker-workload-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  await client.callTool({ name: "crash", arguments: {} }).catch(() => undefined);
  await client.close().catch(() => undefined);
  // The restart builds or reuses the helper from the executable the supervisor runs, gone from its path or not.
  await until(() => (row("dw-upgraded")?.restarts ?? 0) >= 1 && row("dw-upgraded")?.status === "running", 120_000);
  expect(mcpmgr("logs", "dw-upgraded", "--proxy").stdout).not.toContain("restarting failed");
  expect(await callEnv(url, "HTTP_PROXY")).toBe("http://mcpmgr-egress:3128");
  expect(mcpmgr("rm", "dw-upgraded").code).toBe(0);
  expect(leftovers("dw-upgraded")).toEqual({ containers: [], networks: [] });
}, 300_000);

test("rm of a detached --isolate-network workload removes its server, helper and both networks", async () => {
  const started = mcpmgr("run", images.probe, "--name", "dw-iso", "--isolate-network");
  expect(started.code).toBe(0);
  expect(await callEnv(started.stdout.trim(), "HTTP_PROXY")).toBe("http://mcpmgr-egress:3128");
  const made = leftovers("dw-iso");
  expect(made.containers.length).toBe(2);
  expect(made.networks.length).toBe(2);
  expect(mcpmgr("rm", "dw-iso").code).toBe(0);
  expect(leftovers("dw-iso")).toEqual({ containers: [], networks: [] });
  // By name too, in case a label went missing.
  for (const name of ["mcpmgr-dw-iso", "mcpmgr-dw-iso.egress"])
    expect(docker("container", "inspect", name).code).not.toBe(0);
  for (const name of ["mcpmgr-dw-iso.internal", "mcpmgr-dw-iso.external"])
    expect(docker("network", "inspect", name).code).not.toBe(0);
  expect(row("dw-iso")).toBeUndefined();
}, 300_000);

test("another installation (MCPMGR_HOME) cannot remove or take over a workload of the same name", async () => {
  const other = await mkdtemp(join(tmpdir(), "mcpmgr-docker-other-install-"));
  const otherMcpmgr = (...args: string[]) => {
    const result = Bun.spawnSync([process.execPath, CLI_ENTRY, ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: other, MCPMGR_RUNTIME: "docker" },
      timeout: 240_000,
    });
    return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
  };
  try {
    const started = mcpmgr("run", images.probe, "--name", "dw-twin", "-e", "PROBE_MODE=first-install");
    expect(started.code).toBe(0);
    const url = started.stdout.trim();
    const ours = containerId("dw-twin");
    expect(ours).not.toBe("");
    // The other installation's run of the same name is refused, and removes nothing on the way.
    const twin = otherMcpmgr("run", images.probe, "--name", "dw-twin", "-e", "PROBE_MODE=second-install");
    expect(twin.code).not.toBe(0);
    expect(twin.stderr).toContain("is taken on this docker engine by another mcpmgr installation");
    expect(containerId("dw-twin")).toBe(ours);
    expect(row("dw-twin")?.restarts).toBe(0);
    expect(await callEnv(url, "PROBE_MODE")).toBe("first-install");
  } finally {
    otherMcpmgr("rm", "dw-twin");
    await rm(other, { recursive: true, force: true });
  }
  expect(mcpmgr("rm", "dw-twin").code).toBe(0);
  expect(leftovers("dw-twin")).toEqual({ containers: [], networks: [] });
}, 300_000);

test("rm removes the containers of a supervisor that was killed", async () => {
  const started = mcpmgr("run", images.probe, "--name", "dw-killed");
  expect(started.code).toBe(0);
  const status = (await Bun.file(join(home, "state", "workloads", "dw-killed", "status.json"))
    .json()
    .catch(() => undefined)) as { pid?: number } | undefined;
  const pid =
    status?.pid ??
    Number(Bun.spawnSync(["pgrep", "-f", "__supervise dw-killed"]).stdout.toString().trim().split("\n")[0]);
  expect(pid).toBeGreaterThan(0);
  process.kill(pid, "SIGKILL");
  const alive = () => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  await until(() => !alive());
  expect(leftovers("dw-killed").containers.length).toBe(1);
  expect(mcpmgr("rm", "dw-killed").code).toBe(0);
  expect(leftovers("dw-killed")).toEqual({ containers: [], networks: [] });
}, 300_000);

test("a supervisor told to stop while its container's server is still starting removes the container and exits at once", async () => {
  // A background run of the probe that answers its handshake only after two minutes.
  const run = Bun.spawn(
    [process.execPath, CLI_ENTRY, "run", images.probe, "--name", "dw-slow", "--", "--slow-start", "120000"],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home, MCPMGR_RUNTIME: "docker" },
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  // The container runs and the bridge waits for its handshake: the start is under way.
  await until(() => containerId("dw-slow") !== "");
  const status = (await Bun.file(join(home, "state", "workloads", "dw-slow", "status.json")).json()) as {
    pid?: number;
  };
  const supervisor = status.pid as number;
  expect(supervisor).toBeGreaterThan(0);
  // SIGTERM as `stop` sends it, without the `stop` command's own clean-up after it: the supervisor's doing alone.
  const before = performance.now();
  process.kill(supervisor, "SIGTERM");
  const alive = () => {
    try {
      process.kill(supervisor, 0);
      return true;
    } catch {
      return false;
    }
  };
  await until(() => !alive(), 10_000);
  expect(performance.now() - before).toBeLessThan(6_000);
  expect(leftovers("dw-slow")).toEqual({ containers: [], networks: [] });
  expect(row("dw-slow")?.status).toBe("stopped");
  expect(await run.exited).toBe(1);
  expect(await new Response(run.stderr).text()).toContain("dw-slow was stopped while it was starting");
}, 300_000);

test("stop of a workload whose supervisor is pulling its image returns at once, and the start gives up", async () => {
  // A registry that accepts connections and never answers: the engine's pull hangs on it.
  let opened = 0;
  const registry = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: { open: () => void opened++, data: () => {} },
  });
  const ref = `127.0.0.1:${registry.port}/mcpmgr-test/pull-${process.pid}:1`;
  try {
    // Created while the image is there (run pulls it in the terminal), then the image goes: start must pull.
    expect(docker("tag", images.probe, ref).code).toBe(0);
    expect(mcpmgr("run", ref, "--name", "dw-pull").code).toBe(0);
    expect(mcpmgr("stop", "dw-pull").code).toBe(0);
    expect(docker("rmi", ref).code).toBe(0);
    const start = Bun.spawn([process.execPath, CLI_ENTRY, "start", "dw-pull"], {
      cwd: REPO_ROOT,
      env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home, MCPMGR_RUNTIME: "docker" },
      stdout: "pipe",
      stderr: "pipe",
    });
    // The supervisor's pull has reached the registry.
    await until(() => opened > 0, 30_000);
    const before = performance.now();
    expect(mcpmgr("stop", "dw-pull").code).toBe(0);
    expect(performance.now() - before).toBeLessThan(6_000);
    expect(row("dw-pull")?.status).toBe("stopped");
    expect(leftovers("dw-pull")).toEqual({ containers: [], networks: [] });
    expect(await start.exited).toBe(1);
    expect(await new Response(start.stderr).text()).toContain("dw-pull was stopped while it was starting");
  } finally {
    registry.stop(true);
    docker("rmi", ref);
  }
}, 300_000);

test("the stdio attach is re-established when its connection drops while the container runs", async () => {
  const engine = await detectEngine({ want: "docker" });
  if (engine === undefined) throw new Error("dockerd must be running for this test");
  const server = await startServerContainer(
    engine,
    {
      name: "mcpmgr-reattach-test",
      Image: images.probe,
      OpenStdin: true,
      StdinOnce: false,
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      Labels: { mcpmgr: "true", "mcpmgr.workload": "reattach-test" },
    },
    true,
  );
  const reader = server.stdout.getReader();
  const decoder = new TextDecoder();
  const nextLine = async () => {
    let buffered = "";
    while (!buffered.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error("stdout ended");
      buffered += decoder.decode(value, { stream: true });
    }
    return JSON.parse(buffered.split("\n")[0] as string) as { id: number; result: unknown };
  };
  try {
    server.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} })}\n`);
    expect((await nextLine()).id).toBe(1);
    server.attachConnection?.destroy();
    const deadline = Date.now() + 10_000;
    while (server.reattachCount === 0 && Date.now() < deadline) await Bun.sleep(50);
    expect(server.reattachCount).toBe(1);
    server.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" })}\n`);
    const answer = await nextLine();
    expect(answer.id).toBe(2);
    expect(JSON.stringify(answer.result)).toContain("read_file");
  } finally {
    await server.stop(2_000);
  }
  expect(leftovers("reattach-test").containers).toEqual([]);
}, 120_000);
