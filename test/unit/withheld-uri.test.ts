/**
 * Resource URIs in an audit line while its data is withheld (a gateway with a member that holds secrets
 * it cannot redact): written without userinfo, query and fragment, in targets and in denials' reasons;
 * tool and prompt names, and every line while nothing is withheld, as before.
 */
import { expect, test } from "bun:test";
import type { AuditConfig } from "../../src/config/audit-config.ts";
import { auditTrail } from "../../src/middleware/audit.ts";
import { bareUri, bareUrisIn } from "../../src/middleware/withheld-uri.ts";
import { markDenied } from "../../src/middleware/denials.ts";
import { compose, detachedContext, type Middleware } from "../../src/proxy/handler.ts";
import { rpc, toyServer } from "../support/mcp-handler.ts";

const ctx = detachedContext("192.0.2.7");
const config: AuditConfig = {
  component: "gateway-team",
  eventTypes: undefined,
  excludeEventTypes: new Set(),
  includeRequestData: false,
  includeResponseData: false,
  maxDataSize: 1024,
  logFile: undefined,
};

test("a URI keeps its scheme, host, port and path; its userinfo, query and fragment are withheld", () => {
  expect(bareUri("https://api.example.com/data?key=SECRET")).toBe("https://api.example.com/data?[withheld]");
  expect(bareUri("db://user:password@host:5432/x")).toBe("db://[withheld]@host:5432/x");
  expect(bareUri("db://user:p@ss@host/x#frag")).toBe("db://[withheld]@host/x#[withheld]");
  expect(bareUri("https://h/p?#")).toBe("https://h/p?[withheld]#[withheld]");
  expect(bareUri("file:///notes/readme.md")).toBe("file:///notes/readme.md");
  expect(bareUri("urn:isbn:0451450523?x=1")).toBe("urn:isbn:0451450523?[withheld]");
  expect(bareUri("notes/a?token=t\nb")).toBe("notes/a?[withheld]");
  // The path is kept: it says what was read (a key in it is not recognised: see docs/policies.md).
  expect(bareUri("test://doc/{n}")).toBe("test://doc/{n}");
});

test("a reason's quoted and bare URIs are made bare; its other words are kept", () => {
  expect(bareUrisIn('Cedar: forbidden (as Resource::"https://api.example.com/data?key=S\\"E")')).toBe(
    'Cedar: forbidden (as Resource::"https://api.example.com/data?[withheld]")',
  );
  expect(bareUrisIn("request denied by webhook audit: db://u:pw@h/x is off limits")).toBe(
    "request denied by webhook audit: db://[withheld]@h/x is off limits",
  );
  expect(bareUrisIn('--tools: "echo" not available')).toBe('--tools: "echo" not available');
});

/** A gateway-like audit in front of a policy that refuses `refuse` with `reason`; `withhold` counted. */
function setup(withheld: string | undefined, refuse?: { method: string; reason: string }) {
  const lines: Record<string, any>[] = [];
  let asked = 0;
  const audit = auditTrail({
    config,
    write: (line) => lines.push(JSON.parse(line)),
    withhold: () => {
      asked++;
      return withheld;
    },
  });
  const policy: Middleware = (next) => async (req, c) => {
    const body = (await req.clone().json()) as { method?: string; id?: number };
    if (refuse && body.method === refuse.method)
      return markDenied(Response.json({ jsonrpc: "2.0", id: body.id, error: { code: -32001, message: "no" } }), {
        reason: refuse.reason,
      });
    return next(req, c);
  };
  return { lines, asked: () => asked, handle: compose(toyServer({ sse: false }).handler, audit, policy) };
}

const uri = "https://api.example.com/data?key=SECRET";
const reason = `Cedar: forbidden (as Resource::${JSON.stringify(uri)})`;
const requests = [
  { jsonrpc: "2.0", id: 1, method: "resources/read", params: { uri } },
  { jsonrpc: "2.0", id: 2, method: "resources/subscribe", params: { uri: "db://u:SECRET@h/x" } },
  { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "holder_env", arguments: {} } },
  { jsonrpc: "2.0", id: 4, method: "prompts/get", params: { name: "holder_greet?x=1" } },
];

test("while data is withheld: resource targets and reasons without what may hold a key; tool and prompt names whole", async () => {
  const { lines, handle } = setup("holder holds secrets the gateway cannot redact; see its own audit", {
    method: "resources/subscribe",
    reason,
  });
  for (const request of requests) await (await handle(rpc(request), ctx)).text();
  expect(JSON.stringify(lines)).not.toContain("SECRET");
  expect(lines.map((line) => [line.target, line.reason])).toEqual([
    [{ method: "resources/read", resource: "https://api.example.com/data?[withheld]" }, undefined],
    [
      { method: "resources/subscribe", resource: "db://[withheld]@h/x" },
      'Cedar: forbidden (as Resource::"https://api.example.com/data?[withheld]")',
    ],
    [{ method: "tools/call", tool: "holder_env" }, undefined],
    [{ method: "prompts/get", prompt: "holder_greet?x=1" }, undefined],
  ]);
});

test("while nothing is withheld: every target and reason as sent, and tool and prompt lines do not ask", async () => {
  const { lines, asked, handle } = setup(undefined, { method: "resources/subscribe", reason });
  for (const request of requests.slice(2)) await (await handle(rpc(request), ctx)).text();
  expect(asked()).toBe(0);
  for (const request of requests.slice(0, 2)) await (await handle(rpc(request), ctx)).text();
  expect(lines.map((line) => [line.target, line.reason]).slice(2)).toEqual([
    [{ method: "resources/read", resource: uri }, undefined],
    [{ method: "resources/subscribe", resource: "db://u:SECRET@h/x" }, reason],
  ]);
});
