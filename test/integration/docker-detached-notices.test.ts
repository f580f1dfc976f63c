/**
 * What a detached container workload tells its user, in the terminal of `run` and in its logs: an
 * HTTP server whose port the user's own network choice leaves reachable without the proxy is warned
 * about (security.md W7), as in the foreground; a server the kernel killed at its memory limit is
 * named as such, not only as "exited with code 137".
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { fixtureImages, leftovers, type FixtureImages } from "../support/docker-fixtures.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";

// Real processes and containers: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

let images: FixtureImages;
let home: string;
const NAMES = ["dn-bridge", "dn-private", "dn-oom"];

function mcpmgr(args: string[], env: Record<string, string> = {}) {
  const result = Bun.spawnSync([process.execPath, CLI_ENTRY, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home, MCPMGR_RUNTIME: "docker", ...env },
    timeout: 240_000,
  });
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

beforeAll(async () => {
  images = await fixtureImages();
  home = await mkdtemp(join(tmpdir(), "mcpmgr-docker-notices-"));
}, 300_000);

afterAll(async () => {
  for (const name of NAMES) mcpmgr(["rm", name]);
  await rm(home, { recursive: true, force: true });
});

test("a detached HTTP container on a network the user chose: run warns that its port is reachable without the proxy", () => {
  const http = ["--transport", "streamable-http", "--image-verification", "disabled"];
  const chosen = mcpmgr(["run", images.httpProbe, "--name", "dn-bridge", "--network", "bridge", ...http]);
  expect(chosen.code).toBe(0);
  expect(chosen.stderr).toContain("running in the background");
  expect(chosen.stderr).toContain(
    "dn-bridge's MCP port is reachable on network bridge without going through the proxy (its authentication, policies and audit)",
  );
  // Said once: the supervisor's launch does not say it again in the proxy log.
  expect(mcpmgr(["logs", "dn-bridge", "--proxy"]).stdout).not.toContain("reachable on");
  // Left to mcpmgr, the server is reached through the relay alone: nothing to warn about.
  const isolated = mcpmgr(["run", images.httpProbe, "--name", "dn-private", ...http]);
  expect(isolated.code).toBe(0);
  expect(isolated.stderr).toContain("its MCP port is reached only by mcpmgr's proxy");
  expect(isolated.stderr).not.toContain("without going through the proxy");
  for (const name of ["dn-bridge", "dn-private"]) {
    expect(mcpmgr(["rm", name]).code).toBe(0);
    expect(leftovers(name)).toEqual({ containers: [], networks: [] });
  }
}, 240_000);

test("a container the kernel kills at its memory limit: the restart line says so, with the limit", async () => {
  const started = mcpmgr(["run", images.probe, "--name", "dn-oom", "--image-verification", "disabled"], {
    MCPMGR_CONTAINER_MEMORY: "48m",
  });
  expect(started.code).toBe(0);
  const client = new Client({ name: "docker-notices-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(started.stdout.trim())));
  // /dev/shm is memory: 60 MiB there is more than the container's 48 MiB.
  await client.callTool({ name: "fill_file", arguments: { path: "/dev/shm/fill", mib: 60 } }).catch(() => {});
  await client.close().catch(() => {});
  const proxyLog = () => mcpmgr(["logs", "dn-oom", "--proxy"]).stdout;
  const deadline = Date.now() + 60_000;
  while (!proxyLog().includes("restarting in") && Date.now() < deadline) await Bun.sleep(200);
  expect(proxyLog()).toContain("the MCP server exited with code 137");
  expect(proxyLog()).toContain(
    "mcpmgr-dn-oom was killed by the kernel for running out of memory at its limit of 48m (MCPMGR_CONTAINER_MEMORY sets it)",
  );
  expect(mcpmgr(["rm", "dn-oom"]).code).toBe(0);
  expect(leftovers("dn-oom")).toEqual({ containers: [], networks: [] });
}, 240_000);
