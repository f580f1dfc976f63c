/**
 * Cedar authorization as a handler in front of an MCP server, driven with `new Request`: the
 * real Cedar engine decides on the principal (from the authentication middleware, or
 * Client::"local"), the action and the target; lists are filtered by the same policies.
 */
import { describe, expect, test } from "bun:test";
import type { Principal, TokenVerifier } from "../../src/auth/incoming/verifier.ts";
import { incomingAuthSpec } from "../../src/config/incoming-auth-spec.ts";
import { bearerAuthentication } from "../../src/middleware/authn.ts";
import { cedarAuthorization } from "../../src/middleware/authz.ts";
import { resourceSpellings } from "../../src/middleware/cedar-decider.ts";
import { denialOf } from "../../src/middleware/denials.ts";
import { rpcBodyOf } from "../../src/middleware/rpc-body.ts";
import { compose, detachedContext } from "../../src/proxy/handler.ts";
import { messagesOf, rpc, toyServer } from "../support/mcp-handler.ts";

const ctx = detachedContext();
const policies = [
  // Everyone may echo, read the public file and use the greeting.
  'permit(principal, action == Action::"call_tool", resource == Tool::"echo");',
  'permit(principal, action == Action::"read_resource", resource == Resource::"file:///public.txt");',
  'permit(principal, action == Action::"get_prompt", resource == Prompt::"greeting");',
  // alice administers; the search team may call admin in safe mode only.
  'permit(principal == Client::"alice", action == Action::"call_tool", resource == Tool::"admin");',
  'permit(principal, action == Action::"call_tool", resource == Tool::"admin") when { context.claim_team == "search" && context.arg_mode == "safe" };',
].join("\n");

// Not under test: a table of tokens stands in for signature checks.
const verifier: TokenVerifier = {
  async verify(token) {
    const subject = token === "alice" ? "alice" : "bob";
    return {
      subject,
      scopes: [],
      claims: { sub: subject, team: token === "bob-search" ? "search" : "other" },
    } satisfies Principal;
  },
};
const authn = bearerAuthentication({
  spec: incomingAuthSpec(
    { "oidc-issuer": "https://idp.example", "oidc-insecure-allow-http": false, "jwks-allow-private-ip": false },
    new Set(["oidc-issuer"]),
  )!,
  verifier,
  endpointPath: "/mcp",
  trustProxyHeaders: false,
});

function setup(options: { authenticated?: boolean; sse?: boolean } = {}) {
  const server = toyServer(options);
  const authz = cedarAuthorization({ policies, entities: [] });
  const handle = options.authenticated ? compose(server.handler, authn, authz) : compose(server.handler, authz);
  return { server, handle };
}

const call = (name: string, args: Record<string, unknown> = {}) => ({
  jsonrpc: "2.0",
  id: 1,
  method: "tools/call",
  params: { name, arguments: args },
});

describe("requests", () => {
  test('an anonymous client (Client::"local") may do what the policies permit anyone, nothing else', async () => {
    const { server, handle } = setup();
    expect((await handle(rpc(call("echo")), ctx)).status).toBe(200);
    const refused = await handle(rpc(call("admin")), ctx);
    expect(refused.status).toBe(403);
    const [answer] = await messagesOf(refused);
    expect(answer?.error).toEqual({ code: -32001, message: 'Forbidden: call_tool on Tool::"admin" is not permitted' });
    expect(server.received).toHaveLength(1);
  });

  test("the authenticated principal, its claims and the call's arguments decide", async () => {
    const { handle } = setup({ authenticated: true });
    const as = (token: string, body: unknown) => handle(rpc(body, { authorization: `Bearer ${token}` }), ctx);
    expect((await as("alice", call("admin"))).status).toBe(200);
    expect((await as("bob", call("admin", { mode: "safe" }))).status).toBe(403);
    expect((await as("bob-search", call("admin", { mode: "safe" }))).status).toBe(200);
    expect((await as("bob-search", call("admin", { mode: "unsafe" }))).status).toBe(403);
  });

  test("prompts and resources; subscribing to a resource is decided as reading it", async () => {
    const { handle } = setup();
    const request = (method: string, params: Record<string, unknown>) => rpc({ jsonrpc: "2.0", id: 2, method, params });
    expect((await handle(request("prompts/get", { name: "greeting" }), ctx)).status).toBe(200);
    expect((await handle(request("prompts/get", { name: "internal" }), ctx)).status).toBe(403);
    expect((await handle(request("resources/read", { uri: "file:///public.txt" }), ctx)).status).toBe(200);
    expect((await handle(request("resources/subscribe", { uri: "file:///private.txt" }), ctx)).status).toBe(403);
    expect((await handle(request("resources/subscribe", { uri: "file:///public.txt" }), ctx)).status).toBe(200);
  });

  test("methods that touch nothing pass; any other method is denied by default, with or without an id", async () => {
    const { handle } = setup();
    // server/discover and subscriptions/listen are the 2026-07-28 handshake and notification stream.
    for (const method of [
      "initialize",
      "ping",
      "tools/list",
      "notifications/initialized",
      "server/discover",
      "subscriptions/listen",
    ])
      expect((await handle(rpc({ jsonrpc: "2.0", id: 3, method, params: {} }), ctx)).status).not.toBe(403);
    expect((await handle(rpc({ jsonrpc: "2.0", id: 4, method: "completion/complete", params: {} }), ctx)).status).toBe(
      403,
    );
    expect((await handle(rpc({ jsonrpc: "2.0", method: "tools/call", params: { name: "admin" } }), ctx)).status).toBe(
      403,
    );
  });
});

describe("lists", () => {
  for (const sse of [false, true]) {
    test(`show only what the same policies allow (${sse ? "SSE" : "JSON"} answers)`, async () => {
      const { handle } = setup({ sse });
      const names = async (method: string, field: string, key: string) => {
        const [answer] = await messagesOf(await handle(rpc({ jsonrpc: "2.0", id: 5, method }), ctx));
        return answer?.result[field].map((item: Record<string, string>) => item[key]);
      };
      expect(await names("tools/list", "tools", "name")).toEqual(["echo"]);
      expect(await names("prompts/list", "prompts", "name")).toEqual(["greeting"]);
      expect(await names("resources/list", "resources", "uri")).toEqual(["file:///public.txt"]);
    });
  }
});

describe("arguments Cedar cannot hold exactly deny the call (fail closed)", () => {
  const guarded = cedarAuthorization({
    policies: [
      "permit(principal, action, resource);",
      '@id("no-big-transfers") forbid(principal, action == Action::"call_tool", resource == Tool::"transfer") when { context.arg_amount > 100 };',
      'forbid(principal, action == Action::"call_tool", resource == Tool::"pay") when { context has arg_order && context.arg_order.total.greaterThan(decimal("99.99")) };',
    ].join("\n"),
    entities: [],
  });
  /** The status, and the audit reason of a refusal. */
  const decide = async (name: string, args: unknown) => {
    const server = toyServer();
    const response = await compose(server.handler, guarded)(
      rpc({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
      ctx,
    );
    const reason = denialOf(response)?.reason;
    return { status: response.status, reason, reached: server.received.length === 1 };
  };

  test("a Long within the policy's bound passes; one beyond it is forbidden, digits kept past 2^53", async () => {
    expect(await decide("transfer", { amount: 50, note: null })).toEqual({
      status: 200,
      reason: undefined,
      reached: true,
    });
    expect(await decide("transfer", { amount: 1000 })).toMatchObject({
      status: 403,
      reason: "Cedar: forbidden by no-big-transfers",
      reached: false,
    });
    const huge = rpcBodyOf('{"amount":9007199254740993}').value;
    expect(await decide("transfer", huge)).toMatchObject({
      status: 403,
      reason: "Cedar: forbidden by no-big-transfers",
    });
  });

  test("a decimal, a string or a missing amount makes the forbid policy err: denied, not skipped", async () => {
    for (const amount of [1000.5, "1000", undefined]) {
      const { status, reason } = await decide("transfer", amount === undefined ? {} : { amount });
      expect(status).toBe(403);
      expect(reason).toStartWith("Cedar: forbid policy no-big-transfers could not be evaluated");
    }
  });

  test("a key that differs from the one a policy reads only by case, or a value Cedar cannot hold, is denied", async () => {
    expect(await decide("transfer", { Amount: 1000 })).toMatchObject({
      status: 403,
      reason: 'Cedar: argument "Amount" differs from arg_amount, which a policy reads, only by case',
    });
    expect(await decide("transfer", { amount: 1.23456 })).toMatchObject({
      status: 403,
      reason: 'Cedar: argument "amount": 1.23456 has more than the 4 decimal places Cedar\'s decimal holds',
    });
    expect(await decide("transfer", { amount: { __extn: { fn: "decimal", arg: "1.0" } } })).toMatchObject({
      status: 403,
    });
    expect(await decide("transfer", [1000])).toMatchObject({
      status: 403,
      reason: "Cedar: the arguments are not an object",
    });
    // The client is told what in its own request Cedar could not hold.
    const server = toyServer();
    const refused = await compose(server.handler, guarded)(
      rpc({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "transfer", arguments: { amount: null } } }),
      ctx,
    );
    const [answer] = await messagesOf(refused);
    expect(answer?.error.message).toBe(
      'Forbidden: call_tool on Tool::"transfer" is not permitted (argument "amount": null has no Cedar value)',
    );
  });

  test("nested records: decimals compare as decimals, a case variant below is caught", async () => {
    expect(await decide("pay", { order: { total: 50.25 } })).toMatchObject({ status: 200 });
    expect(await decide("pay", { order: { total: 150.5 } })).toMatchObject({ status: 403 });
    expect(await decide("pay", { order: { Total: 150.5 } })).toMatchObject({
      status: 403,
      reason: 'Cedar: argument "order": the key "Total" differs from total, which a policy reads, only by case',
    });
  });

  test("what only another tool's policies read does not matter to a call", async () => {
    expect(await decide("echo", { Amount: 5, rate: null, order: { Total: 1 } })).toMatchObject({ status: 200 });
  });

  test("names full of quotes are decided as they are; one Cedar cannot hold is denied, never a crash", async () => {
    for (const name of ['transfer" || true || "', "transfer\\", 'Tool::"transfer"'])
      expect((await decide(name, { amount: 1000 })).status).toBe(200);
    // A server listing a tool whose name has a lone surrogate: hidden, and the rest of the list is filtered.
    const lister = async () =>
      Response.json({ jsonrpc: "2.0", id: 1, result: { tools: [{ name: "transfer\ud800" }, { name: "echo" }] } });
    const answer = await compose(lister, guarded)(rpc({ jsonrpc: "2.0", id: 1, method: "tools/list" }), ctx);
    expect(((await answer.json()) as { result: { tools: unknown[] } }).result.tools).toEqual([{ name: "echo" }]);
  });
});

describe("names that follow a tool (a gateway's --name-prefix when-needed)", () => {
  // The toy server's tools stand for gateway names: `echo` is workload w's `echo` under its stable
  // name w_echo, `admin` is w's `admin`, now renamed `w_admin` by a newcomer (so its bare name is `admin`).
  const aliases = (kind: "tool" | "prompt", name: string) =>
    kind === "tool" && (name === "echo" || name === "admin" || name === "secret_tool")
      ? { permit: [name, `w_${name}`], forbid: [name, `w_${name}`, name.replace(/^w_/, "")] }
      : undefined;
  const guarded = (rules: string[]) =>
    compose(toyServer().handler, cedarAuthorization({ policies: rules.join("\n"), entities: [] }, { aliases }));

  test("a forbid on any spelling denies; a permit on the gateway or stable name allows", async () => {
    const handle = guarded([
      "permit(principal, action, resource);",
      'forbid(principal, action == Action::"call_tool", resource == Tool::"w_admin");',
    ]);
    expect((await handle(rpc(call("admin")), ctx)).status).toBe(403);
    expect((await handle(rpc(call("echo")), ctx)).status).toBe(200);
    const permitStable = guarded(['permit(principal, action == Action::"call_tool", resource == Tool::"w_echo");']);
    expect((await permitStable(rpc(call("echo")), ctx)).status).toBe(200);
    expect((await permitStable(rpc(call("admin")), ctx)).status).toBe(403);
  });

  test("lists are filtered under the same names", async () => {
    const handle = guarded([
      "permit(principal, action, resource);",
      'forbid(principal, action == Action::"call_tool", resource == Tool::"w_secret_tool");',
    ]);
    const [answer] = await messagesOf(await handle(rpc({ jsonrpc: "2.0", id: 1, method: "tools/list" }), ctx));
    const names = ((answer?.result as { tools?: { name: string }[] } | undefined)?.tools ?? []).map((t) => t.name);
    expect(names).toEqual(["echo", "admin"]);
  });
});

describe("a tool the caller may not see (hiddenAsUnknown)", () => {
  test("is answered as an unknown tool, with the real reason kept for audit; a tool it sees keeps Forbidden", async () => {
    const rules = [
      'permit(principal, action == Action::"call_tool", resource == Tool::"echo");',
      'forbid(principal, action == Action::"call_tool", resource == Tool::"echo") when { context.arg_text == "secret" };',
    ].join("\n");
    const handle = compose(
      toyServer().handler,
      cedarAuthorization({ policies: rules, entities: [] }, { hiddenAsUnknown: {} }),
    );
    const hidden = await handle(rpc(call("admin")), ctx);
    const [answer] = await messagesOf(hidden);
    expect(answer?.error).toEqual({ code: -32602, message: "Unknown tool: admin" });
    expect(denialOf(hidden)?.reason).toContain("Cedar:");
    const refused = await handle(rpc(call("echo", { text: "secret" })), ctx);
    const [forbidden] = await messagesOf(refused);
    expect(forbidden?.error?.message).toStartWith("Forbidden");
  });
});

test("the spellings a resource URI is also decided under: none for a URI already in its normal form", () => {
  expect(resourceSpellings("demo://resource/static/document/features.md")).toEqual([]);
  expect(resourceSpellings("DEMO://resource/static/./document/x/../features.md")).toEqual([
    "demo://resource/static/document/features.md",
  ]);
  expect(resourceSpellings("file://localhost/etc/%70asswd")).toEqual(["file:///etc/%70asswd", "file:///etc/passwd"]);
  // An encoded slash stays encoded (decoding it would make another path), in upper case as RFC 3986 writes it.
  expect(resourceSpellings("file:///etc/a%2Fb")).toEqual([]);
  expect(resourceSpellings("file:///etc/a%2fb")).toEqual(["file:///etc/a%2Fb"]);
  expect(resourceSpellings("not a url")).toEqual([]);
  // Without the fragment, and without the query and fragment: servers that map a file URI to a path drop both.
  expect(resourceSpellings("file:///srv/secret.txt#x")).toEqual(["file:///srv/secret.txt"]);
  expect(resourceSpellings("file:///srv/secret.txt?x")).toEqual(["file:///srv/secret.txt"]);
  expect(resourceSpellings("FILE:///srv/%73ecret.txt?a=1#b")).toEqual([
    "file:///srv/%73ecret.txt?a=1#b",
    "file:///srv/secret.txt?a=1#b",
    "file:///srv/%73ecret.txt?a=1",
    "file:///srv/%73ecret.txt",
    "file:///srv/secret.txt?a=1",
    "file:///srv/secret.txt",
  ]);
  // Doubled and trailing slashes are one path to a file system; a host is case-insensitive (RFC 3986).
  expect(resourceSpellings("file:///srv//secret.txt")).toEqual(["file:///srv/secret.txt"]);
  expect(resourceSpellings("file:////srv/secret.txt")).toEqual(["file:///srv/secret.txt"]);
  expect(resourceSpellings("file:///srv/secret.txt/")).toEqual(["file:///srv/secret.txt"]);
  expect(resourceSpellings("demo://HOST/secret")).toEqual(["demo://host/secret"]);
  expect(resourceSpellings("file:///")).toEqual([]);
});

test("an allow-list written as `forbid … unless` still lets its resources through when their URI is not in normal form", async () => {
  // The exception names the URI as the server lists it (a space, not %20); its normal spelling is the
  // same resource, which the exception covers: the forbid must not fire on it. A forbid that names
  // a resource keeps refusing its other spellings.
  const allowed = "file:///home/me/My Notes.md";
  const server = toyServer();
  const authz = cedarAuthorization({
    policies: [
      'permit(principal, action == Action::"read_resource", resource);',
      `forbid(principal, action == Action::"read_resource", resource) unless { resource == Resource::"${allowed}" || resource == Resource::"file:///etc/hosts" };`,
      'forbid(principal, action == Action::"read_resource", resource == Resource::"file:///etc/hosts");',
    ].join("\n"),
    entities: [],
  });
  const handle = compose(server.handler, authz);
  const read = (uri: string) => handle(rpc({ jsonrpc: "2.0", id: 3, method: "resources/read", params: { uri } }), ctx);
  expect((await read(allowed)).status).toBe(200);
  expect((await read("file:///home/me/other.md")).status).toBe(403);
  expect((await read("file:///etc/./hosts")).status).toBe(403);
  expect((await read("FILE:///etc/hosts")).status).toBe(403);
});
