/**
 * A stdio server in a container that closes its stdout and goes on running: the engine keeps
 * the attach connection open (its stdin is attached) and sends nothing for it, so before, the
 * workload looked alive and every request waited for its timeout. Now it is stopped like a
 * process that does the same, so a foreground run ends saying why (and a supervisor restarts it).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fixtureImages, leftovers, type FixtureImages } from "../support/docker-fixtures.ts";
import { CLI_ENTRY, spawnCollect, spawnUntil } from "../support/processes.ts";

setDefaultTimeout(60_000);

let images: FixtureImages;
let dir: string | undefined;
let podmanService: ReturnType<typeof Bun.spawn> | undefined;

beforeAll(async () => {
  images = await fixtureImages();
}, 300_000);

afterAll(async () => {
  podmanService?.kill();
  await podmanService?.exited;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function runUnruly(name: string, mode: string, engine: Record<string, string> = { MCPMGR_RUNTIME: "docker" }) {
  const image = engine.MCPMGR_RUNTIME === "podman" ? `localhost/${images.unruly}` : images.unruly;
  return spawnUntil(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      "--foreground",
      image,
      "--name",
      name,
      "--image-verification",
      "disabled",
      "--",
      mode,
    ],
    /^(http:\/\/\S+)$/m,
    { env: engine, timeoutMs: 60_000 },
  );
}

/** A `podman system service` of its own (as in podman.test.ts), with the fixture image copied into Podman's store. */
async function podmanEngine(): Promise<Record<string, string>> {
  dir = mkdtempSync(join(tmpdir(), "mcpmgr-podman-stdout-"));
  const socket = join(dir, "podman.sock");
  podmanService = Bun.spawn(["podman", "system", "service", "--time=0", `unix://${socket}`], {
    stdout: "ignore",
    stderr: "ignore",
  });
  const deadline = Date.now() + 60_000;
  while (!existsSync(socket) && podmanService.exitCode === null && Date.now() < deadline) await Bun.sleep(100);
  expect(existsSync(socket)).toBe(true);
  if (Bun.spawnSync(["podman", "image", "exists", `localhost/${images.unruly}`]).exitCode !== 0) {
    const save = Bun.spawn(["docker", "save", images.unruly], { stdout: "pipe" });
    const load = Bun.spawn(["podman", "load"], { stdin: save.stdout, stdout: "ignore", stderr: "ignore" });
    expect(await load.exited).toBe(0);
  }
  return { MCPMGR_RUNTIME: "podman", DOCKER_HOST: `unix://${socket}` };
}

test("a container whose server closes its stdout but goes on running is stopped, and the foreground run ends saying why", async () => {
  const run = await runUnruly("unruly-closes-stdout", "closes-stdout");
  try {
    const ended = await Promise.race([run.proc.exited.then(() => true), Bun.sleep(20_000).then(() => false)]);
    expect(ended).toBe(true);
    expect(run.output()).toContain("the MCP server closed its stdout but kept running: stopping it");
    expect(leftovers("unruly-closes-stdout").containers).toEqual([]);
  } finally {
    await run.stop();
  }
});

test("a container whose server closes its stdout as it is stopped is stopped as usual, with no warning", async () => {
  const run = await runUnruly("unruly-slow-to-stop", "slow-to-stop");
  try {
    expect(await run.stop("SIGINT")).toBe(0);
    expect(run.output()).not.toContain("closed its stdout but kept running");
  } finally {
    await run.stop();
  }
});

test("the same under Podman, whose attach connection says nothing of it either", async () => {
  const run = await runUnruly("unruly-podman-closes-stdout", "closes-stdout", await podmanEngine());
  try {
    const ended = await Promise.race([run.proc.exited.then(() => true), Bun.sleep(20_000).then(() => false)]);
    expect(ended).toBe(true);
    expect(run.output()).toContain("the MCP server closed its stdout but kept running: stopping it");
  } finally {
    await run.stop();
  }
}, 120_000);

test("a server whose descriptors mcpmgr cannot read is not taken for one that closed its stdout", async () => {
  // The engine's init is readable but the server is not: here a server that left root for another uid,
  // read by a root without CAP_SYS_PTRACE (a hardened service); the same holds for a non-root mcpmgr and
  // a server that made itself undumpable. Before, an unreadable process counted as one without the pipe.
  const started = await spawnCollect(
    [
      "docker",
      "run",
      "-d",
      "-i",
      "--init",
      "--entrypoint",
      "node",
      images.unruly,
      "-e",
      "process.setgid(65534); process.setuid(65534); setInterval(() => {}, 1000)",
    ],
    process.env,
  );
  expect(started.code).toBe(0);
  const id = started.stdout.trim();
  try {
    const pid = (await spawnCollect(["docker", "inspect", "-f", "{{.State.Pid}}", id], process.env)).stdout.trim();
    // The server runs as its own uid once the init's child says so.
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const child = (
        await Bun.file(`/proc/${pid}/task/${pid}/children`)
          .text()
          .catch(() => "")
      ).trim();
      const status =
        child === ""
          ? ""
          : await Bun.file(`/proc/${child}/status`)
              .text()
              .catch(() => "");
      if (/^Uid:\s+65534\b/m.test(status)) break;
      await Bun.sleep(50);
    }
    const probe = join(import.meta.dir, "../fixtures/stdout-watch-probe.ts");
    const watched = await spawnCollect(
      [
        "setpriv",
        "--bounding-set",
        "-sys_ptrace",
        "--inh-caps",
        "-sys_ptrace",
        "--",
        process.execPath,
        probe,
        pid,
        id,
        "4",
      ],
      process.env,
    );
    expect(watched.stderr).toBe("");
    expect(JSON.parse(watched.stdout)).toEqual({ serverReadable: false, closed: false });
  } finally {
    await spawnCollect(["docker", "rm", "-f", id], process.env);
  }
});
