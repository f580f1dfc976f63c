/**
 * The check (the stdio bridge's and the gateway's) of `Mcp-Param-*` headers against a tool's x-mcp-header declarations
 * (MCP 2026-07-28, Streamable HTTP "custom headers from tool parameters"), case by case
 * from the revision's table and value-encoding rules.
 */
import { describe, expect, test } from "bun:test";
import { checkParamHeaders, scanToolHeaders } from "../../src/proxy/tool-headers.ts";

const scan = scanToolHeaders({
  type: "object",
  properties: {
    region: { type: "string", "x-mcp-header": "Region" },
    priority: { type: "integer", "x-mcp-header": "Priority" },
    dryRun: { type: "boolean", "x-mcp-header": "Dry-Run" },
    target: { type: "object", properties: { zone: { type: "string", "x-mcp-header": "Zone" } } },
    query: { type: "string" },
  },
});
if (!scan.valid) throw new Error(scan.reason);
const declarations = scan.declarations;
const check = (args: unknown, headers: Record<string, string>) =>
  checkParamHeaders(new Headers(headers), args, declarations);
const base64 = (text: string) => `=?base64?${Buffer.from(text, "utf8").toString("base64")}?=`;

describe("accepted", () => {
  test("every mirrored argument present and equal (header names in any case)", () => {
    expect(
      check(
        { region: "us-west1", priority: 3, dryRun: false, target: { zone: "b" }, query: "SELECT 1" },
        {
          "mcp-param-region": "us-west1",
          "MCP-PARAM-PRIORITY": "3",
          "Mcp-Param-Dry-Run": "false",
          "mcp-param-zone": "b",
        },
      ),
    ).toBeUndefined();
  });

  test("null or absent arguments need no header, and one sent anyway is ignored", () => {
    expect(check({ region: null }, {})).toBeUndefined();
    expect(check({}, { "mcp-param-region": "anything" })).toBeUndefined();
    expect(check(undefined, {})).toBeUndefined();
  });

  test("Base64 values are decoded; a value without the whole sentinel is literal", () => {
    expect(check({ region: "Hello, 世界" }, { "mcp-param-region": base64("Hello, 世界") })).toBeUndefined();
    expect(check({ region: " padded " }, { "mcp-param-region": base64(" padded ") })).toBeUndefined();
    expect(check({ region: "=?base64?SGVsbG8=" }, { "mcp-param-region": "=?base64?SGVsbG8=" })).toBeUndefined();
    expect(check({ region: "SGVsbG8=" }, { "mcp-param-region": "SGVsbG8=" })).toBeUndefined();
  });

  test("integers compare by value (42.0 is 42)", () => {
    expect(check({ priority: 42 }, { "mcp-param-priority": "42.0" })).toBeUndefined();
    expect(check({ priority: -7 }, { "mcp-param-priority": "-7" })).toBeUndefined();
  });

  test("headers no declaration names pass", () => {
    expect(check({ query: "x" }, { "mcp-param-query": "y", "mcp-param-other": "z" })).toBeUndefined();
  });
});

describe("refused with 400 and -32020 HeaderMismatch", () => {
  const refused = (args: unknown, headers: Record<string, string>) => {
    const refusal = check(args, headers);
    expect(refusal).toMatchObject({ status: 400, code: -32020 });
    return refusal?.message ?? "";
  };

  test("the body carries a mirrored argument, the header is missing", () => {
    expect(refused({ region: "eu" }, {})).toContain("Mcp-Param-Region header is required");
    expect(refused({ region: "eu", target: { zone: "a" } }, { "mcp-param-region": "eu" })).toContain(
      "arguments.target.zone",
    );
  });

  test("a header that disagrees with the body (values are case-sensitive)", () => {
    expect(refused({ region: "eu" }, { "mcp-param-region": "EU" })).toContain("does not match");
    expect(refused({ priority: 42 }, { "mcp-param-priority": "43" })).toContain("Mcp-Param-Priority");
    expect(refused({ dryRun: true }, { "mcp-param-dry-run": "True" })).toContain("Mcp-Param-Dry-Run");
  });

  test("Base64 that is not canonical, not the alphabet, or not UTF-8", () => {
    expect(refused({ region: "Hello" }, { "mcp-param-region": "=?base64?SGVsbG8?=" })).toContain("not valid");
    expect(refused({ region: "Hello" }, { "mcp-param-region": "=?base64?SGVs!!!bG8=?=" })).toContain("not valid");
    expect(refused({ region: "x" }, { "mcp-param-region": "=?base64?/w==?=" })).toContain("not valid");
  });

  test("a plain value with characters a header may not carry as they are", () => {
    expect(refused({ region: "é" }, { "mcp-param-region": "\u00e9" })).toContain("not valid");
  });
});
