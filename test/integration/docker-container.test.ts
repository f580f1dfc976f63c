/**
 * startServerContainer against the real engine: a container already holding the name is
 * replaced only when it is mcpmgr's own for the same workload, and a dropped stdio attach
 * is retried while the engine refuses it (a paused container answers 409) until it works; what a
 * container does not read from its stdin is counted, so the bridge's channel can refuse past a backlog.
 */
import { readdirSync, readlinkSync } from "node:fs";
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { startServerContainer, type ContainerServer } from "../../src/runtime/docker/container.ts";
import { detectEngine, type ContainerEngine } from "../../src/runtime/docker/engine.ts";
import { lineChannel, ServerNotReading } from "../../src/proxy/stdio-bridge/server-channel.ts";
import { docker, fixtureImages, leftovers, type FixtureImages } from "../support/docker-fixtures.ts";
import { NODE_BASE_IMAGE } from "../support/docker-images.ts";
import { rejection } from "../support/errors.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let images: FixtureImages;
let engine: ContainerEngine;
const made: string[] = [];

beforeAll(async () => {
  images = await fixtureImages();
  const found = await detectEngine({ want: "docker" });
  if (found === undefined) throw new Error("dockerd must be running for this test");
  engine = found;
}, 300_000);

afterAll(() => {
  for (const name of made) docker("rm", "-f", name);
});

/** A long-running container under `name` with `labels`, made outside mcpmgr. */
function occupy(name: string, labels: Record<string, string>): string {
  docker("rm", "-f", name);
  made.push(name);
  const created = docker(
    "run",
    "-d",
    "--name",
    name,
    ...Object.entries(labels).flatMap(([k, v]) => ["--label", `${k}=${v}`]),
    NODE_BASE_IMAGE,
    "sleep",
    "300",
  );
  if (created.code !== 0) throw new Error(created.err);
  return created.out;
}

function probeOptions(workload: string) {
  return {
    name: `mcpmgr-${workload}`,
    Image: images.probe,
    OpenStdin: true,
    StdinOnce: false,
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
    Labels: { mcpmgr: "true", "mcpmgr.workload": workload },
  };
}

/** Reads JSON-RPC lines from a stdio server. */
function lines(server: ContainerServer): () => Promise<{ id: number; result: unknown }> {
  const reader = server.stdout.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  return async () => {
    while (!buffered.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error("stdout ended");
      buffered += decoder.decode(value, { stream: true });
    }
    const [line, ...rest] = buffered.split("\n");
    buffered = rest.join("\n");
    return JSON.parse(line as string);
  };
}

test("a container that is not mcpmgr's, or another workload's, keeps its name: WORKLOAD_EXISTS, and it survives", async () => {
  for (const labels of [{ "mcpmgr-test": "true" }, { mcpmgr: "true", "mcpmgr.workload": "someone-else" }] as Record<
    string,
    string
  >[]) {
    const id = occupy("mcpmgr-owned-test", labels);
    const err = await rejection(startServerContainer(engine, probeOptions("owned-test"), true), "WORKLOAD_EXISTS");
    expect(err.hint).toContain("docker rm -f mcpmgr-owned-test");
    expect(docker("inspect", "mcpmgr-owned-test", "--format", "{{.Id}} {{.State.Running}}").out).toBe(`${id} true`);
  }
}, 60_000);

test("mcpmgr's own leftover container for the same workload is replaced", async () => {
  const stale = occupy("mcpmgr-stale-test", { mcpmgr: "true", "mcpmgr.workload": "stale-test" });
  const server = await startServerContainer(engine, probeOptions("stale-test"), true);
  try {
    expect(server.id).not.toBe(stale);
    expect(docker("inspect", stale).code).not.toBe(0);
  } finally {
    await server.stop(2_000);
  }
  expect(leftovers("stale-test").containers).toEqual([]);
}, 60_000);

test("a re-attach the engine refuses is retried while the container runs, and the stdio session carries on", async () => {
  const server = await startServerContainer(engine, probeOptions("reattach-retry-test"), true);
  made.push("mcpmgr-reattach-retry-test");
  const next = lines(server);
  try {
    server.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} })}\n`);
    expect((await next()).id).toBe(1);
    // Paused, it still counts as running, but the engine refuses to attach (409).
    expect(docker("pause", server.name).code).toBe(0);
    server.attachConnection?.destroy();
    await Bun.sleep(1_500); // several refused attempts
    expect(server.reattachCount).toBe(0);
    server.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" })}\n`);
    expect(docker("unpause", server.name).code).toBe(0);
    const deadline = Date.now() + 10_000;
    while (server.reattachCount === 0 && Date.now() < deadline) await Bun.sleep(50);
    expect(server.reattachCount).toBe(1);
    // Written while detached, delivered after the re-attach.
    const answer = await next();
    expect(answer.id).toBe(2);
    expect(JSON.stringify(answer.result)).toContain("read_file");
  } finally {
    docker("unpause", server.name);
    await server.stop(2_000);
  }
  expect(leftovers("reattach-retry-test").containers).toEqual([]);
}, 60_000);

/** This process's open sockets (the engine connections among them). */
function openSockets(): number {
  let sockets = 0;
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).startsWith("socket:")) sockets++;
    } catch {
      // closed meanwhile
    }
  }
  return sockets;
}

test("re-attaching again and again keeps one 'wait' connection to the engine, not one more per re-attach", async () => {
  const server = await startServerContainer(engine, probeOptions("reattach-sockets-test"), true);
  made.push("mcpmgr-reattach-sockets-test");
  const next = lines(server);
  try {
    server.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} })}\n`);
    expect((await next()).id).toBe(1);
    const before = openSockets();
    // An attach connection that keeps dropping (a proxy in between with an idle timeout, a flaky
    // ssh:// engine connection) while the engine itself, and its `wait` connection, stay up.
    for (let drop = 1; drop <= 6; drop++) {
      server.attachConnection?.destroy();
      const deadline = Date.now() + 10_000;
      while (server.reattachCount < drop && Date.now() < deadline) await Bun.sleep(20);
      expect(server.reattachCount).toBe(drop);
    }
    server.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" })}\n`);
    expect((await next()).id).toBe(2);
    // An aborted `wait` closes its socket when the engine notices: polled, not slept.
    const deadline = Date.now() + 10_000;
    while (openSockets() > before + 1 && Date.now() < deadline) await Bun.sleep(50);
    expect(openSockets()).toBeLessThanOrEqual(before + 1);
    // The exit is still seen, through the one `wait` left.
    docker("kill", server.name);
    expect(await Promise.race([server.exited, Bun.sleep(10_000).then(() => "hung")])).not.toBe("hung");
  } finally {
    await server.stop(2_000);
  }
  expect(leftovers("reattach-sockets-test").containers).toEqual([]);
}, 60_000);

test("a stdio container that does not read its stdin: the bridge's channel refuses past the backlog", async () => {
  const options = { ...probeOptions("deaf-stdin-test"), Image: NODE_BASE_IMAGE, Cmd: ["sleep", "300"] };
  const server = await startServerContainer(engine, options, true);
  made.push("mcpmgr-deaf-stdin-test");
  try {
    const channel = lineChannel({
      stdout: server.stdout,
      stdin: server.stdin,
      onMessage: () => {},
      maxMessageBytes: 4 * 1024 * 1024,
    });
    void channel.closed;
    const padding = "z".repeat(512 * 1024);
    let refused: unknown;
    // `sleep` never reads: the socket's buffers fill, then what the engine did not take waits here.
    for (let i = 0; i < 400 && refused === undefined; i++) {
      try {
        channel.send({ jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "x", arguments: { padding } } });
      } catch (err) {
        refused = err;
      }
      await Bun.sleep(5);
    }
    expect(refused).toBeInstanceOf(ServerNotReading);
    expect(server.stdin.waiting()).toBeLessThan(5 * 1024 * 1024);
  } finally {
    await server.stop(2_000);
  }
}, 60_000);
