/**
 * What token exchange (RFC 8693) puts on the wire, seen by a recording token endpoint: the
 * client authenticates exactly as the OAuth flow does (RFC 6749 §2.3.1: id and secret
 * form-encoded, then Basic), and without --token-exchange-client-id there is no client
 * authentication at all (no empty client_id). The exchange against oidc-provider itself is
 * in auth-outgoing.test.ts and auth-ca-bundle.test.ts.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import type { TokenExchangeSpec } from "../../src/config/outgoing-auth-spec.ts";
import { rememberSubjectToken } from "../../src/auth/outgoing/subject-token.ts";
import { tokenExchangeSource } from "../../src/auth/outgoing/token-exchange.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

interface Seen {
  readonly authorization: string | null;
  readonly body: URLSearchParams;
}
const seen: Seen[] = [];
let sts: ReturnType<typeof Bun.serve>;

beforeAll(() => {
  sts = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      seen.push({ authorization: req.headers.get("authorization"), body: new URLSearchParams(await req.text()) });
      return Response.json({
        access_token: `exchanged-${seen.length}`,
        issued_token_type: "urn:ietf:params:oauth:token-type:access_token",
        token_type: "Bearer",
        expires_in: 300,
      });
    },
  });
});
afterAll(() => sts.stop(true));

function spec(client: Pick<TokenExchangeSpec, "clientId" | "clientSecret">): TokenExchangeSpec {
  return {
    url: new URL(`http://127.0.0.1:${sts.port}/token`),
    audience: "https://remote.example/mcp",
    scopes: ["mcp:read"],
    subjectTokenType: "access_token",
    headerName: "Authorization",
    ...client,
  };
}

async function exchange(client: Pick<TokenExchangeSpec, "clientId" | "clientSecret">): Promise<Seen> {
  const incoming = new Request("http://127.0.0.1/mcp");
  rememberSubjectToken(incoming, `subject-${crypto.randomUUID()}`);
  seen.length = 0;
  expect(await tokenExchangeSource(spec(client)).authorization(incoming)).toBe("Bearer exchanged-1");
  expect(seen).toHaveLength(1);
  return seen[0] as Seen;
}

test("client credentials: Basic over the form-encoded id and secret (- . _ * kept, space as +)", async () => {
  const { authorization, body } = await exchange({ clientId: "my-client.v2_*", clientSecret: "s3 cr+t:%/&=" });
  // Written out rather than computed: the test must not share the code it checks.
  expect(authorization).toBe(`Basic ${btoa("my-client.v2_*:s3+cr%2Bt%3A%25%2F%26%3D")}`);
  expect(body.has("client_id")).toBe(false);
  expect(body.has("client_secret")).toBe(false);
  expect(body.get("grant_type")).toBe("urn:ietf:params:oauth:grant-type:token-exchange");
  expect(body.get("subject_token_type")).toBe("urn:ietf:params:oauth:token-type:access_token");
  expect(body.get("audience")).toBe("https://remote.example/mcp");
  expect(body.get("scope")).toBe("mcp:read");
});

test("a client id without a secret is a public client: client_id in the body, no Authorization", async () => {
  const { authorization, body } = await exchange({ clientId: "public-exchanger", clientSecret: undefined });
  expect(authorization).toBeNull();
  expect(body.get("client_id")).toBe("public-exchanger");
});

test("no --token-exchange-client-id: no client authentication at all, and no empty client_id", async () => {
  const { authorization, body } = await exchange({ clientId: undefined, clientSecret: undefined });
  expect(authorization).toBeNull();
  expect(body.has("client_id")).toBe(false);
  expect(body.get("subject_token")).toStartWith("subject-");
});

test("a call through the group's gateway (gateway key, no client token) is told why there is nothing to exchange", async () => {
  const source = tokenExchangeSource(spec({ clientId: undefined, clientSecret: undefined }));
  seen.length = 0;
  const viaGateway = new Request("http://127.0.0.1/mcp", {
    headers: { authorization: `Bearer mcpmgr-gateway-${"k".repeat(43)}` },
  });
  const refused = await source.authorization(viaGateway).catch((err: unknown) => String(err));
  expect(refused).toContain("a call through the group's gateway carries none");
  expect(refused).not.toContain("enable incoming authentication");
  const bare = await source.authorization(new Request("http://127.0.0.1/mcp")).catch((err: unknown) => String(err));
  expect(bare).toContain("enable incoming authentication (--oidc-issuer)");
  expect(seen).toHaveLength(0);
});

test("a remote refusing every exchanged token forces one new exchange, not one or two per request", async () => {
  const source = tokenExchangeSource(spec({ clientId: "exchanger", clientSecret: "s" }));
  const incoming = new Request("http://127.0.0.1/mcp");
  rememberSubjectToken(incoming, `subject-${crypto.randomUUID()}`);
  seen.length = 0;
  for (let i = 0; i < 5; i++) {
    const value = await source.authorization(incoming);
    await source.invalidate(value, new Response(null, { status: 401 }));
  }
  // The first exchange, and the one the first refusal forced; the refusals after it changed nothing.
  expect(seen).toHaveLength(2);
});
