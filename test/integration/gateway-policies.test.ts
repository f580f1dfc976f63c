/**
 * The policies `run` has, in front of a gateway: `--tools` and Cedar policies name the
 * gateway's tools (`<workload>_<tool>`), and the audit trail records each call under the
 * name the client used. Two stdio fixture workloads in one group, one gateway with all three.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { createTestGroup, PROBE_FIXTURE, type TestGroup, until } from "../support/gateway-group.ts";
import { writeCedarConfig } from "../support/cedar-config.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let group: TestGroup;
let dir: string;
let logFile: string;
let client: Client;

beforeAll(async () => {
  group = await createTestGroup();
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-gateway-policies-"));
  const probe = await group.packageOf(PROBE_FIXTURE);
  group.run(probe, "alpha", "team");
  group.run(probe, "beta", "team");
  logFile = join(dir, "audit.jsonl");
  const audit = join(dir, "audit.json");
  await writeFile(audit, JSON.stringify({ logFile, eventTypes: ["mcp_tool_call"] }));
  const authz = join(dir, "authz.json");
  await writeCedarConfig(authz, [
    "permit(principal, action, resource);",
    'forbid(principal, action == Action::"call_tool", resource == Tool::"beta_echo");',
    'forbid(principal, action == Action::"call_tool", resource == Tool::"alpha_echo") when { context.arg_text == "secret" };',
  ]);
  const gateway = await group.gateway(
    "team",
    "--tools",
    "alpha_echo,alpha_stats,beta_echo",
    "--authz-config",
    authz,
    "--audit-config",
    audit,
  );
  client = new Client({ name: "policies", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
}, 120_000);

afterAll(async () => {
  await client?.close();
  await group?.cleanup();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const text = (result: unknown) => ((result as CallToolResult).content[0] as { text: string }).text;

describe("policies on gateway names", () => {
  test("--tools takes gateway names: only those are listed and callable", async () => {
    const names = (await client.listTools()).tools.map((t) => t.name).sort();
    // beta_echo passes --tools but the Cedar policy below forbids it, so lists leave it out too.
    expect(names).toEqual(["alpha_echo", "alpha_stats"]);
    const refused = await client.callTool({ name: "alpha_sleep", arguments: { ms: 1 } }).then(
      (result) => text(result),
      (err: unknown) => String(err),
    );
    expect(refused).toMatch(/alpha_sleep/);
    expect(refused).not.toContain("slept");
  });

  test("a Cedar forbid on a gateway tool refuses the call, as for a tool that does not exist; the others go through", async () => {
    const answer = (name: string) =>
      client.callTool({ name, arguments: { text: "no" } }).then(
        (result) => text(result),
        (err: unknown) => String(err).replaceAll(name, "NAME"),
      );
    const forbidden = await answer("beta_echo");
    expect(forbidden).toContain("Unknown tool: NAME");
    expect(forbidden).toBe(await answer("beta_echx"));
    expect(JSON.parse(text(await client.callTool({ name: "alpha_echo", arguments: { text: "yes" } }))).text).toBe(
      "yes",
    );
  });

  test("a call Cedar refuses for its arguments, of a tool the caller sees, is refused as Forbidden", async () => {
    const refused = await client.callTool({ name: "alpha_echo", arguments: { text: "secret" } }).then(
      (result) => text(result),
      (err: unknown) => String(err),
    );
    expect(refused).toContain("Forbidden: call_tool on Tool::");
    expect(refused).toContain("alpha_echo");
    expect(refused).not.toContain("Unknown tool");
  });

  test("the audit trail records each call under the tool the client called, with its outcome", async () => {
    await client.callTool({ name: "alpha_echo", arguments: { text: "audited" } });
    const read = async () =>
      (await readFile(logFile, "utf8").catch(() => ""))
        .trim()
        .split("\n")
        .filter(Boolean)
        .map(
          (line) => JSON.parse(line) as { type: string; component: string; target: { tool?: string }; outcome: string },
        );
    // Lines are flushed every 200 ms: wait for this call's own line (the earlier tests' are there already).
    expect(
      await until(async () => (await read()).some((e) => e.target.tool === "alpha_echo" && e.outcome === "success")),
    ).toBe(true);
    const calls = (await read()).map((e) => [e.target.tool, e.outcome]);
    expect(calls).toContainEqual(["alpha_echo", "success"]);
    expect(calls).toContainEqual(["beta_echo", "denied"]);
    expect((await read()).every((e) => e.component === "gateway-team")).toBe(true);
  });
});
