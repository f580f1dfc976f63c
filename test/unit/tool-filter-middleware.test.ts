/**
 * The tool filter (--tools, --tools-override) as a handler in front of an MCP server, driven
 * with `new Request`: what clients see of the tools, what reaches the server, and what is
 * refused without reaching it.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toolsPolicy } from "../../src/config/tools-policy.ts";
import { toolFilter } from "../../src/middleware/tool-filter.ts";
import { compose, detachedContext } from "../../src/proxy/handler.ts";
import { messagesOf, rpc, toyServer } from "../support/mcp-handler.ts";

const ctx = detachedContext();
// echo is shown as "say", admin stays as it is, secret_tool is hidden.
const overrides = join(mkdtempSync(join(tmpdir(), "mcpmgr-tool-filter-")), "overrides.json");
writeFileSync(overrides, JSON.stringify({ toolsOverride: { echo: { name: "say", description: "renamed" } } }));
const renaming = toolsPolicy(["echo", "admin"], overrides)!;

function setup(options: { sse?: boolean } = {}) {
  const server = toyServer(options);
  return { server, handle: compose(server.handler, toolFilter(renaming)) };
}

describe("tools/list", () => {
  for (const sse of [false, true]) {
    test(`hides and renames tools in ${sse ? "an SSE stream" : "a JSON answer"}`, async () => {
      const { handle } = setup({ sse });
      const [answer] = await messagesOf(await handle(rpc({ jsonrpc: "2.0", id: 1, method: "tools/list" }), ctx));
      expect(answer?.result.tools.map((t: { name: string }) => t.name)).toEqual(["say", "admin"]);
      expect(answer?.result.tools[0].description).toBe("renamed");
    });
  }
});

describe("tools/call", () => {
  test("a renamed tool is called by its real name, and the 2026-07-28 Mcp-Name header follows", async () => {
    const { server, handle } = setup();
    const response = await handle(
      rpc(
        { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "say", arguments: { text: "hi" } } },
        { "mcp-method": "tools/call", "mcp-name": "say" },
      ),
      ctx,
    );
    expect(response.status).toBe(200);
    const [reached] = server.received;
    if (reached === undefined) throw new Error("the call did not reach the server");
    expect((reached.body as { params: { name: string } }).params.name).toBe("echo");
    expect(reached.headers.get("mcp-name")).toBe("echo");
  });

  test("a hidden tool, or a renamed tool's old name, is refused without reaching the server", async () => {
    const { server, handle } = setup();
    for (const name of ["secret_tool", "echo"]) {
      const response = await handle(rpc({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name } }), ctx);
      // A streamable-HTTP client reads the error as if the server had answered it.
      expect(response.status).toBe(200);
      const [answer] = await messagesOf(response);
      expect(answer?.error).toEqual({ code: -32602, message: `Unknown tool: ${name}` });
    }
    expect(server.received).toHaveLength(0);
  });

  test("a legacy SSE client (it reads answers only from its stream) gets an HTTP error it sees", async () => {
    const { handle } = setup();
    const response = await handle(
      rpc({ jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "secret_tool" } }, {}, "application/json"),
      ctx,
    );
    expect(response.status).toBe(403);
  });

  test("a batch that calls a hidden tool fails as a whole", async () => {
    const { server, handle } = setup();
    const answers = await messagesOf(
      await handle(
        rpc([
          { jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "admin" } },
          { jsonrpc: "2.0", id: 6, method: "tools/call", params: { name: "secret_tool" } },
        ]),
        ctx,
      ),
    );
    expect(answers.map((a) => a.error?.code)).toEqual([-32602, -32602]);
    expect(server.received).toHaveLength(0);
  });

  test("a body it cannot parse, or an Mcp-Name that disagrees with it, is refused", async () => {
    const { server, handle } = setup();
    const garbled = new Request("http://127.0.0.1:8080/mcp", { method: "POST", body: "{nope" });
    expect((await handle(garbled, ctx)).status).toBe(400);
    const mismatch = rpc(
      { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "admin" } },
      { "mcp-method": "tools/call", "mcp-name": "echo" },
    );
    expect((await handle(mismatch, ctx)).status).toBe(400);
    expect(server.received).toHaveLength(0);
  });
});

test("a server that writes the list's key with escapes does not slip hidden tools past the filter", async () => {
  for (const sse of [false, true]) {
    const list = '{"jsonrpc":"2.0","id":1,"result":{"\\u0074ools":[{"name":"echo"},{"name":"secret_tool"}]}}';
    const server = async () =>
      sse
        ? new Response(`event: message\ndata: ${list}\n\n`, { headers: { "content-type": "text/event-stream" } })
        : new Response(list, { headers: { "content-type": "application/json" } });
    const response = await compose(server, toolFilter(renaming))(
      rpc({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      ctx,
    );
    const [answer] = await messagesOf(response);
    expect(answer?.result.tools.map((t: { name: string }) => t.name)).toEqual(["say"]);
  }
});
