/**
 * The MCP 2026-07-28 request headers `proxy stdio` derives from a request's body: which
 * requests are per-request ("modern"), Mcp-Method/Mcp-Name, the Base64 sentinel encoding,
 * and x-mcp-header: the declarations found, the ones that make a tool invalid, and the
 * Mcp-Param-* values sent (none for null or absent arguments).
 */
import { describe, expect, test } from "bun:test";
import {
  headerValue,
  isModernRevision,
  mcpRequestHeaders,
  modernVersionOf,
} from "../../src/proxy/remote-client/request-headers.ts";
import { scanToolHeaders, ToolHeaderRegistry } from "../../src/proxy/tool-headers.ts";

const META = (version: string) => ({ _meta: { "io.modelcontextprotocol/protocolVersion": version } });

describe("which requests are per-request (2026-07-28 and later)", () => {
  test("revisions with the initialize handshake are not", () => {
    for (const v of ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]) expect(isModernRevision(v)).toBe(false);
    expect(isModernRevision("2026-07-28")).toBe(true);
    expect(isModernRevision("2027-01-01")).toBe(true);
    expect(isModernRevision("draft")).toBe(false);
  });

  test("the version comes from the request's _meta, nowhere else", () => {
    expect(modernVersionOf({ method: "tools/list", params: META("2026-07-28") })).toBe("2026-07-28");
    expect(modernVersionOf({ method: "initialize", params: { protocolVersion: "2026-07-28" } })).toBeUndefined();
    expect(modernVersionOf({ method: "tools/list", params: META("2025-11-25") })).toBeUndefined();
    expect(modernVersionOf({ method: "tools/list" })).toBeUndefined();
  });
});

describe("header values", () => {
  test("plain visible ASCII (inner spaces and tabs too) as it is; anything else as =?base64?…?=", () => {
    expect(headerValue("us-west1")).toBe("us-west1");
    expect(headerValue("us west 1")).toBe("us west 1");
    expect(headerValue("Hello, 世界")).toBe("=?base64?SGVsbG8sIOS4lueVjA==?=");
    expect(headerValue(" padded ")).toBe("=?base64?IHBhZGRlZCA=?=");
    expect(headerValue("line1\nline2")).toBe("=?base64?bGluZTEKbGluZTI=?=");
    expect(headerValue("=?base64?literal?=")).toBe("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
    expect(headerValue("")).toBe("=?base64??=");
  });

  test("Mcp-Method always; Mcp-Name for tools/call, prompts/get (name) and resources/read (uri)", () => {
    expect(mcpRequestHeaders({ method: "tools/list" }, "2026-07-28")).toEqual({
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "tools/list",
    });
    expect(mcpRequestHeaders({ method: "tools/call", params: { name: "get_weather" } }, "2026-07-28")["mcp-name"]).toBe(
      "get_weather",
    );
    expect(mcpRequestHeaders({ method: "prompts/get", params: { name: "p" } }, "2026-07-28")["mcp-name"]).toBe("p");
    expect(
      mcpRequestHeaders({ method: "resources/read", params: { uri: "file:///a b.txt" } }, "2026-07-28")["mcp-name"],
    ).toBe("file:///a b.txt");
    expect(mcpRequestHeaders({ method: "resources/read", params: { uri: "café" } }, "2026-07-28")["mcp-name"]).toBe(
      "=?base64?Y2Fmw6k=?=",
    );
  });
});

describe("x-mcp-header", () => {
  const schema = {
    type: "object",
    properties: {
      region: { type: "string", "x-mcp-header": "Region" },
      priority: { type: "integer", "x-mcp-header": "Priority" },
      verbose: { type: "boolean", "x-mcp-header": "Verbose" },
      nested: { type: "object", properties: { zone: { type: "string", "x-mcp-header": "Zone" } } },
      query: { type: "string" },
    },
  };

  test("declarations anywhere along properties chains", () => {
    const scan = scanToolHeaders(schema);
    expect(scan).toEqual({
      valid: true,
      declarations: [
        { path: ["region"], header: "Region", type: "string" },
        { path: ["priority"], header: "Priority", type: "integer" },
        { path: ["verbose"], header: "Verbose", type: "boolean" },
        { path: ["nested", "zone"], header: "Zone", type: "string" },
      ],
    });
  });

  test("mirrored on tools/call as Mcp-Param-*; null or absent arguments get no header", () => {
    const scan = scanToolHeaders(schema);
    if (!scan.valid) throw new Error("valid schema expected");
    const headers = mcpRequestHeaders(
      {
        method: "tools/call",
        params: {
          name: "t",
          arguments: { region: " eu", priority: 42, verbose: null, nested: { zone: "a" }, query: "q" },
        },
      },
      "2026-07-28",
      scan.declarations,
    );
    expect(headers["mcp-param-region"]).toBe("=?base64?IGV1?=");
    expect(headers["mcp-param-priority"]).toBe("42");
    expect(headers["mcp-param-zone"]).toBe("a");
    expect("mcp-param-verbose" in headers).toBe(false);
    expect("mcp-param-query" in headers).toBe(false);
    const huge = mcpRequestHeaders(
      { method: "tools/call", params: { name: "t", arguments: { region: "a", priority: 2 ** 60 } } },
      "2026-07-28",
      scan.declarations,
    );
    expect("mcp-param-priority" in huge).toBe(false);
  });

  test("invalid declarations: empty, not a token, not a primitive (number included), repeated, unreachable", () => {
    const invalid = [
      { type: "object", properties: { v: { type: "string", "x-mcp-header": "" } } },
      { type: "object", properties: { v: { type: "string", "x-mcp-header": "My Region" } } },
      { type: "object", properties: { v: { type: "string", "x-mcp-header": "Région" } } },
      { type: "object", properties: { v: { type: "string", "x-mcp-header": "a:b" } } },
      { type: "object", properties: { v: { type: "object", "x-mcp-header": "V" } } },
      { type: "object", properties: { v: { type: "number", "x-mcp-header": "V" } } },
      {
        type: "object",
        properties: { a: { type: "string", "x-mcp-header": "X" }, b: { type: "string", "x-mcp-header": "x" } },
      },
      { type: "object", properties: { list: { type: "array", items: { type: "string", "x-mcp-header": "I" } } } },
      { type: "object", anyOf: [{ properties: { v: { type: "string", "x-mcp-header": "V" } } }] },
      { type: "string", "x-mcp-header": "Root" },
    ];
    for (const s of invalid) expect(scanToolHeaders(s).valid).toBe(false);
  });

  test("the registry leaves invalid tools out of tools/list, says why, and keeps the valid ones", () => {
    const registry = new ToolHeaderRegistry();
    const { result, excluded } = registry.learn({
      resultType: "complete",
      tools: [
        { name: "good", inputSchema: schema },
        { name: "bad", inputSchema: { type: "object", properties: { v: { type: "number", "x-mcp-header": "V" } } } },
      ],
    });
    expect((result as { tools: { name: string }[] }).tools.map((t) => t.name)).toEqual(["good"]);
    expect((result as { resultType: string }).resultType).toBe("complete");
    expect(excluded).toHaveLength(1);
    expect(excluded[0]).toContain('"bad"');
    expect(registry.declarationsOf("good").map((d) => d.header)).toEqual(["Region", "Priority", "Verbose", "Zone"]);
    expect(registry.declarationsOf("bad")).toEqual([]);
  });
});
