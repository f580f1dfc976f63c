/**
 * `Mcp-Param-*` headers of 2026-07-28 calls are checked by the bridge (the stdio server never
 * sees HTTP headers) against the x-mcp-header declarations in the server's own tools/list,
 * for a server of either era, also when no client listed the tools first.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { PROBE_SERVER } from "../fixtures/bridge-probe-client.ts";
import { startBridge } from "../support/bridge-server.ts";
import { CONFORMANCE_FIXTURE_2026 } from "../support/conformance.ts";
import { statelessHeaders, statelessMeta } from "../support/stateless-request.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const call = (url: string, args: Record<string, unknown>, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: "POST",
    headers: { ...statelessHeaders("tools/call", "test_mirrored_arguments"), ...headers },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 7,
      method: "tools/call",
      params: {
        name: "test_mirrored_arguments",
        arguments: args,
        _meta: statelessMeta(),
      },
    }),
  });

for (const era of ["legacy", "modern"] as const) {
  describe(`a ${era === "legacy" ? "2025-11-25" : "2026-07-28"} stdio server`, () => {
    let bridged: Awaited<ReturnType<typeof startBridge>>;
    beforeAll(async () => {
      bridged = await startBridge(
        era === "modern" ? { cmd: [process.execPath, CONFORMANCE_FIXTURE_2026, "stdio"] } : {},
      );
      expect(bridged.bridge.server?.era).toBe(era);
    });
    afterAll(() => bridged?.stop());

    test("the first call, before any tools/list, still needs its mirrored header", async () => {
      const res = await call(bridged.url, { region: "eu-west1" });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { id: number; error: { code: number; message: string } };
      expect(body.id).toBe(7);
      expect(body.error.code).toBe(-32020);
      expect(body.error.message).toContain("Mcp-Param-Region");
    });

    test("headers that match (Base64, integers by value) reach the tool; one that differs does not", async () => {
      const ok = await call(
        bridged.url,
        { region: "Zürich", priority: 42 },
        { "mcp-param-region": `=?base64?${Buffer.from("Zürich").toString("base64")}?=`, "mcp-param-priority": "42.0" },
      );
      expect(ok.status).toBe(200);
      const answer = (await ok.json()) as { result: { content: { text: string }[] } };
      expect(answer.result.content[0]?.text).toBe("region=Zürich priority=42");

      const routedElsewhere = await call(
        bridged.url,
        { region: "eu-west1", priority: 1 },
        { "mcp-param-region": "us-east1", "mcp-param-priority": "1" },
      );
      expect(routedElsewhere.status).toBe(400);
      expect(((await routedElsewhere.json()) as { error: { code: number } }).error.code).toBe(-32020);
    });

    test("a null argument needs no header", async () => {
      const res = await call(bridged.url, { region: "eu-west1", priority: null }, { "mcp-param-region": "eu-west1" });
      expect(res.status).toBe(200);
    });
  });
}

describe("where the declarations come from", () => {
  let bridged: Awaited<ReturnType<typeof startBridge>>;
  beforeAll(async () => {
    bridged = await startBridge({ cmd: [process.execPath, PROBE_SERVER] });
  });
  afterAll(() => bridged?.stop());

  const modernCall = async (name: string, args: Record<string, unknown> = {}) => {
    const res = await fetch(bridged.url, {
      method: "POST",
      headers: { ...statelessHeaders("tools/call", name), accept: "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: {
          name,
          arguments: args,
          _meta: statelessMeta(),
        },
      }),
    });
    return (await res.json()) as { result?: { content: { text: string }[] }; error?: { message: string } };
  };
  /** How many tools/list requests the server has answered. */
  const listsRead = async () =>
    (JSON.parse((await modernCall("stats")).result?.content[0]?.text ?? "{}") as { methods: Record<string, number> })
      .methods["tools/list"] ?? 0;

  test("the bridge reads the server's list once, and again only after the server says it changed", async () => {
    await modernCall("echo", { text: "first" });
    expect(await listsRead()).toBe(1);
    // Known tools, and tools the complete list does not have, need no new reading.
    await modernCall("echo", { text: "again" });
    await modernCall("no_such_tool");
    expect(await listsRead()).toBe(1);
    // The server adds a tool and announces it: the next call of it reads the list again.
    await modernCall("notify_list_changed", { add: "late_tool" });
    await modernCall("late_tool");
    expect(await listsRead()).toBe(2);
  });
});
