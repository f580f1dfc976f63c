/**
 * The authentication middleware's contract with what follows it (no sockets): the principal
 * reaches later middleware, insufficient_scope becomes 403 with the challenge, the metadata
 * document answers GET only, and only Bearer credentials are considered.
 */
import { expect, test } from "bun:test";
import { incomingAuthSpec } from "../../src/config/incoming-auth-spec.ts";
import { TokenRejected, type Principal, type TokenVerifier } from "../../src/auth/incoming/verifier.ts";
import { bearerAuthentication } from "../../src/middleware/authn.ts";
import { principalOf } from "../../src/middleware/caller.ts";
import { detachedContext } from "../../src/proxy/handler.ts";

const spec = incomingAuthSpec(
  {
    "oidc-issuer": "https://idp.example",
    "oidc-scopes": ["mcp:read"],
    "oidc-insecure-allow-http": false,
    "jwks-allow-private-ip": false,
  },
  new Set(["oidc-issuer", "oidc-scopes"]),
)!;

// The verifier is not under test here: a table of tokens stands in for signature checks.
const verifier: TokenVerifier = {
  async verify(token) {
    if (token === "good")
      return { subject: "alice", scopes: ["mcp:read"], claims: { sub: "alice", team: "search" } } satisfies Principal;
    if (token === "narrow") throw new TokenRejected("insufficient_scope", "the token lacks mcp:write");
    throw new TokenRejected("invalid_token", "nope");
  },
};

const seen: (Principal | undefined)[] = [];
const handler = bearerAuthentication({ spec, verifier, endpointPath: "/mcp", trustProxyHeaders: false })(
  async (req) => {
    seen.push(principalOf(req));
    return new Response("ok");
  },
);
const call = (init: RequestInit & { path?: string } = {}) =>
  handler(new Request(`http://127.0.0.1:9000${init.path ?? "/mcp"}`, { method: "POST", ...init }), detachedContext());

test("the verified principal is available to the next handler; the token itself is not in it", async () => {
  seen.length = 0;
  const response = await call({ headers: { authorization: "bearer good" } });
  expect(response.status).toBe(200);
  expect(seen[0]).toEqual({ subject: "alice", scopes: ["mcp:read"], claims: { sub: "alice", team: "search" } });
  expect(JSON.stringify(seen[0])).not.toContain("good");
});

test("insufficient_scope is 403 with the challenge; invalid tokens 401; other schemes lack authentication (no error code)", async () => {
  const narrow = await call({ headers: { authorization: "Bearer narrow" } });
  expect(narrow.status).toBe(403);
  expect(narrow.headers.get("www-authenticate")).toBe(
    'Bearer resource_metadata="http://127.0.0.1:9000/.well-known/oauth-protected-resource/mcp", scope="mcp:read", error="insufficient_scope", error_description="the token lacks mcp:write"',
  );
  expect((await call({ headers: { authorization: "Bearer other" } })).status).toBe(401);
  const basic = await call({ headers: { authorization: "Basic YTpi" } });
  expect(basic.status).toBe(401);
  // RFC 6750 §3.1: an unsupported scheme is a request lacking authentication, answered without an error code.
  expect(basic.headers.get("www-authenticate")).toBe(
    'Bearer resource_metadata="http://127.0.0.1:9000/.well-known/oauth-protected-resource/mcp", scope="mcp:read"',
  );
  for (const malformed of ["Bearer", "Bearer ", "Bearer two words"]) {
    const response = await call({ headers: { authorization: malformed } });
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toContain('error="invalid_token"');
  }
});

test("the metadata document answers GET and HEAD without a token, 405 otherwise; CORS preflights pass", async () => {
  const get = await call({ method: "GET", path: "/.well-known/oauth-protected-resource/mcp" });
  expect(get.status).toBe(200);
  expect(await get.json()).toEqual({
    resource: "http://127.0.0.1:9000/mcp",
    authorization_servers: ["https://idp.example"],
    scopes_supported: ["mcp:read"],
    bearer_methods_supported: ["header"],
  });
  expect((await call({ method: "POST", path: "/.well-known/oauth-protected-resource" })).status).toBe(405);
  // A real preflight passes; a bare OPTIONS is a request like any other.
  expect(
    (
      await call({
        method: "OPTIONS",
        headers: { "access-control-request-method": "POST", origin: "http://127.0.0.1:9000" },
      })
    ).status,
  ).toBe(200);
  expect((await call({ method: "OPTIONS" })).status).toBe(401);
  // A preflight has no body: one with a JSON-RPC message in it is no preflight, and would otherwise
  // reach the server unauthenticated (with the headers mcpmgr adds for the remote).
  const smuggled = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "x" } });
  const variants: Record<string, string>[] = [
    { "content-type": "application/json" },
    { "transfer-encoding": "chunked" },
  ];
  for (const headers of variants) {
    seen.length = 0;
    const response = await call({
      method: "OPTIONS",
      headers: { "access-control-request-method": "POST", origin: "http://127.0.0.1:9000", ...headers },
      body: smuggled,
    });
    expect(response.status).toBe(401);
    expect(seen).toEqual([]);
  }
});
