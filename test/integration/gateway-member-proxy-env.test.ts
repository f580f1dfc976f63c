/**
 * A member is a listener of this machine: the gateway never reaches it through an HTTP proxy from its
 * environment (gateway/member-send.ts). A member run with `--host` on a network address (here the
 * docker bridge's, which no_proxy seldom names) was reached through http_proxy, and the proxy got the
 * installation's gateway key with every request, in clear text. Real workload and gateway; a recorder
 * stands for the proxy.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CONFORMANCE_FIXTURE, createTestGroup, PROBE_FIXTURE, type TestGroup } from "../support/gateway-group.ts";
import { networkAddress, recordingListener } from "../support/network.ts";
import { CLI_ENTRY, freePort, spawnCollect } from "../support/processes.ts";

setDefaultTimeout(60_000);

let group: TestGroup;

beforeAll(async () => {
  group = await createTestGroup();
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
});

/** One of this machine's IPv4 addresses beyond loopback. */
function lanAddress(): string {
  const address = networkAddress();
  if (address === undefined) throw new Error("this machine has no IPv4 address beyond loopback");
  return address;
}

test("a member on a network address is reached directly, never through http_proxy, which never hears the key", async () => {
  const started = group.mcpmgr(
    "run",
    await group.packageOf(PROBE_FIXTURE),
    "--name",
    "keyed",
    "--permission-profile",
    "none",
    "--host",
    lanAddress(),
  );
  expect(started.code).toBe(0);
  const { server: proxy, heard, url: proxyUrl } = recordingListener();
  try {
    const gateway = await group.gatewayWithEnv(
      { http_proxy: proxyUrl, HTTP_PROXY: proxyUrl, all_proxy: proxyUrl },
      "default",
      "--tools",
      "keyed_echo",
    );
    const client = new Client({ name: "member-proxy-env", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
    const answer = await client
      .callTool({ name: "keyed_echo", arguments: { text: "direct" } })
      .then((result) => JSON.stringify(result.content))
      .catch((err: unknown) => String(err));
    expect(heard).toEqual([]);
    expect(answer).toContain("direct");
    await client.close();
    await gateway.stop();
  } finally {
    await proxy.stop(true);
  }
});

test("run's readiness probe, which carries the gateway key, never goes through http_proxy either", async () => {
  // A gateway once started leaves the installation's key behind; the probe of every later start carries it.
  const gateway = await group.gateway("default");
  await gateway.stop();
  const { server: proxy, heard, url: proxyUrl } = recordingListener();
  try {
    const started = await spawnCollect(
      [
        process.execPath,
        CLI_ENTRY,
        "run",
        await group.packageOf(PROBE_FIXTURE),
        "--name",
        "probed",
        "--permission-profile",
        "none",
        "--host",
        lanAddress(),
      ],
      {
        ...process.env,
        NO_COLOR: "1",
        MCPMGR_HOME: group.home,
        MCPMGR_RUNTIME: "process",
        http_proxy: proxyUrl,
        HTTP_PROXY: proxyUrl,
        all_proxy: proxyUrl,
      },
    );
    expect(heard).toEqual([]);
    expect(started.stderr).not.toContain("does not answer MCP");
    expect(started.code).toBe(0);
  } finally {
    await proxy.stop(true);
  }
});

test("run's readiness probe follows the workload's redirect to its own endpoint (a server at /mcp/), as MCP clients do", async () => {
  // A server mounted under /mcp/ by a framework that answers /mcp with a redirect to the trailing slash.
  // The probe sends only to the supervisor's listener, so it follows a redirect there itself: it was
  // refused as not answering MCP (and the workload removed) while every MCP client worked with it.
  const port = String(await freePort());
  const started = group.mcpmgr(
    "run",
    await group.packageOf(CONFORMANCE_FIXTURE),
    "--name",
    "slashed",
    "--permission-profile",
    "network",
    "--transport",
    "streamable-http",
    "--target-port",
    port,
    "--",
    "http",
    "--port",
    port,
    "--slash-redirect",
  );
  expect(started.stderr).not.toContain("does not answer MCP");
  expect(started.code).toBe(0);
  const client = new Client({ name: "slash-redirect", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(started.stdout.trim())));
  expect((await client.listTools()).tools.length).toBeGreaterThan(0);
  await client.close();
  expect(group.mcpmgr("rm", "slashed").code).toBe(0);
});
