/**
 * Containers get only what the user granted (issue 18), against a real Docker engine:
 * a registry entry cannot mount the engine socket, system directories or mcpmgr's state
 * unless --allow-registry-mount grants it, and `run` prints what the workload gets; an
 * HTTP server's MCP port is reached only through mcpmgr's proxy (not from a host process,
 * not from another container); symlinked volumes do not show mcpmgr's state; single-file
 * volumes work.
 */
import { afterAll, beforeAll, describe, expect, onTestFinished, setDefaultTimeout, test } from "bun:test";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import {
  docker,
  fixtureImages,
  leftovers,
  runInDocker,
  runInDockerFails,
  type FixtureImages,
} from "../support/docker-fixtures.ts";
import { NODE_BASE_IMAGE } from "../support/docker-images.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const MCPMGR_HOME = process.env.MCPMGR_HOME as string;
let images: FixtureImages;
let scratch: string;
let savedSecrets: Buffer | undefined;

beforeAll(async () => {
  images = await fixtureImages();
  scratch = await mkdtemp(join(tmpdir(), "mcpmgr-docker-hardening-"));
  await mkdir(join(MCPMGR_HOME, "data"), { recursive: true });
  savedSecrets = await readFile(join(MCPMGR_HOME, "data/secrets.enc.json")).catch(() => undefined);
  await writeFile(join(MCPMGR_HOME, "data/secrets.enc.json"), "secret-marker");
}, 300_000);

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
  // Not a valid secrets file: later tests share this MCPMGR_HOME.
  if (savedSecrets) await writeFile(join(MCPMGR_HOME, "data/secrets.enc.json"), savedSecrets);
  else await rm(join(MCPMGR_HOME, "data/secrets.enc.json"), { force: true });
});

/** A custom registry with one entry running `image` with `permissions`. */
async function registryWith(name: string, image: string, permissions: unknown): Promise<Record<string, string>> {
  const path = join(scratch, `${name}-registry.json`);
  await writeFile(
    path,
    JSON.stringify({
      servers: [
        {
          name,
          description: "a registry entry asking for host paths",
          transport: "stdio",
          source: { image },
          permissions,
          tools: ["read_file"],
        },
      ],
    }),
  );
  return { MCPMGR_REGISTRY: path };
}

describe("a registry entry's mounts", () => {
  test("the engine's socket directory, /etc, mcpmgr's home and a socket directory in /tmp are refused, each naming the grant flag", async () => {
    // tmux's default layout, /tmp/tmux-UID/default (review H3).
    const tmuxDir = join(scratch, "tmux-0");
    await mkdir(tmuxDir, { recursive: true });
    const tmux = Bun.listen({ unix: join(tmuxDir, "default"), socket: { data() {} } });
    onTestFinished(() => tmux.stop(true));
    for (const [path, reason] of [
      ["/var/run", "system directory"],
      ["/etc", "system directory"],
      [MCPMGR_HOME, "mcpmgr's own state"],
      ["/var/run/docker.sock", "socket"],
      [tmuxDir, "it lies in /tmp"],
    ] as const) {
      const env = await registryWith("greedy", images.probe, { read: [path] });
      const refused = await runInDockerFails(["greedy", "--name", "docker-greedy"], env);
      expect(refused.code).toBe(2);
      expect(refused.err).toContain("registry entry greedy asks to read");
      expect(refused.err).toContain(reason);
      expect(refused.err).toContain("--allow-registry-mount");
      expect(leftovers("docker-greedy").containers).toEqual([]);
    }
  }, 240_000);

  test("--allow-registry-mount grants one path; run prints every path, the network and the devices first", async () => {
    const env = await registryWith("greedy", images.probe, { read: ["/etc"], network: { mode: "none" } });
    const run = await runInDocker(["greedy", "--name", "docker-granted", "--allow-registry-mount", "/etc"], { env });
    try {
      expect((await run.call("read_file", { path: "/etc/hostname" })).isError).toBe(false);
      const output = run.output();
      expect(output).toContain("docker-granted gets (docker container");
      expect(output).toMatch(/read {3}\/etc {2}\(registry entry greedy\)/);
      expect(output).toContain("network: none");
      expect(output).toContain("devices: the engine's defaults");
      await run.client.close();
    } finally {
      await run.stop();
    }
  }, 240_000);
});

describe("volumes", () => {
  test("a -v source that is a symlink to mcpmgr's home, or to its parent, shows nothing of it", async () => {
    await symlink(MCPMGR_HOME, join(scratch, "home-link"));
    await symlink(dirname(MCPMGR_HOME), join(scratch, "parent-link"));
    const run = await runInDocker([
      images.probe,
      "--name",
      "docker-symlinks",
      "-v",
      `${join(scratch, "home-link")}:/state:ro`,
      "-v",
      `${join(scratch, "parent-link")}:/parent:ro`,
    ]);
    try {
      const base = join("/parent", MCPMGR_HOME.slice(dirname(MCPMGR_HOME).length + 1));
      // The parent volume works (the test can fail) ...
      expect(
        (
          await run.call("read_file", {
            path: join("/parent", scratch.slice(dirname(scratch).length + 1), "greedy-registry.json"),
          })
        ).isError,
      ).toBe(false);
      // ... but mcpmgr's home is empty under both names.
      for (const path of ["/state/data/secrets.enc.json", join(base, "data/secrets.enc.json")])
        expect(`${path}: ${(await run.call("read_file", { path })).text}`).toBe(`${path}: ENOENT`);
      await run.client.close();
    } finally {
      await run.stop();
    }
  }, 240_000);

  test("a single-file volume is mounted", async () => {
    const one = join(scratch, "one.txt");
    await writeFile(one, "one");
    const run = await runInDocker([images.probe, "--name", "docker-file-volume", "-v", `${one}:/one.txt:ro`]);
    try {
      expect((await run.call("read_file", { path: "/one.txt" })).text).toBe("one");
      expect((await run.call("write_file", { path: "/one.txt" })).text).toBe("EROFS");
      await run.client.close();
    } finally {
      await run.stop();
    }
  }, 240_000);
});

/** An MCP initialize POSTed to `url`: the status, or the error that stopped it. */
const initialize = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "intruder", version: "1" } },
});

test("an HTTP container's MCP port is reached only through the proxy: not from a host process, not from another container", async () => {
  const name = "docker-http-private";
  const run = await runInDocker([
    images.httpProbe,
    "--name",
    name,
    "--transport",
    "streamable-http",
    "--target-port",
    "9090",
  ]);
  try {
    // Through the proxy: fine.
    expect((await run.call("whoami")).text).toContain("port=9090");
    const info = JSON.parse(docker("inspect", `mcpmgr-${name}`).out)[0] as {
      NetworkSettings: { Networks: Record<string, { IPAddress: string }> };
      HostConfig: { PortBindings: Record<string, unknown> | null };
    };
    const addresses = Object.values(info.NetworkSettings.Networks)
      .map((n) => n.IPAddress)
      .filter((ip) => ip !== "");
    // (The relay helper's addresses too, on every network it is on.)
    const helper = (JSON.parse(docker("inspect", `mcpmgr-${name}.egress`).out || "[]")[0] ?? {
      NetworkSettings: { Networks: {} },
    }) as typeof info;
    const helperAddresses = Object.values(helper.NetworkSettings.Networks)
      .map((n) => n.IPAddress)
      .filter((ip) => ip !== "");
    const urls = [
      ...addresses.map((ip) => `http://${ip}:9090/mcp`),
      ...helperAddresses.flatMap((ip) => [`http://${ip}:8080/mcp`, `http://${ip}:9090/mcp`]),
    ];
    expect(urls.length).toBeGreaterThan(0);
    // From a host process. (An address with no route goes to the default gateway, which may
    // answer something: only the probe's own initialize result counts as reaching it.)
    const reached = (body: string) => body.includes('"http-probe"');
    for (const url of urls) {
      const answer = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: initialize,
        signal: AbortSignal.timeout(3_000),
      }).then(
        (res) => res.text(),
        (err: Error) => err.name,
      );
      expect(`${url}: ${reached(answer) ? "reached" : "not reached"}`).toBe(`${url}: not reached`);
    }
    // From a second container on the default bridge.
    const script = `const urls = ${JSON.stringify(urls)}; Promise.all(urls.map((u) => fetch(u, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream" }, body: ${JSON.stringify(initialize)}, signal: AbortSignal.timeout(3000) }).then((r) => r.text(), (e) => e.name).then((t) => u + " " + (t.includes('"http-probe"') ? "reached" : "not reached")))).then((r) => console.log(r.join("\\n")));`;
    const probe = docker("run", "--rm", "--label", "mcpmgr-test=true", NODE_BASE_IMAGE, "node", "-e", script);
    expect(probe.code).toBe(0);
    const lines = probe.out.split("\n");
    expect(lines).toHaveLength(urls.length);
    for (const line of lines) expect(line).toEndWith(" not reached");
    // Nothing published on the host.
    expect(Object.keys(info.HostConfig.PortBindings ?? {})).toEqual([]);
    // The relay's socket: the proxy's way in, closed to other users of the host.
    const socket = join(MCPMGR_HOME, "run/ingress", name, "mcp.sock");
    const asNobody = Bun.spawnSync(
      [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--",
        process.execPath,
        "-e",
        `const r = await fetch("http://localhost/mcp", { unix: ${JSON.stringify(socket)}, method: "POST", headers: { "content-type": "application/json" }, body: ${JSON.stringify(initialize)} }).then((r) => "HTTP " + r.status, (e) => e.code ?? e.name); console.log(r);`,
      ],
      { stdout: "pipe", stderr: "pipe" },
    );
    expect(asNobody.stdout.toString().trim()).toBe("EACCES");
    const asOwner = await fetch("http://localhost/mcp", {
      unix: socket,
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: initialize,
    });
    expect(asOwner.status).toBe(200);
    await run.client.close();
  } finally {
    await run.stop();
  }
  expect(leftovers(name)).toEqual({ containers: [], networks: [] });
}, 240_000);
