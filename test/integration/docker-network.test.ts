/**
 * --isolate-network against a real engine: the server container sits on an internal
 * network; the egress helper lets through only the profile's hosts and ports, blocks the
 * host gateway unless --allow-docker-gateway, and relays inbound traffic for HTTP servers.
 * Everything it created is gone after the run stops.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  docker,
  fixtureImages,
  leftovers,
  networkGateway,
  runInDocker as runForeground,
  type FixtureImages,
} from "../support/docker-fixtures.ts";
import { NODE_BASE_IMAGE } from "../support/docker-images.ts";
import { type HeldRequest, holdPost } from "../support/held-request.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const TARGET_PORT = 8000;
let images: FixtureImages;
let scratch: string;
const targets: { name: string; ip: string }[] = [];
let hostServer: ReturnType<typeof Bun.serve>;
let gateway: string;

function startTarget(name: string): { name: string; ip: string } {
  docker("rm", "-f", name);
  const script = `require("http").createServer((q, s) => s.end("${name}")).listen(${TARGET_PORT})`;
  const started = docker(
    "run",
    "-d",
    "--name",
    name,
    "--label",
    "mcpmgr-test=true",
    NODE_BASE_IMAGE,
    "node",
    "-e",
    script,
  );
  if (started.code !== 0) throw new Error(started.err);
  const ip = docker("inspect", name, "--format", "{{.NetworkSettings.IPAddress}}").out;
  return { name, ip };
}

beforeAll(async () => {
  images = await fixtureImages();
  scratch = await mkdtemp(join(tmpdir(), "mcpmgr-docker-net-"));
  targets.push(startTarget("mcpmgr-test-target-a"), startTarget("mcpmgr-test-target-b"));
  hostServer = Bun.serve({ hostname: "0.0.0.0", port: 0, fetch: () => new Response("host") });
  gateway = networkGateway();
  // The targets listen (reached from the host on the default bridge).
  for (const target of targets) {
    const deadline = Date.now() + 30_000;
    const answers = () =>
      fetch(`http://${target.ip}:${TARGET_PORT}/`).then(
        (res) => res.ok,
        () => false,
      );
    while (!(await answers()) && Date.now() < deadline) await Bun.sleep(100);
  }
}, 300_000);

afterAll(async () => {
  for (const target of targets) docker("rm", "-f", target.name);
  await hostServer?.stop(true);
  await rm(scratch, { recursive: true, force: true });
});

/**
 * The test's "internet": the target containers joined to the workload's outside network,
 * where the egress helper reaches them (the host itself is blocked, as it should be).
 * Returns a function that takes them off again.
 */
function exposeTargets(workload: string): () => void {
  const network = `mcpmgr-${workload}.external`;
  for (const target of targets) expect(docker("network", "connect", network, target.name).code).toBe(0);
  for (const target of targets)
    target.ip = docker(
      "inspect",
      target.name,
      "--format",
      `{{(index .NetworkSettings.Networks "${network}").IPAddress}}`,
    ).out;
  return () => {
    for (const target of targets) docker("network", "disconnect", "-f", network, target.name);
  };
}

async function profileFile(name: string, profile: unknown): Promise<string> {
  const path = join(scratch, `${name}.json`);
  await writeFile(path, JSON.stringify(profile));
  return path;
}

describe("--isolate-network", () => {
  test("only the allowed host and port are reachable, through the egress proxy", async () => {
    // The targets get their outside-network addresses only after the run created that
    // network, so the profile allows target a by name (resolved by the helper, then checked).
    const name = "docker-isolated";
    const profile = await profileFile("one-host", {
      network: { outbound: { allow_host: ["mcpmgr-test-target-a"], allow_port: [TARGET_PORT] } },
    });
    const run = await runForeground([
      images.probe,
      "--name",
      name,
      "--isolate-network",
      "--permission-profile",
      profile,
    ]);
    const hide = exposeTargets(name);
    const [a, b] = targets as unknown as [{ ip: string }, { ip: string }];
    try {
      // Names resolve through the outside network's DNS, in the helper, after the check.
      expect((await run.call("http_get", { url: `http://mcpmgr-test-target-a:${TARGET_PORT}/` })).text).toBe(
        "status 200: mcpmgr-test-target-a",
      );
      expect((await run.call("http_get", { url: `http://mcpmgr-test-target-b:${TARGET_PORT}/` })).text).toStartWith(
        "status 403",
      );
      // By address: a is not named by its address in the profile, so both are refused.
      expect((await run.call("http_get", { url: `http://${b.ip}:${TARGET_PORT}/` })).text).toStartWith("status 403");
      // Going around the proxy finds no route: the network is internal...
      expect((await run.call("tcp_connect", { host: a.ip, port: TARGET_PORT })).isError).toBe(true);
      // ...and its gateway is not the host: a host service on every interface stays out of reach.
      const internalGateway = networkGateway(`mcpmgr-${name}.internal`);
      expect(internalGateway).not.toBe("");
      expect((await run.call("tcp_connect", { host: internalGateway, port: hostServer.port })).isError).toBe(true);
      expect((await run.call("http_get", { url: `http://${internalGateway}:${hostServer.port}/` })).text).toStartWith(
        "status 403",
      );
      expect(leftovers(name).networks.length).toBe(2);
      expect(leftovers(name).containers.length).toBe(2);
      await run.client.close();
    } finally {
      hide();
      await run.stop();
    }
    expect(leftovers(name)).toEqual({ containers: [], networks: [] });
  }, 300_000);

  test("the host and metadata addresses are blocked even when all outbound traffic is allowed, unless --allow-docker-gateway", async () => {
    const url = `http://${gateway}:${hostServer.port}/`;
    const blocked = await runForeground([images.probe, "--name", "docker-gw-blocked", "--isolate-network"]);
    const hide = exposeTargets("docker-gw-blocked");
    try {
      expect((await blocked.call("http_get", { url: `http://${targets[1]?.ip}:${TARGET_PORT}/` })).text).toBe(
        "status 200: mcpmgr-test-target-b",
      );
      expect((await blocked.call("http_get", { url })).text).toStartWith("status 403");
      expect((await blocked.call("http_get", { url: "http://169.254.169.254/latest/meta-data/" })).text).toStartWith(
        "status 403",
      );
      expect((await blocked.call("http_get", { url: `http://127.0.0.1:3128/` })).text).toStartWith("status 403");
      await blocked.client.close();
    } finally {
      hide();
      await blocked.stop();
    }
    const allowed = await runForeground([
      images.probe,
      "--name",
      "docker-gw-allowed",
      "--isolate-network",
      "--allow-docker-gateway",
    ]);
    try {
      expect((await allowed.call("http_get", { url })).text).toBe("status 200: host");
      // The flag opens the Docker host only: cloud metadata and the helper's own ports stay shut.
      expect((await allowed.call("http_get", { url: "http://169.254.169.254/latest/meta-data/" })).text).toStartWith(
        "status 403",
      );
      expect((await allowed.call("http_get", { url: "http://127.0.0.1:3128/" })).text).toStartWith("status 403");
      await allowed.client.close();
    } finally {
      await allowed.stop();
    }
  }, 300_000);

  test("an HTTP server is reached only through the ingress relay; profile none denies all egress", async () => {
    const name = "docker-isolated-http";
    const run = await runForeground([
      images.httpProbe,
      "--name",
      name,
      "--transport",
      "streamable-http",
      "--permission-profile",
      "none",
    ]);
    try {
      expect((await run.call("whoami")).text).toContain("transport=streamable-http");
      const server = JSON.parse(docker("inspect", `mcpmgr-${name}`).out)[0];
      expect(Object.keys(server.HostConfig.PortBindings ?? {})).toEqual([]);
      expect(server.HostConfig.NetworkMode).toBe(`mcpmgr-${name}.internal`);
      const helper = JSON.parse(docker("inspect", `mcpmgr-${name}.egress`).out)[0];
      // The helper is on its own outside network, not the shared bridge other containers use.
      expect(Object.keys(helper.NetworkSettings.Networks).sort()).toEqual([
        `mcpmgr-${name}.external`,
        `mcpmgr-${name}.internal`,
      ]);
      // Nothing published: the proxy reaches the relay through a Unix socket in mcpmgr's runtime directory.
      expect(Object.keys(helper.HostConfig.PortBindings ?? {})).toEqual([]);
      expect(helper.HostConfig.Mounts.map((m: { Target: string }) => m.Target)).toEqual(["/ingress"]);
      expect(helper.HostConfig.CapDrop).toEqual(["ALL"]);
      expect(helper.HostConfig.ReadonlyRootfs).toBe(true);
      await run.client.close();
    } finally {
      await run.stop();
    }
    expect(leftovers(name)).toEqual({ containers: [], networks: [] });
  }, 300_000);

  test("300 answer streams held open through the ingress relay do not stall the next request", async () => {
    // The forwarder reaches the relay's Unix socket; with fetch (at most 256 requests at once per
    // process) the 257th request queued behind streams that never end.
    const name = "docker-isolated-held";
    const run = await runForeground([
      images.httpProbe,
      "--name",
      name,
      "--transport",
      "streamable-http",
      "--permission-profile",
      "none",
    ]);
    const held: HeldRequest[] = [];
    try {
      const url = run.match[1] as string;
      const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
      for (let next = 0; next < 300; next += 50) {
        const batch = Array.from({ length: 50 }, (_, i) =>
          holdPost(
            url,
            headers,
            JSON.stringify({ jsonrpc: "2.0", id: next + i, method: "tools/call", params: { name: "hold" } }),
            /: held/,
            15_000,
          ),
        );
        held.push(...(await Promise.all(batch)));
      }
      expect(held.filter((request) => !request.received.includes(": held")).length).toBe(0);
      const answer = await Promise.race([run.call("whoami"), Bun.sleep(10_000).then(() => ({ text: "no answer" }))]);
      expect(answer.text).toContain("transport=streamable-http");
      await run.client.close();
    } finally {
      for (const request of held) request.close();
      await run.stop();
    }
    expect(leftovers(name)).toEqual({ containers: [], networks: [] });
  }, 300_000);
});
