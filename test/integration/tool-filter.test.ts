/**
 * --tools and --tools-override end to end with the SDK client: through the stdio bridge
 * (JSON answers) and through the transparent forwarder in front of server-everything (SSE
 * answers), plus the start-up checks.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CLI_ENTRY, REPO_ROOT, spawnUntil, startEverything } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const PROBE = "npx://./test/fixtures/sandbox-probe";
let dir: string;
let overrides: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-tools-"));
  overrides = join(dir, "overrides.json");
  await writeFile(
    overrides,
    JSON.stringify({ toolsOverride: { env: { name: "get_env", description: "Reads one environment variable" } } }),
  );
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function connect(args: string[], env: Record<string, string> = {}) {
  const run = await spawnUntil([process.execPath, CLI_ENTRY, "run", "--foreground", ...args], /^(http:\/\/\S+)$/m, {
    env,
    timeoutMs: 60_000,
  });
  const client = new Client({ name: "tools-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(run.match[1] as string)));
  return { run, client };
}

test("stdio bridge: only the listed tools are visible, renamed and re-described; calls map back; hidden calls are refused", async () => {
  const { run, client } = await connect([
    PROBE,
    "--tools",
    "env,read_file",
    "--tools-override",
    overrides,
    "-e",
    "PROBE_SETTING=on",
  ]);
  try {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(["get_env", "read_file"]);
    expect(tools.find((t) => t.name === "get_env")?.description).toBe("Reads one environment variable");
    const called = (await client.callTool({ name: "get_env", arguments: { name: "PROBE_SETTING" } })) as {
      content: { text: string }[];
    };
    expect(called.content[0]?.text).toBe("on");
    for (const hidden of ["env", "write_file", "crash"]) {
      let error: unknown;
      try {
        await client.callTool({ name: hidden, arguments: { path: join(dir, "x"), text: "x" } });
      } catch (err) {
        error = err;
      }
      expect(String(error)).toContain(`Unknown tool: ${hidden}`);
    }
    await client.close();
  } finally {
    await run.stop();
  }
}, 60_000);

test("the policy cannot be walked around: other Content-Types, unparseable bodies, a disagreeing Mcp-Name", async () => {
  const { run, client } = await connect([PROBE, "--tools", "env"]);
  try {
    const transport = (client as unknown as { _transport: { sessionId?: string } })._transport;
    const url = run.match[1] as string;
    const headers = {
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-06-18",
      "mcp-session-id": transport.sessionId ?? "",
    };
    const hidden = {
      jsonrpc: "2.0",
      id: 91,
      method: "tools/call",
      params: { name: "write_file", arguments: { path: "/tmp/x" } },
    };
    const plain = await fetch(url, {
      method: "POST",
      headers: { ...headers, "content-type": "text/plain" },
      body: JSON.stringify(hidden),
    });
    expect(await plain.text()).toContain("Unknown tool: write_file");
    const garbage = await fetch(url, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: '{"jsonrpc":"2.0","id":92,"method":"tools/call","params":{"name":"write_file"}',
    });
    expect(garbage.status).toBe(400);
    expect(await garbage.text()).toContain("the request body is not JSON");
    const method = await fetch(url, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json", "mcp-method": "tools/list" },
      body: JSON.stringify(hidden),
    });
    expect(method.status).toBe(400);
    expect(await method.text()).toContain("Mcp-Method does not match");
    const mismatch = await fetch(url, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json", "mcp-name": "write_file" },
      body: JSON.stringify({ ...hidden, params: { name: "env", arguments: { name: "HOME" } } }),
    });
    expect(mismatch.status).toBe(400);
    expect(await mismatch.text()).toContain("Mcp-Name does not match");
    await client.close();
  } finally {
    await run.stop();
  }
}, 60_000);

test("transparent forwarder: SSE answers from server-everything are filtered too", async () => {
  const everything = await startEverything("streamableHttp");
  try {
    const { run, client } = await connect([everything.url, "--tools", "echo", "--tools", "get-sum"]);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(["echo", "get-sum"]);
      const echoed = (await client.callTool({ name: "echo", arguments: { message: "filtered" } })) as {
        content: { text: string }[];
      };
      expect(echoed.content[0]?.text).toContain("filtered");
      let error: unknown;
      try {
        await client.callTool({ name: "get-tiny-image", arguments: {} });
      } catch (err) {
        error = err;
      }
      expect(String(error)).toContain("Unknown tool: get-tiny-image");
      await client.close();
    } finally {
      await run.stop();
    }
  } finally {
    await everything.stop();
  }
}, 60_000);

test("after notifications/tools/list_changed the new list is filtered too, over streamable HTTP and legacy SSE", async () => {
  const { startBridge } = await import("../support/bridge-server.ts");
  const { toolFilter } = await import("../../src/middleware/tool-filter.ts");
  const { toolsPolicy } = await import("../../src/config/tools-policy.ts");
  const { SSEClientTransport } = await import("@modelcontextprotocol/sdk/client/sse.js");
  const { ToolListChangedNotificationSchema } = await import("@modelcontextprotocol/sdk/types.js");
  const policy = toolsPolicy(["echo", "notify_list_changed", "added_allowed"], undefined);
  for (const mode of ["streamable-http", "sse"] as const) {
    const bridge = await startBridge({
      cmd: [process.execPath, join(REPO_ROOT, "test/fixtures/bridge-probe-server.ts")],
      mode,
      middleware: policy ? [toolFilter(policy)] : [],
    });
    const client = new Client({ name: "list-changed", version: "1.0.0" });
    try {
      const changed = new Promise<void>((resolve) =>
        client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
      );
      await client.connect(
        mode === "sse"
          ? new SSEClientTransport(new URL(bridge.url))
          : new StreamableHTTPClientTransport(new URL(bridge.url)),
      );
      expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(["echo", "notify_list_changed"]);
      // The server gains a tool the policy allows and one it hides.
      await client.callTool({ name: "notify_list_changed", arguments: { add: "added_hidden" } });
      await changed;
      await client.callTool({ name: "notify_list_changed", arguments: { add: "added_allowed" } });
      expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual([
        "added_allowed",
        "echo",
        "notify_list_changed",
      ]);
      expect((await client.callTool({ name: "added_allowed", arguments: {} })).isError).toBeFalsy();
      const hidden = await client.callTool({ name: "stats", arguments: {} }).then(
        () => "called",
        (err: Error) => err.message,
      );
      expect(hidden).toContain("Unknown tool: stats");
    } finally {
      await client.close();
      await bridge.stop();
    }
  }
}, 60_000);

describe("--tools naming a tool the server does not offer", () => {
  const warnings = (output: string) =>
    output.split("\n").filter((line) => line.includes("which the server does not offer"));

  test("is warned about once, on the first complete listing, with the nearest name and the server's list", async () => {
    const { run, client } = await connect([PROBE, "--tools", "env,red_file"]);
    try {
      expect(warnings(run.output())).toEqual([]);
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(["env"]);
      await until(() => warnings(run.output()).length > 0);
      const [warning] = warnings(run.output());
      expect(warning).toStartWith("[warn] ");
      expect(warning).toContain("red_file (did you mean read_file?)");
      expect(warning).not.toContain("env (");
      expect(warning).toContain("it lists 17 tools: read_file, write_file, fill_file");
      await client.listTools();
      await client.close();
    } finally {
      await run.stop();
    }
    expect(warnings(run.output())).toHaveLength(1);
  }, 60_000);

  test("a paginated list is judged only once every page was listed, the names of all pages counted", async () => {
    // Pages of 3: `env` (the fixture's 11th tool of 17) is on the fourth of six pages.
    const { run, client } = await connect([PROBE, "--tools", "env,red_file", "--", "--page-size", "3"]);
    try {
      let page = await client.listTools();
      expect(page.nextCursor).toBe("3");
      const pages = [page];
      while (page.nextCursor !== undefined) {
        // Not before the last page: an incomplete list would name tools the server does offer.
        expect(warnings(run.output())).toEqual([]);
        page = await client.listTools({ cursor: page.nextCursor });
        pages.push(page);
      }
      expect(pages).toHaveLength(6);
      expect(pages.flatMap((p) => p.tools.map((t) => t.name))).toEqual(["env"]);
      await until(() => warnings(run.output()).length > 0);
      const [warning] = warnings(run.output());
      expect(warning).toContain("names red_file (did you mean read_file?), which");
      expect(warning).not.toContain("env (");
      await client.close();
    } finally {
      await run.stop();
    }
  }, 60_000);

  test("a background workload warns in its log (mcpmgr logs), once", async () => {
    const home = await mkdtemp(join(tmpdir(), "mcpmgr-tools-home-"));
    const mcpmgr = (...args: string[]) =>
      Bun.spawnSync([process.execPath, CLI_ENTRY, ...args], {
        cwd: REPO_ROOT,
        env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
        timeout: 120_000,
      });
    try {
      const started = mcpmgr("run", PROBE, "--name", "typo-tools", "--tools", "envv");
      expect(started.exitCode).toBe(0);
      const client = new Client({ name: "tools-test", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(started.stdout.toString().trim())));
      expect((await client.listTools()).tools).toEqual([]);
      await client.listTools();
      await client.close();
      const log = () => mcpmgr("logs", "typo-tools").stdout.toString();
      await until(() => warnings(log()).length > 0);
      expect(warnings(log())).toHaveLength(1);
      expect(warnings(log())[0]).toContain("envv (did you mean env?)");
    } finally {
      mcpmgr("rm", "typo-tools");
      await rm(home, { recursive: true, force: true });
    }
  }, 90_000);
});

async function until(predicate: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate() && Date.now() < deadline) await Bun.sleep(50);
  expect(predicate()).toBe(true);
}
