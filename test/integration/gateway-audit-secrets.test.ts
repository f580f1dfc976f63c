/**
 * A gateway's audit data and its members' secrets: the gateway does not know them (only each member
 * does, and its own audit redacts them), so while a member that holds secrets is in the group, the
 * gateway records no request or response data, and says why in the data's place. A group whose
 * members hold none is recorded as before. Real parts: the sandbox probe (a stdio server that answers
 * with its environment) started with `--secret`, a second member without, the gateway, the SDK client.
 * The URIs of resources read are written without their userinfo, query and fragment meanwhile.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createMcpHandler, McpServer, ResourceTemplate } from "@modelcontextprotocol/server";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { createTestGroup, PROBE_FIXTURE, type TestGroup, until } from "../support/gateway-group.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";
import { runSecretHeaderMember } from "../support/secret-header-member.ts";

setDefaultTimeout(60_000);

const SECRET = "member-secret-6b1f90ad";
let group: TestGroup;
let dir: string;

beforeAll(async () => {
  group = await createTestGroup();
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-gateway-audit-secrets-"));
  group.run(await group.packageOf(PROBE_FIXTURE), "plain", "team");
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Calls `tool` through a gateway for `team` with audit data on; the audit lines of tool calls. */
async function auditedCall(tool: string, args: Record<string, unknown>, file: string) {
  const logFile = join(dir, `${file}.jsonl`);
  const config = join(dir, `${file}.json`);
  await writeFile(
    config,
    JSON.stringify({ logFile, includeRequestData: true, includeResponseData: true, eventTypes: ["mcp_tool_call"] }),
  );
  const gateway = await group.gateway("team", "--audit-config", config);
  const client = new Client({ name: "gateway-audit-secrets", version: "1.0.0" });
  let answer: string;
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
    answer = JSON.stringify(await client.callTool({ name: tool, arguments: args }));
    await client.close();
  } finally {
    await gateway.stop();
  }
  const text = await readFile(logFile, "utf8");
  return { answer, text, call: JSON.parse(text.trim().split("\n").at(-1) as string) as Record<string, unknown> };
}

/**
 * A remote member in a new group `groupName`, forwarding the secret `value` as its X-Api-Key header
 * (`--remote-forward-headers-secret`, from the environment provider): a member that holds a secret.
 */
function runSecretMember(port: number | undefined, name: string, groupName: string, value: string): void {
  expect(group.mcpmgr("group", "create", groupName).code).toBe(0);
  const ref = `key${name.replace(/[^a-z]/g, "")}`;
  runSecretHeaderMember(group, `http://127.0.0.1:${port}/mcp`, name, groupName, { ref, value });
}

test("a group without secrets: the gateway records the call's data", async () => {
  const { call } = await auditedCall("plain_echo", { text: "hello-data" }, "plain");
  expect(String(call.request)).toContain("hello-data");
  expect(String(call.response)).toContain("hello-data");
});

test("a member that holds a secret and answers with it: the gateway's audit data is withheld, naming it", async () => {
  const started = Bun.spawnSync(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      `npx://${join(REPO_ROOT, "test/fixtures/sandbox-probe")}`,
      "--name",
      "holder",
      "--group",
      "team",
      "--permission-profile",
      "none",
      "--secret",
      "probe-key,target=PROBE_KEY",
    ],
    {
      cwd: REPO_ROOT,
      env: {
        ...process.env,
        NO_COLOR: "1",
        MCPMGR_HOME: group.home,
        MCPMGR_RUNTIME: "process",
        MCPMGR_SECRETS_PROVIDER: "environment",
        MCPMGR_SECRET_PROBE_KEY: SECRET,
      },
      timeout: 120_000,
    },
  );
  expect({ code: started.exitCode, stderr: started.exitCode === 0 ? "" : started.stderr.toString() }).toEqual({
    code: 0,
    stderr: "",
  });
  const { answer, text, call } = await auditedCall("holder_env", { name: "PROBE_KEY" }, "holder");
  // The member did answer with it (the client gets what the server says; audit only records).
  expect(answer).toContain(SECRET);
  expect(text).not.toContain(SECRET);
  expect(call.response).toBe("[withheld: holder holds secrets the gateway cannot redact; see its own audit]");
  expect(call.request).toBe(call.response);
  expect(call.outcome).toBe("success");
  expect((call.target as { tool?: string }).tool).toBe("holder_env");
});

test("a member that holds secrets failing with an error page that quotes them: the gateway's log gives its status, not its words", async () => {
  const KEY = "remote-key-0c7d21e9";
  // A remote that answers the handshake, then fails every listing with an error page that prints its request's headers.
  const remote = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      if (req.method !== "POST") return new Response(null, { status: 405 });
      const message = (await req.json()) as { id?: number; method: string };
      if (message.id === undefined) return new Response(null, { status: 202 });
      if (message.method === "initialize") {
        const result = {
          protocolVersion: "2025-06-18",
          capabilities: { tools: {} },
          serverInfo: { name: "echo", version: "1" },
        };
        return Response.json({ jsonrpc: "2.0", id: message.id, result });
      }
      return new Response(`listing failed; request headers: x-api-key=${req.headers.get("x-api-key")}`, {
        status: 500,
      });
    },
  });
  try {
    runSecretMember(remote.port, "failing", "broken", KEY);
    const gateway = await group.gateway("broken");
    try {
      await until(() => /workload 'failing'.*HTTP 500/.test(gateway.output()));
      expect(gateway.output()).not.toContain(KEY);
    } finally {
      await gateway.stop();
    }
  } finally {
    await remote.stop(true);
  }
});

test("a 2026-07-28 member that holds secrets refusing the list-change stream with an error page that quotes them: the gateway's log gives its status, not its words", async () => {
  const KEY = "listen-key-5e02b7c4";
  // Speaks 2026-07-28 only and announces tool list changes, so the gateway keeps a listen open on it;
  // that listen is refused with an error page printing the request's headers.
  const handler = createMcpHandler(
    () =>
      new McpServer({ name: "listen-refused", version: "1.0.0" }, { capabilities: { tools: { listChanged: true } } }),
    { legacy: "reject" },
  );
  const remote = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const body = req.method === "POST" ? await req.clone().text() : "";
      if (!body.includes('"subscriptions/listen"')) return handler.fetch(req);
      return new Response(`listen failed; request headers: x-api-key=${req.headers.get("x-api-key")}`, { status: 500 });
    },
  });
  try {
    runSecretMember(remote.port, "refuses-listen", "listening", KEY);
    const gateway = await group.gateway("listening");
    try {
      await until(() => gateway.output().includes("workload 'refuses-listen': cannot listen for its list changes"));
      expect(gateway.output()).toContain("cannot listen for its list changes (HTTP 500 (its answer is not quoted");
      expect(gateway.output()).not.toContain(KEY);
    } finally {
      await gateway.stop();
    }
  } finally {
    await remote.stop(true);
  }
});

test("a 2026-07-28 member that holds secrets refusing a session's renewed subscriptions with an error page that quotes them: neither the gateway's log nor the session gets its words", async () => {
  const KEY = "renew-key-93a4d1f0";
  const handler = createMcpHandler(
    () => {
      const server = new McpServer(
        { name: "renew-refused", version: "1.0.0" },
        { capabilities: { resources: { subscribe: true } } },
      );
      server.registerResource(
        "doc",
        new ResourceTemplate("test://doc/{n}", { list: undefined }),
        { description: "documents" },
        async (uri) => ({ contents: [{ uri: uri.href, text: "hello" }] }),
      );
      return server;
    },
    { legacy: "reject" },
  );
  let refusing = false;
  let listens = 0;
  const remote = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const body = req.method === "POST" ? await req.clone().text() : "";
      const method = req.headers.get("mcp-method") ?? "";
      // Once refusing: the session's next read is answered 404, so the gateway replaces its connection and
      // renews its subscriptions there; that listen (naming the session's resource) gets the error page.
      if (refusing && method === "resources/read") return new Response("not found", { status: 404 });
      if (method === "subscriptions/listen" && body.includes("test://doc/")) {
        if (refusing) return new Response(`listen failed; x-api-key=${req.headers.get("x-api-key")}`, { status: 500 });
        listens++;
      }
      return handler.fetch(req);
    },
  });
  try {
    runSecretMember(remote.port, "refuses-renewal", "renewing", KEY);
    const gateway = await group.gateway("renewing");
    const notices: string[] = [];
    const client = new Client({ name: "renewal", version: "1.0.0" });
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void notices.push(String(n.params.data)));
    const transport = new StreamableHTTPClientTransport(new URL(gateway.url));
    try {
      await client.connect(transport);
      expect(await client.subscribeResource({ uri: "test://doc/a" })).toEqual({});
      expect(await until(() => listens === 1, 10_000)).toBe(true);
      refusing = true;
      await expect(client.readResource({ uri: "test://doc/x" })).rejects.toThrow();
      expect(await until(() => gateway.output().includes("no longer sends updates"), 15_000)).toBe(true);
      expect(gateway.output()).toContain("refused the subscription stream (HTTP 500 (its answer is not quoted");
      expect(gateway.output()).not.toContain(KEY);
      expect(await until(() => notices.length > 0, 10_000)).toBe(true);
      expect(notices.join("\n")).not.toContain(KEY);
    } finally {
      await transport.terminateSession().catch(() => {});
      await client.close();
      await gateway.stop();
    }
  } finally {
    await remote.stop(true);
  }
});

test("a member that holds a secret and puts it in its resources' URIs: the gateway's audit writes those URIs without userinfo, query and fragment; a group without secrets writes them whole", async () => {
  const KEY = "uri-key-4d9e7a21c3";
  // The member's key (forwarded to it as its X-Api-Key secret) is part of the URIs it lists.
  const uris = [
    `https://api.example.com/data?key=${KEY}`,
    `db://reader:${KEY}@db.internal:5432/orders`,
    `https://api.example.com/report#token=${KEY}`,
  ];
  const handler = createMcpHandler(() => {
    const server = new McpServer({ name: "keyed-uris", version: "1.0.0" }, { capabilities: { resources: {} } });
    for (const [i, uri] of uris.entries())
      server.registerResource(`r${i}`, uri, { description: "keyed" }, async () => ({
        contents: [{ uri, text: "rows" }],
      }));
    return server;
  });
  const remote = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => handler.fetch(req) });
  /** Reads every URI through a gateway for `groupName`, audit data off; the audited resource targets. */
  const readAll = async (groupName: string) => {
    const logFile = join(dir, `${groupName}.jsonl`);
    const config = join(dir, `${groupName}.json`);
    await writeFile(config, JSON.stringify({ logFile, eventTypes: ["mcp_resource_read"] }));
    const gateway = await group.gateway(groupName, "--audit-config", config);
    const client = new Client({ name: "gateway-audit-uris", version: "1.0.0" });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
      for (const uri of uris) expect((await client.readResource({ uri })).contents[0]?.uri).toBe(uri);
      await client.close();
    } finally {
      await gateway.stop();
    }
    const text = await readFile(logFile, "utf8");
    const lines = text
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { target: Record<string, unknown> });
    return { text, targets: lines.map((line) => line.target) };
  };
  try {
    runSecretMember(remote.port, "keyed", "keyed-uris", KEY);
    const held = await readAll("keyed-uris");
    expect(held.text).not.toContain(KEY);
    expect(held.targets).toEqual([
      { method: "resources/read", resource: "https://api.example.com/data?[withheld]" },
      { method: "resources/read", resource: "db://[withheld]@db.internal:5432/orders" },
      { method: "resources/read", resource: "https://api.example.com/report#[withheld]" },
    ]);

    // The same server as a member that holds nothing: its URIs are recorded as read.
    expect(group.mcpmgr("group", "create", "open-uris").code).toBe(0);
    const run = group.mcpmgr("run", `http://127.0.0.1:${remote.port}/mcp`, "--name", "open", "--group", "open-uris");
    expect({ code: run.code, stderr: run.code === 0 ? "" : run.stderr }).toEqual({ code: 0, stderr: "" });
    const open = await readAll("open-uris");
    expect(open.targets).toEqual(uris.map((resource) => ({ method: "resources/read", resource })));
  } finally {
    await remote.stop(true);
  }
});
