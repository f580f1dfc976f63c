/**
 * Errors the gateway returns to its clients and the members' secrets: a member that holds secrets may
 * quote them in its errors, and only it knows them, so the gateway gives such a member's JSON-RPC errors
 * by code and its HTTP failures by status, as its log does (gateway/member-words.ts); a member without
 * secrets is quoted as before. Real parts: the sandbox probe (its `fail_env` answers a JSON-RPC error
 * quoting a variable) run with an API key in `-e` and without, a remote member with a secret header whose
 * error page prints it, the gateway, the SDK client on both of the gateway's lanes (its fast tools/call
 * relay, and the SDK path a call with another param takes).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type ListenMember, startListenMember } from "../fixtures/listen-member.ts";
import { createTestGroup, type TestGroup } from "../support/gateway-group.ts";
import { REPO_ROOT } from "../support/processes.ts";
import { runSecretHeaderMember } from "../support/secret-header-member.ts";

setDefaultTimeout(60_000);

const PROBE = `npx://${join(REPO_ROOT, "test/fixtures/sandbox-probe")}`;
const KEY = "member-api-key-3c81f0d2";
const SETTING = "open-setting-9e4b";
const HEADER_KEY = "header-key-51a7c3e0";
let group: TestGroup;
let remote: ReturnType<typeof Bun.serve>;
let unfollowed: ListenMember;

beforeAll(async () => {
  group = await createTestGroup();
  expect(group.mcpmgr("group", "create", "errs").code).toBe(0);
  const run = (name: string, variable: string) =>
    group.mcpmgr("run", PROBE, "--name", name, "--group", "errs", "--permission-profile", "none", "-e", variable);
  for (const started of [run("holder", `PROBE_API_KEY=${KEY}`), run("open", `PROBE_SETTING=${SETTING}`)])
    expect({ code: started.code, stderr: started.code === 0 ? "" : started.stderr }).toEqual({ code: 0, stderr: "" });
  // A remote that lists one tool and fails its calls with an error page that prints the request's headers.
  remote = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      if (req.method !== "POST") return new Response(null, { status: 405 });
      const message = (await req.json()) as { id?: number; method: string };
      if (message.id === undefined) return new Response(null, { status: 202 });
      const answer = (result: unknown) => Response.json({ jsonrpc: "2.0", id: message.id, result });
      if (message.method === "initialize")
        return answer({
          protocolVersion: "2025-06-18",
          capabilities: { tools: {} },
          serverInfo: { name: "pages", version: "1" },
        });
      if (message.method === "tools/list")
        return answer({ tools: [{ name: "call", inputSchema: { type: "object" } }] });
      return new Response(`call failed; request headers: x-api-key=${req.headers.get("x-api-key")}`, { status: 500 });
    },
  });
  runSecretHeaderMember(group, `http://127.0.0.1:${remote.port}/mcp`, "paged", "errs", {
    ref: "pagekey",
    value: HEADER_KEY,
  });
  // A 2026-07-28 member that holds a secret header and offers its resources but no updates of them.
  unfollowed = startListenMember({ subscribe: false });
  runSecretHeaderMember(group, unfollowed.url, "docs", "errs", { ref: "pagekey", value: HEADER_KEY });
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  await remote?.stop(true);
  await unfollowed?.stop();
});

/** The error a gateway client gets for `tool`: on the fast lane, or (`sdkPath`) with a param that sends it the SDK's way. */
async function errorOf(client: Client, tool: string, args: Record<string, unknown>, sdkPath: boolean) {
  const params = { name: tool, arguments: args, ...(sdkPath ? { extra: "sdk-path" } : {}) };
  try {
    const result = await client.request({ method: "tools/call", params }, CallToolResultSchema);
    return { result: JSON.stringify(result) };
  } catch (err) {
    const { code, message, data } = err as { code?: number; message: string; data?: unknown };
    return { code, text: JSON.stringify({ message, data }) };
  }
}

test("a member that holds secrets answering an error that quotes them: the client gets its code, not its words; a member without is quoted", async () => {
  const gateway = await group.gateway("errs");
  const client = new Client({ name: "member-errors", version: "1.0.0" });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
    for (const sdkPath of [false, true]) {
      const held = await errorOf(client, "holder_fail_env", { name: "PROBE_API_KEY" }, sdkPath);
      expect({ sdkPath, code: held.code }).toEqual({ sdkPath, code: -32603 });
      expect(held.text).toContain("workload 'holder' answered error -32603 (its message is not quoted");
      expect(held.text).not.toContain(KEY);
      const open = await errorOf(client, "open_fail_env", { name: "PROBE_SETTING" }, sdkPath);
      expect({ sdkPath, code: open.code }).toEqual({ sdkPath, code: -32603 });
      expect(open.text).toContain(`upstream refused PROBE_SETTING=${SETTING}`);
      // Its results are its answer, as they are.
      expect((await errorOf(client, "holder_env", { name: "PROBE_API_KEY" }, sdkPath)).result).toContain(KEY);
      const page = await errorOf(client, "paged_call", {}, sdkPath);
      expect(page.text).toContain("HTTP 500");
      expect(page.text).not.toContain(HEADER_KEY);
      expect(page.text).not.toContain("request headers");
    }
  } finally {
    await client.close();
    await gateway.stop();
  }
  expect(gateway.output()).not.toContain(KEY);
  expect(gateway.output()).not.toContain(HEADER_KEY);
});

test("a member seen to hold secrets only after it joined (its env file given a key): its errors stop quoting it at once", async () => {
  const envFile = join(group.home, "late.env");
  const setting = "late-setting-0b7d";
  writeFileSync(envFile, `PROBE_SETTING=${setting}\n`);
  const started = group.mcpmgr(
    "run",
    PROBE,
    "--name",
    "late",
    "--group",
    "errs",
    "--permission-profile",
    "none",
    "--env-file",
    envFile,
  );
  expect({ code: started.code, stderr: started.code === 0 ? "" : started.stderr }).toEqual({ code: 0, stderr: "" });
  const gateway = await group.gateway("errs");
  const client = new Client({ name: "member-errors-late", version: "1.0.0" });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
    const before = await errorOf(client, "late_fail_env", { name: "PROBE_SETTING" }, false);
    expect(before.text).toContain(`upstream refused PROBE_SETTING=${setting}`);
    // The key its next start reads: from now on the gateway counts it as holding secrets (its audit withholds
    // data), and its connection, kept at the same URL, must count it so too.
    writeFileSync(envFile, `PROBE_SETTING=${setting}\nPROBE_API_KEY=late-api-key-6e02a9d4\n`);
    const deadline = Date.now() + 20_000;
    const seen: string[] = [];
    for (const sdkPath of [false, true]) {
      for (;;) {
        const text = (await errorOf(client, "late_fail_env", { name: "PROBE_SETTING" }, sdkPath)).text ?? "";
        if (!text.includes(setting)) {
          seen.push(text);
          break;
        }
        if (Date.now() > deadline) throw new Error(`still quoted after the key was added: ${text}`);
        await Bun.sleep(100);
      }
    }
    for (const text of seen) expect(text).toContain("workload 'late' answered error -32603 (its message is not quoted");
  } finally {
    await client.close();
    await gateway.stop();
  }
});

test("the gateway's own refusal of a request to a member that holds secrets keeps its words: only the member's are withheld", async () => {
  const gateway = await group.gateway("errs");
  const client = new Client({ name: "member-errors-own", version: "1.0.0" });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
    const uri = "test://doc/7";
    const refused = await client.subscribeResource({ uri }).then(
      () => "subscribed",
      (err: { code?: number; message: string }) => ({ code: err.code, message: err.message }),
    );
    expect(refused).toEqual({
      code: -32602,
      message: `MCP error -32602: the workload offers no updates of ${JSON.stringify(uri)}`,
    });
  } finally {
    await client.close();
    await gateway.stop();
  }
});
