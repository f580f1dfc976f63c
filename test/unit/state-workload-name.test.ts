/** Workload name sanitising and deriving, as tables. */
import { describe, expect, test } from "bun:test";
import { McpmgrError } from "../../src/errors.ts";
import {
  assertWorkloadName,
  deriveWorkloadName,
  isValidWorkloadName,
  sanitizeWorkloadName,
} from "../../src/state/workloads.ts";

describe("sanitizeWorkloadName", () => {
  test.each([
    ["fetch", "fetch"],
    ["My Server", "my-server"],
    ["  --Leading and trailing--  ", "leading-and-trailing"],
    ["a__b..c//d", "a-b-c-d"],
    ["Café Ünïcode", "cafe-unicode"],
    ["UPPER_case-123", "upper-case-123"],
    ["---", ""],
    ["日本語", ""],
    ["a".repeat(80), "a".repeat(63)],
    [`${"a".repeat(62)}-b`, "a".repeat(62)], // cut at 63 would end in '-'
  ])("%p → %p", (input, expected) => {
    const name = sanitizeWorkloadName(input);
    expect(name).toBe(expected);
    if (name !== "") expect(isValidWorkloadName(name)).toBe(true);
  });
});

describe("deriveWorkloadName", () => {
  test.each([
    ["npx://@modelcontextprotocol/server-everything@1.2", "server-everything"],
    ["npx://@modelcontextprotocol/server-everything", "server-everything"],
    ["npx://some-mcp@latest", "some-mcp"],
    ["npx://@acme/mcp", "acme-mcp"],
    ["uvx://mcp-server-fetch", "mcp-server-fetch"],
    ["uvx://mcp-server-fetch==1.0.2", "mcp-server-fetch"],
    ["uvx://mcp_server_git[cli]>=2", "mcp-server-git"],
    ["go://github.com/org/repo/cmd/x@v1", "x"],
    ["go://github.com/org/repo@latest", "repo"],
    ["go://github.com/org/repo/v2", "repo"],
    ["go://github.com/org/repo/cmd/server", "repo-server"],
    ["ghcr.io/org/image:tag", "image"],
    ["ghcr.io/github/github-mcp-server", "github-mcp-server"],
    ["localhost:5000/team/tool:1.0", "tool"],
    ["docker.io/mcp/fetch@sha256:0123abcd", "fetch"],
    ["acme/mcp:latest", "acme-mcp"],
    ["alpine:3", "alpine"],
    ["https://api.example.com/mcp", "api-example-com"],
    ["https://www.example.com/sse", "example-com"],
    ["http://localhost:8080/mcp", "localhost-8080"],
    ["https://mcp.example.com/github/v1/mcp", "mcp-example-com-github"],
    ["./local/dir", "dir"],
    ["./local/dir/", "dir"],
    ["/opt/servers/My_Server", "my-server"],
    ["C:\\servers\\fetch", "fetch"],
    ["fetch", "fetch"],
    ["GitHub", "github"],
    ["npx://@/", "mcp-server"],
  ])("%p → %p", (source, expected) => {
    const name = deriveWorkloadName(source, "/work/project");
    expect(name).toBe(expected);
    expect(isValidWorkloadName(name)).toBe(true);
  });

  test("'.' and '..' take the folder's name from cwd", () => {
    expect(deriveWorkloadName(".", "/work/My Project")).toBe("my-project");
    expect(deriveWorkloadName("..", "/work/project")).toBe("work");
  });

  test("long sources still give a valid name", () => {
    const name = deriveWorkloadName(`ghcr.io/org/${"x".repeat(100)}:1`);
    expect(name.length).toBe(63);
    expect(isValidWorkloadName(name)).toBe(true);
  });
});

describe("assertWorkloadName", () => {
  test.each(["../etc", "a/b", "", "-a", "a-", "A", "a.b", "x".repeat(64)])("refuses %p", (name) => {
    let caught: unknown;
    try {
      assertWorkloadName(name);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(McpmgrError);
    expect((caught as McpmgrError).code).toBe("INVALID_ARGUMENT");
  });

  test("suggests the sanitised form", () => {
    let hint: string | undefined;
    try {
      assertWorkloadName("My Server");
    } catch (err) {
      hint = (err as McpmgrError).hint;
    }
    expect(hint).toContain("my-server");
  });

  test.each(["a", "0", "fetch", "a-b-c", "x".repeat(63)])("accepts %p", (name) => {
    expect(() => assertWorkloadName(name)).not.toThrow();
  });
});
