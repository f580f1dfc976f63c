/**
 * A proxy in the environment (HTTP_PROXY, no NO_PROXY) never carries mcpmgr's traffic to its own
 * endpoints on loopback: `run` confirms the workload answers (Bun's fetch, which proxies loopback
 * unless no_proxy names it), and a gateway reaches its members (mcpmgr's HTTP client, which left
 * proxied origins to fetch). The proxy named here accepts no connection, as a proxy elsewhere
 * cannot reach this machine's 127.0.0.1; before, both failed with ECONNREFUSED.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { type MemberServer, startMemberServer } from "../fixtures/member-server.ts";
import { createTestGroup, PROBE_FIXTURE, type TestGroup } from "../support/gateway-group.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";
import { openRawSession } from "../support/raw-session.ts";

setDefaultTimeout(60_000);

/** A port nothing listens on: a proxy there refuses every connection. */
const PROXY = "http://127.0.0.1:9";
const proxyEnv = { HTTP_PROXY: PROXY, http_proxy: PROXY, HTTPS_PROXY: PROXY, https_proxy: PROXY };

let group: TestGroup;
let member: MemberServer;

beforeAll(async () => {
  group = await createTestGroup();
  member = startMemberServer({ name: "docs", resources: ["test://doc"] });
  // The gateway's member: started as the test group does, without the proxy.
  group.run(member.url, "docs", "proxied");
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  await member?.stop();
});

test("run with a proxy in the environment: the check that the workload answers reaches it directly", async () => {
  const probe = await group.packageOf(PROBE_FIXTURE);
  const env: Record<string, string | undefined> = {
    ...process.env,
    ...proxyEnv,
    NO_COLOR: "1",
    MCPMGR_HOME: group.home,
    MCPMGR_RUNTIME: "process",
  };
  delete env.NO_PROXY;
  delete env.no_proxy;
  const result = Bun.spawnSync(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      probe,
      "--name",
      "probe",
      "--group",
      "proxied",
      "--permission-profile",
      "none",
    ],
    { cwd: REPO_ROOT, env, timeout: 120_000 },
  );
  expect({ code: result.exitCode, stderr: result.stderr.toString().includes("ECONNREFUSED") }).toEqual({
    code: 0,
    stderr: false,
  });
});

test("a gateway with a proxy in the environment reaches its loopback members", async () => {
  const gateway = await group.gatewayWithEnv(proxyEnv, "proxied");
  const session = await openRawSession(gateway.url, "2025-06-18", "proxied-client");
  const read = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "resources/read", params: { uri: "test://doc" } });
  expect(await (await session.post(read)).text()).toContain("docs says: contents of test://doc");
});
