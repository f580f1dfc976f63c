/**
 * The gateway's check of a 2026-07-28 tools/call's `Mcp-Param-*` headers (gateway/param-headers.ts)
 * against the tool list its clients see: the listed tool's declarations apply, a tool with broken
 * declarations or one not listed (search mode lists only find_tool and call_tool) is not checked.
 */
import { expect, test } from "bun:test";
import { paramHeaderRefusal } from "../../src/gateway/param-headers.ts";

const mirrored = {
  name: "api_lookup",
  inputSchema: {
    type: "object",
    properties: {
      region: { type: "string", "x-mcp-header": "Region" },
      priority: { type: "integer", "x-mcp-header": "Priority" },
    },
  },
};
const broken = {
  name: "api_broken",
  inputSchema: { type: "object", properties: { tags: { type: "array", "x-mcp-header": "Tags" } } },
};
const tools = [mirrored, broken, { name: "api_plain", inputSchema: { type: "object" } }];

const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });

test("a listed tool's mirrored arguments need their headers, equal to the body", () => {
  const args = { region: "eu-west", priority: 3 };
  expect(paramHeaderRefusal(new Headers(), call("api_lookup", args), tools)).toMatchObject({
    status: 400,
    code: -32020,
    message: expect.stringContaining("Mcp-Param-Region"),
  });
  const agreeing = new Headers({ "Mcp-Param-Region": "eu-west", "Mcp-Param-Priority": "3.0" });
  expect(paramHeaderRefusal(agreeing, call("api_lookup", args), tools)).toBeUndefined();
  const disagreeing = new Headers({ "Mcp-Param-Region": "us-east", "Mcp-Param-Priority": "3" });
  expect(paramHeaderRefusal(disagreeing, call("api_lookup", args), tools)?.code).toBe(-32020);
  const malformed = new Headers({ "Mcp-Param-Region": "=?base64?not base64?=", "Mcp-Param-Priority": "3" });
  expect(paramHeaderRefusal(malformed, call("api_lookup", args), tools)?.status).toBe(400);
});

test("an argument left out needs no header", () => {
  expect(
    paramHeaderRefusal(new Headers({ "Mcp-Param-Region": "eu" }), call("api_lookup", { region: "eu" }), tools),
  ).toBeUndefined();
});

test("tools without valid declarations, and tools the client does not list, are not checked", () => {
  expect(paramHeaderRefusal(new Headers(), call("api_broken", { tags: "x" }), tools)).toBeUndefined();
  expect(paramHeaderRefusal(new Headers(), call("api_plain", { region: "eu" }), tools)).toBeUndefined();
  // Search mode: the client lists find_tool and call_tool only, so a tool it reached through them has no headers to send.
  const searchList = [{ name: "find_tool", inputSchema: { type: "object" } }];
  expect(paramHeaderRefusal(new Headers(), call("api_lookup", { region: "eu" }), searchList)).toBeUndefined();
  expect(paramHeaderRefusal(new Headers(), { arguments: {} }, tools)).toBeUndefined();
});
