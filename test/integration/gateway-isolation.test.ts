/**
 * What one gateway caller must not reach of another's, and what a hostile workload of the group
 * must not take over: real workloads (test/fixtures/member-server.ts behind `mcpmgr run URL`),
 * a gateway with OIDC (test/support/auth-server.ts) and real SDK clients.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { JWT_RESOURCE, startAuthServer, type AuthServer } from "../support/auth-server.ts";
import { createTestGroup, type TestGroup } from "../support/gateway-group.ts";
import { type MemberServer, startMemberServer } from "../fixtures/member-server.ts";

let group: TestGroup;
let auth: AuthServer;
let state: MemberServer;
let gateway: Awaited<ReturnType<TestGroup["gateway"]>>;

beforeAll(async () => {
  group = await createTestGroup();
  auth = await startAuthServer();
  state = startMemberServer({ name: "state", tools: [] });
  group.run(state.url, "state", "team");
  gateway = await group.gateway(
    "team",
    "--oidc-issuer",
    auth.issuer,
    "--oidc-audience",
    JWT_RESOURCE,
    "--oidc-insecure-allow-http",
    "--jwks-allow-private-ip",
  );
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  await auth?.stop();
  await state?.stop();
});

async function modernAs(client: "service" | "otherService"): Promise<ModernClient> {
  const token = await auth.token({ client });
  const modern = new ModernClient(
    { name: `modern-${client}`, version: "1.0.0" },
    { versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  await modern.connect(
    new ModernTransport(new URL(gateway.url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  return modern;
}

const text = (result: unknown) => ((result as { content: { text: string }[] }).content[0] as { text: string }).text;

describe("2026-07-28 callers", () => {
  test("do not share a workload's upstream session across principals", async () => {
    const alice = await modernAs("service");
    const bob = await modernAs("otherService");
    try {
      await alice.callTool({ name: "state_setctx", arguments: { note: "alice-private" } });
      expect(text(await alice.callTool({ name: "state_getctx", arguments: {} }))).toContain("alice-private");
      expect(text(await bob.callTool({ name: "state_getctx", arguments: {} }))).toBe("ctx=null");
    } finally {
      await Promise.allSettled([alice.close(), bob.close()]);
    }
  });
});
