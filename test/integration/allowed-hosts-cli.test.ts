/**
 * DNS rebinding on listeners bound beyond loopback (review 7, R7-M2; docs/security.md S12): a
 * workload, a proxy and a gateway bound to 0.0.0.0 refuse a request whose Host is a name they do
 * not answer to (what a page whose DNS name was rebound to this machine sends), on every path
 * (/mcp and /health), and serve an IP address and a name given with --allowed-hosts. The option is
 * recorded with the background workload and exported.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { expectOneLineError } from "../support/cli-home.ts";
import { createTestGroup, PROBE_FIXTURE, type TestGroup, until } from "../support/gateway-group.ts";
import { startProxy } from "../support/processes.ts";
import { networkAddress } from "../support/network.ts";

setDefaultTimeout(60_000);

const ALLOWED = "mcp.test.internal";
const REBOUND = "rebind.attacker.example";

/** This machine's address on a network (a listener on 0.0.0.0 is reached there); loopback if it has none. */
const address = networkAddress() ?? "127.0.0.1";

let group: TestGroup;
let workloadPort: number;
let startedStderr: string;

beforeAll(async () => {
  group = await createTestGroup();
  const started = group.mcpmgr(
    "run",
    await group.packageOf(PROBE_FIXTURE),
    "--name",
    "lan",
    "--permission-profile",
    "none",
    "--host",
    "0.0.0.0",
    "--allowed-hosts",
    `${ALLOWED},.corp.test`,
  );
  if (started.code !== 0) throw new Error(`mcpmgr run failed:\n${started.stderr}`);
  workloadPort = Number(new URL(started.stdout.trim()).port);
  startedStderr = started.stderr;
});

/** The one line a listener beyond loopback without --oidc-issuer gets (review 9, F9). */
const reachable = (what: string, port: number) =>
  `${what} listens on every address of this machine, port ${port}, reachable from the network; no authentication (no --oidc-issuer): anyone who can reach port ${port} can call its tools`;

afterAll(async () => {
  await group?.cleanup();
});

/** An MCP initialize sent to this machine's address, as a browser would with the given Host (and Origin). */
async function initialize(port: number, path: string, host: string, origin?: string) {
  const res = await fetch(`http://${address}:${port}${path}`, {
    method: "POST",
    headers: {
      host,
      ...(origin ? { origin } : {}),
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "page", version: "1" } },
    }),
  });
  return { status: res.status, text: await res.text() };
}

const health = async (port: number, host: string) => {
  const res = await fetch(`http://${address}:${port}/health`, { headers: { host } });
  return { status: res.status, text: await res.text() };
};

/** The SDK client's tools through `url`, every request carrying `host` as its Host. */
async function toolsVia(url: string, host?: string): Promise<string[]> {
  const client = new Client({ name: "allowed-hosts-test", version: "1.0.0" });
  const fetchWithHost = (input: string | URL | Request, init?: RequestInit) => {
    const headers = new Headers(init?.headers);
    if (host) headers.set("host", host);
    return fetch(input, { ...init, headers });
  };
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: fetchWithHost }));
  try {
    return (await client.listTools()).tools.map((tool) => tool.name);
  } finally {
    await client.close();
  }
}

/** What every listener beyond loopback must do, whichever command opened it. */
async function expectRebindingRefused(port: number, path: string, serverName: string) {
  for (const origin of [undefined, `http://${REBOUND}:${port}`]) {
    const refused = await initialize(port, path, `${REBOUND}:${port}`, origin);
    expect({ origin, status: refused.status }).toEqual({ origin, status: 403 });
    const error = (JSON.parse(refused.text) as { error: { message: string } }).error.message;
    expect(error).toContain(`"${REBOUND}"`);
    expect(error).toContain("--allowed-hosts");
  }
  const probe = await health(port, `${REBOUND}:${port}`);
  expect(probe.status).toBe(403);
  expect(probe.text).not.toContain(serverName);
  expect((await health(port, `${address}:${port}`)).status).toBe(200);
}

describe("a background workload bound to 0.0.0.0", () => {
  test("refuses a rebound Host on /mcp and /health (403, naming the host and the option)", async () => {
    await expectRebindingRefused(workloadPort, "/mcp", "lan");
  });

  test("serves its IP address, this machine's name, an allowed name and a subdomain of an allowed domain", async () => {
    expect(await toolsVia(`http://${address}:${workloadPort}/mcp`)).toContain("echo");
    expect(await toolsVia(`http://${address}:${workloadPort}/mcp`, `${ALLOWED}:${workloadPort}`)).toContain("echo");
    // This machine's own name needs no entry.
    expect(await toolsVia(`http://${address}:${workloadPort}/mcp`, `${hostname()}:${workloadPort}`)).toContain("echo");
    const sameOrigin = await initialize(
      workloadPort,
      "/mcp",
      `api.corp.test:${workloadPort}`,
      `http://api.corp.test:${workloadPort}`,
    );
    expect(sameOrigin.status).toBe(200);
  });

  test("says it is reachable from the network and unauthenticated, also when replayed from an exported file (review 9, F9)", () => {
    expect(startedStderr).toContain(reachable("lan", workloadPort));
    const exported = JSON.parse(group.mcpmgr("export", "lan", "-").stdout) as { name: string; runOptions: string[] };
    const options = exported.runOptions.map((word) => (word === "lan" ? "lan-copy" : word));
    const port = options.indexOf("--proxy-port");
    if (port !== -1) options.splice(port, 2);
    const file = join(group.home, "lan-copy.json");
    writeFileSync(file, JSON.stringify({ ...exported, name: "lan-copy", runOptions: options }));
    const replayed = group.mcpmgr("run", "--from-config", file);
    expect(replayed.code).toBe(0);
    expect(replayed.stderr).toContain(reachable("lan-copy", Number(new URL(replayed.stdout.trim()).port)));
    expect(group.mcpmgr("rm", "lan-copy").code).toBe(0);
  });

  test("keeps --allowed-hosts in its record: export shows it", () => {
    const exported = group.mcpmgr("export", "lan", "-");
    expect(exported.code).toBe(0);
    const runOptions = (JSON.parse(exported.stdout) as { runOptions: string[] }).runOptions;
    expect(runOptions).toContain("--allowed-hosts");
    expect(runOptions).toContain(`${ALLOWED},.corp.test`);
  });
});

test("mcpmgr proxy bound to 0.0.0.0 refuses a rebound Host and serves an allowed one", async () => {
  const proxy = await startProxy(`http://127.0.0.1:${workloadPort}/mcp`, [
    "--host",
    "0.0.0.0",
    "--allowed-hosts",
    ALLOWED,
  ]);
  try {
    const port = Number(new URL(proxy.url).port);
    expect(await until(() => proxy.output().includes(reachable("proxy 'test-proxy'", port)))).toBe(true);
    await expectRebindingRefused(port, "/mcp", "test-proxy");
    expect(await toolsVia(`http://${address}:${port}/mcp`, `${ALLOWED}:${port}`)).toContain("echo");
  } finally {
    await proxy.stop();
  }
});

test("mcpmgr gateway bound to 0.0.0.0 refuses a rebound Host and serves its IP address", async () => {
  const gateway = await group.gateway("default", "--host", "0.0.0.0");
  try {
    const port = Number(new URL(gateway.url).port);
    // Written right after the URL the helper waited for.
    expect(await until(() => gateway.output().includes(reachable("gateway for group 'default'", port)))).toBe(true);
    await expectRebindingRefused(port, "/mcp", "gateway-default");
    expect(await toolsVia(`http://${address}:${port}/mcp`)).toContain("lan_echo");
  } finally {
    await gateway.stop();
  }
});

test("--allowed-hosts has no switch that turns the check off", () => {
  for (const value of ["*", "all"]) {
    const refused = group.mcpmgr("proxy", "x", "--target-uri", "http://127.0.0.1:9/mcp", "--allowed-hosts", value);
    expect(expectOneLineError(refused, 2)).toContain("list the names instead");
  }
});
