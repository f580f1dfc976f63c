/**
 * `mcpmgr run NAME` for registry entries: the embedded catalog and a custom registry
 * (MCPMGR_REGISTRY). The entry's transport, permission profile, env defaults and
 * required variables apply unless a flag overrides them.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CLI_ENTRY, REPO_ROOT, spawnUntil } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const registryEnv = {
  MCPMGR_REGISTRY: join(REPO_ROOT, "test/fixtures/registry/probe-registry.json"),
  MCPMGR_SECRETS_PROVIDER: "environment",
};
let loopback: Bun.TCPSocketListener<undefined>;

beforeAll(() => {
  loopback = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      data() {},
      open(socket) {
        socket.end();
      },
    },
  });
});
afterAll(() => loopback.stop(true));

async function runEntry(args: string[], env: Record<string, string> = {}) {
  const running = await spawnUntil([process.execPath, CLI_ENTRY, "run", "--foreground", ...args], /^(http:\/\/\S+)$/m, {
    env: { ...registryEnv, ...env },
    timeoutMs: 30_000,
  });
  const client = new Client({ name: "registry-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(running.match[1] as string)));
  const call = async (name: string, a: Record<string, unknown>) =>
    ((await client.callTool({ name, arguments: a })) as { content: { text: string }[] }).content[0]?.text;
  return { ...running, client, call };
}

test("the embedded catalog's everything entry runs by name", async () => {
  const run = await runEntry(["everything"], { MCPMGR_REGISTRY: "" });
  try {
    const { tools } = await run.client.listTools();
    expect(tools.map((t) => t.name)).toContain("echo");
    await run.client.close();
  } finally {
    await run.stop();
  }
  expect(run.output()).toContain("everything is running");
}, 60_000);

test("a custom registry entry brings its profile, env defaults and required secrets; flags override", async () => {
  const run = await runEntry(["probe", "--secret", "probe-token,target=PROBE_TOKEN"], {
    MCPMGR_SECRET_PROBE_TOKEN: "t0ken-value",
  });
  try {
    expect(await run.call("env", { name: "PROBE_MODE" })).toBe("from-registry");
    expect(await run.call("env", { name: "PROBE_TOKEN" })).toBe("t0ken-value");
    expect(await run.call("tcp_connect", { host: "127.0.0.1", port: loopback.port })).not.toBe("connected");
    await run.client.close();
  } finally {
    await run.stop();
  }

  const overridden = await runEntry([
    "probe",
    "-e",
    "PROBE_MODE=flag",
    "-e",
    "PROBE_TOKEN=plain",
    "--permission-profile",
    "network",
  ]);
  try {
    expect(await overridden.call("env", { name: "PROBE_MODE" })).toBe("flag");
    expect(await overridden.call("tcp_connect", { host: "127.0.0.1", port: loopback.port })).toBe("connected");
    await overridden.client.close();
  } finally {
    await overridden.stop();
  }
}, 60_000);
