/**
 * Incoming authentication against a real authorization server (oidc-provider): `mcpmgr
 * proxy --oidc-*` in front of a recording upstream and of the conformance fixture; JWT and
 * opaque (introspected) tokens; the RFC 9728 document and the RFC 6750 challenge.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SignJWT, importJWK } from "jose";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CLIENTS,
  JWT_RESOURCE,
  OPAQUE_RESOURCE,
  signingKey,
  startAuthServer,
  type AuthServer,
  type JsonWebKeyWithKid,
} from "../support/auth-server.ts";
import { startConformanceServer, type RunningFixture } from "../support/conformance.ts";
import { emptyResultUpstream } from "../support/json-rpc-upstream.ts";
import { CLI_ENTRY, REPO_ROOT, startProxy } from "../support/processes.ts";
import { networkAddress } from "../support/network.ts";
import { eventually } from "../support/raw-http.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const LOCAL_DEV = ["--oidc-insecure-allow-http", "--jwks-allow-private-ip"];
let auth: AuthServer;
let key: JsonWebKeyWithKid;
let fixture: RunningFixture;
let upstream: ReturnType<typeof Bun.serve>;
const seenHeaders: Headers[] = [];
let scratch: string;

beforeAll(async () => {
  key = await signingKey("key-1");
  auth = await startAuthServer({ keys: [key] });
  fixture = await startConformanceServer();
  // Records what reaches the upstream.
  upstream = emptyResultUpstream((req) => seenHeaders.push(req.headers));
  scratch = await mkdtemp(join(tmpdir(), "mcpmgr-auth-"));
}, 60_000);

afterAll(async () => {
  await auth?.stop();
  await fixture?.stop();
  await upstream?.stop(true);
  await rm(scratch, { recursive: true, force: true });
});

const ping = (url: string, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "ping" }),
  });

describe("mcpmgr proxy --oidc-issuer (JWT access tokens)", () => {
  let proxy: Awaited<ReturnType<typeof startProxy>>;

  beforeAll(async () => {
    proxy = await startProxy(`http://127.0.0.1:${upstream.port}/mcp`, [
      "--oidc-issuer",
      auth.issuer,
      "--oidc-audience",
      JWT_RESOURCE,
      ...LOCAL_DEV,
    ]);
  }, 30_000);
  afterAll(async () => {
    await proxy?.stop();
  });

  test("no token: 401 with a Bearer challenge naming the RFC 9728 metadata; the metadata is served", async () => {
    const response = await ping(proxy.url);
    expect(response.status).toBe(401);
    const challenge = response.headers.get("www-authenticate") ?? "";
    const origin = new URL(proxy.url).origin;
    expect(challenge).toBe(
      `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp", scope="openid"`,
    );
    for (const path of ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]) {
      const answer = await fetch(`${origin}${path}`);
      // Named from the Host and cacheable for 300 s: a cache in front keeps one per Host.
      expect(answer.headers.get("vary")).toBe("Host");
      const metadata = await answer.json();
      expect(metadata).toEqual({
        resource: `${origin}/mcp`,
        authorization_servers: [auth.issuer],
        scopes_supported: ["openid"],
        bearer_methods_supported: ["header"],
      });
    }
  });

  test("a valid token passes, and the client's token never reaches the upstream", async () => {
    const token = await auth.token();
    seenHeaders.length = 0;
    const response = await ping(proxy.url, { authorization: `Bearer ${token}` });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ jsonrpc: "2.0", id: 7, result: {} });
    expect(seenHeaders.length).toBe(1);
    expect(seenHeaders[0]?.get("authorization")).toBeNull();
  });

  test("wrong audience, expired, wrong issuer, tampered, unsigned and hostile tokens get 401 invalid_token", async () => {
    const otherAudience = await auth.token({ resource: "https://other.example.test/mcp" });
    const signer = await importJWK(key, "RS256");
    const now = Math.floor(Date.now() / 1000);
    const wrongIssuer = await new SignJWT({ sub: "mallory", aud: JWT_RESOURCE })
      .setProtectedHeader({ alg: "RS256", kid: key.kid })
      .setIssuer("https://evil.example.test")
      .setIssuedAt(now)
      .setExpirationTime(now + 300)
      .sign(signer);
    // Signed by the issuer's own key, for this audience, but expired beyond the clock tolerance.
    const expired = await new SignJWT({ sub: "alice", aud: JWT_RESOURCE })
      .setProtectedHeader({ alg: "RS256", kid: key.kid })
      .setIssuer(auth.issuer)
      .setIssuedAt(now - 600)
      .setExpirationTime(now - 120)
      .sign(signer);
    const valid = await auth.token();
    const [head, payload, signature] = valid.split(".") as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString()) as Record<string, unknown>;
    const tampered = `${head}.${Buffer.from(JSON.stringify({ ...claims, sub: "admin" })).toString("base64url")}.${signature}`;
    const unsigned = `${Buffer.from(JSON.stringify({ alg: "none" })).toString("base64url")}.${payload}.`;
    const cases: [string, string][] = [
      [otherAudience, "aud"],
      [expired, "the token has expired"],
      [wrongIssuer, "another issuer"],
      [tampered, "signature"],
      [`${unsigned}x`, "invalid"],
      ["not-a-jwt", "no introspection endpoint"],
    ];
    for (const [token, why] of cases) {
      const response = await ping(proxy.url, { authorization: `Bearer ${token}` });
      expect(response.status).toBe(401);
      const challenge = response.headers.get("www-authenticate") ?? "";
      expect(challenge).toContain('error="invalid_token"');
      expect(challenge).toContain(why);
      expect(challenge).not.toContain(token);
    }
    for (const header of [
      "Basic dXNlcjpwYXNz",
      "Bearer",
      "Bearer a b",
      `Bearer ${"x".repeat(20_000)}`,
      "Bearer \u0000",
    ]) {
      const response = await fetch(proxy.url, {
        method: "POST",
        headers: { authorization: header, "content-type": "application/json" },
        body: "{}",
      }).catch(() => undefined);
      if (response) expect([400, 401, 431]).toContain(response.status);
    }
    // Still serving.
    expect((await ping(proxy.url, { authorization: `Bearer ${await auth.token()}` })).status).toBe(200);
  });

  test("a signed token of another type (typ) is no access token: 401; at+jwt and JWT are (RFC 9068)", async () => {
    const signer = await importJWK(key, "RS256");
    const now = Math.floor(Date.now() / 1000);
    const typed = (typ: string | undefined) =>
      new SignJWT({ sub: "alice", aud: JWT_RESOURCE })
        .setProtectedHeader({ alg: "RS256", kid: key.kid, ...(typ === undefined ? {} : { typ }) })
        .setIssuer(auth.issuer)
        .setIssuedAt(now)
        .setExpirationTime(now + 300)
        .sign(signer);
    for (const typ of ["logout+jwt", "secevent+jwt", "dpop+jwt", "id_token+jwt"]) {
      const response = await ping(proxy.url, { authorization: `Bearer ${await typed(typ)}` });
      expect({ typ, status: response.status }).toEqual({ typ, status: 401 });
      expect(response.headers.get("www-authenticate")).toContain("not an access token");
    }
    // A token bound to a key (DPoP) is worth nothing as a bearer token: whoever copied it would use it.
    const bound = await ping(proxy.url, { authorization: `Bearer ${await auth.token({ dpop: true })}` });
    expect(bound.status).toBe(401);
    expect(bound.headers.get("www-authenticate")).toContain("bound to a key");
    for (const typ of ["at+jwt", "application/at+jwt", "JWT", undefined]) {
      const response = await ping(proxy.url, { authorization: `Bearer ${await typed(typ)}` });
      expect({ typ, status: response.status }).toEqual({ typ, status: 200 });
    }
  });

  test("a token in the query (RFC 6750 access_token) is refused with 400 invalid_request and never forwarded in the URL", async () => {
    const token = await auth.token();
    const reachedBefore = seenHeaders.length;
    // With a valid token in the header too: the forwarder passes the URL on as it is, so the query's
    // copy would reach the upstream (and any log of its URLs).
    for (const query of [
      `access_token=${token}`,
      `a=1&ACCESS%5Ftoken=${token}`,
      // review39: a naive client appending `?access_token=` to a URL with a query, and `;` separators.
      `a=1?access_token=${token}`,
      `a=1;access_token=${token}`,
    ]) {
      const response = await ping(`${proxy.url}?${query}`, { authorization: `Bearer ${token}` });
      expect(response.status).toBe(400);
      const challenge = response.headers.get("www-authenticate") ?? "";
      expect(challenge).toContain('error="invalid_request"');
      expect(challenge).toContain("resource_metadata=");
      const body = (await response.json()) as { error: { message: string } };
      expect(body.error.message).toContain("Authorization header only");
      expect(JSON.stringify(body)).not.toContain(token);
    }
    // A CORS preflight is passed on unauthenticated: not with a token in its URL.
    const preflight = await fetch(`${proxy.url}?access_token=${token}`, {
      method: "OPTIONS",
      headers: { origin: new URL(proxy.url).origin, "access-control-request-method": "POST" },
    });
    expect(preflight.status).toBe(400);
    expect(seenHeaders.length).toBe(reachedBefore);
    // A query without that parameter is passed on as before.
    expect((await ping(`${proxy.url}?tokenish=1`, { authorization: `Bearer ${token}` })).status).toBe(200);
    expect((await ping(`${proxy.url}?access_token_hint=1`, { authorization: `Bearer ${token}` })).status).toBe(200);
    expect(seenHeaders.length).toBe(reachedBefore + 2);
  });

  test("a form-encoded body (RFC 6750 §2.2, the token's other way) is refused with 400 invalid_request, never forwarded (review39)", async () => {
    const token = await auth.token();
    const reachedBefore = seenHeaders.length;
    for (const contentType of [
      "application/x-www-form-urlencoded",
      "Application/X-WWW-Form-URLEncoded; charset=utf-8",
    ]) {
      const response = await fetch(proxy.url, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": contentType },
        body: `access_token=${token}&method=ping`,
      });
      expect(response.status).toBe(400);
      expect(response.headers.get("www-authenticate") ?? "").toContain('error="invalid_request"');
      expect(await response.text()).not.toContain(token);
    }
    expect(seenHeaders.length).toBe(reachedBefore);
    // JSON, with or without a charset, is passed on as before.
    expect(
      (await ping(proxy.url, { authorization: `Bearer ${token}`, "content-type": "application/json; charset=utf-8" }))
        .status,
    ).toBe(200);
    expect(seenHeaders.length).toBe(reachedBefore + 1);
  });
});

test("--trust-proxy-headers: the RFC 9728 resource follows an X-Forwarded-Host the listener answers to (--allowed-hosts), never another", async () => {
  const proxy = await startProxy(`http://127.0.0.1:${upstream.port}/mcp`, [
    "--oidc-issuer",
    auth.issuer,
    "--oidc-audience",
    JWT_RESOURCE,
    "--trust-proxy-headers",
    "--allowed-hosts",
    "mcp.example.test",
    ...LOCAL_DEV,
  ]);
  try {
    const origin = new URL(proxy.url).origin;
    const resourceFor = async (forwardedHost: string) => {
      const headers = { "x-forwarded-host": forwardedHost, "x-forwarded-proto": "https" };
      const metadata = await fetch(`${origin}/.well-known/oauth-protected-resource/mcp`, { headers });
      // A cache in front must not give one client's forwarded spelling to another.
      expect(metadata.headers.get("vary")).toBe("Host, X-Forwarded-Host, X-Forwarded-Proto");
      const challenge = (await ping(proxy.url, headers)).headers.get("www-authenticate") ?? "";
      return { resource: ((await metadata.json()) as { resource: string }).resource, challenge };
    };
    // The reverse proxy's public name, allowed: the document and the challenge name it.
    const allowed = await resourceFor("mcp.example.test");
    expect(allowed.resource).toBe("https://mcp.example.test/mcp");
    expect(allowed.challenge).toContain('resource_metadata="https://mcp.example.test/.well-known/');
    // A name the listener does not answer to (passed on by a reverse proxy that appends, or cached
    // by one in front): not believed, the listener's own origin instead, as the Origin check does.
    const foreign = await resourceFor("evil.example");
    expect(foreign.resource).toBe(`${origin}/mcp`);
    expect(foreign.challenge).toContain(`resource_metadata="${origin}/.well-known/`);
    // A name it answers to with a port no URL can hold (review39): the listener's own origin too,
    // not a 500 and an error line for each request without a token.
    for (const unusable of ["mcp.example.test:99999", "localhost:65536", "[::1]:70000"]) {
      const refused = await resourceFor(unusable);
      expect(refused.resource).toBe(`${origin}/mcp`);
      expect(refused.challenge).toContain(`resource_metadata="${origin}/.well-known/`);
    }
    expect(proxy.output()).not.toContain("[error]");
  } finally {
    await proxy.stop();
  }
});

test("--host 0.0.0.0 --trust-proxy-headers: a forwarded address is believed only when it is this machine's (review39)", async () => {
  const proxy = await startProxy(`http://127.0.0.1:${upstream.port}/mcp`, [
    "--host",
    "0.0.0.0",
    "--oidc-issuer",
    auth.issuer,
    "--oidc-audience",
    JWT_RESOURCE,
    "--trust-proxy-headers",
    ...LOCAL_DEV,
  ]);
  try {
    const port = new URL(proxy.url).port;
    const own = `http://127.0.0.1:${port}`;
    const resourceFor = async (forwardedHost: string) => {
      const metadata = await fetch(`${own}/.well-known/oauth-protected-resource/mcp`, {
        headers: { "x-forwarded-host": forwardedHost, "x-forwarded-proto": "https" },
      });
      return ((await metadata.json()) as { resource: string }).resource;
    };
    // An address that is not this machine's, passed on from a client by a reverse proxy: not believed.
    for (const foreign of ["203.0.113.7", "203.0.113.7:8443", "[2001:db8::7]"])
      expect({ foreign, resource: await resourceFor(foreign) }).toEqual({ foreign, resource: `${own}/mcp` });
    // This machine's own address (on a network, else loopback) is.
    const address = networkAddress() ?? "127.0.0.1";
    expect(await resourceFor(`${address}:8443`)).toBe(`https://${address}:8443/mcp`);
  } finally {
    await proxy.stop();
  }
});

test("--trust-proxy-headers without the forwarded name in --allowed-hosts: the proxy log says which name to add, once", async () => {
  // A reverse proxy that rewrites Host to the listener's address and names its public name only in
  // X-Forwarded-Host: before the resource followed only allowed names, this worked without --allowed-hosts.
  const proxy = await startProxy(`http://127.0.0.1:${upstream.port}/mcp`, [
    "--oidc-issuer",
    auth.issuer,
    "--oidc-audience",
    JWT_RESOURCE,
    "--trust-proxy-headers",
    ...LOCAL_DEV,
  ]);
  try {
    const origin = new URL(proxy.url).origin;
    const headers = { "x-forwarded-host": "public.example.test", "x-forwarded-proto": "https" };
    for (let i = 0; i < 3; i++) {
      const metadata = await fetch(`${origin}/.well-known/oauth-protected-resource/mcp`, { headers });
      expect(((await metadata.json()) as { resource: string }).resource).toBe(`${origin}/mcp`);
    }
    const advice = "X-Forwarded-Host 'public.example.test' is not a name this listener answers to";
    await eventually(() => proxy.output().includes(advice), 10_000, "the proxy log naming the forwarded name");
    expect(proxy.output()).toContain("add it to --allowed-hosts, or set --resource-url");
    expect(proxy.output().split(advice).length - 1).toBe(1);
  } finally {
    await proxy.stop();
  }
});

test("the SDK client works through a protected proxy in front of the conformance server", async () => {
  const proxy = await startProxy(fixture.url, [
    "--oidc-issuer",
    auth.issuer,
    "--oidc-audience",
    JWT_RESOURCE,
    ...LOCAL_DEV,
  ]);
  try {
    const token = await auth.token();
    const client = new Client({ name: "auth-test", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(proxy.url), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    const { tools } = await client.listTools();
    expect(tools.length).toBeGreaterThan(0);
    await client.close();
  } finally {
    await proxy.stop();
  }
}, 60_000);

test("opaque tokens are introspected (RFC 7662) with the proxy's client credentials; revoked ones are refused", async () => {
  const proxy = await startProxy(`http://127.0.0.1:${upstream.port}/mcp`, [
    ...auth.introspectionArgs(),
    "--oidc-client-secret",
    CLIENTS.introspector.client_secret,
    "--oidc-scopes",
    "mcp:read,mcp:write",
  ]);
  try {
    const opaque = await auth.token({ resource: OPAQUE_RESOURCE });
    expect(opaque.split(".").length).toBe(1);
    expect((await ping(proxy.url, { authorization: `Bearer ${opaque}` })).status).toBe(200);
    const revoked = await auth.token({ resource: OPAQUE_RESOURCE });
    const revocation = await fetch(`${auth.issuer}/token/revocation`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: `Basic ${btoa(`${CLIENTS.service.client_id}:${CLIENTS.service.client_secret}`)}`,
      },
      body: new URLSearchParams({ token: revoked }),
    });
    expect(revocation.status).toBe(200);
    expect((await ping(proxy.url, { authorization: `Bearer ${revoked}` })).status).toBe(401);
    // Introspected as bound to a key (DPoP): not a bearer token.
    const bound = await ping(proxy.url, {
      authorization: `Bearer ${await auth.token({ resource: OPAQUE_RESOURCE, dpop: true })}`,
    });
    expect(bound.status).toBe(401);
    expect(bound.headers.get("www-authenticate")).toContain("bound to a key");
    const unknown = await ping(proxy.url, { authorization: "Bearer 0pAqUe-but-unknown-token-value" });
    expect(unknown.status).toBe(401);
    expect(unknown.headers.get("www-authenticate")).toContain("not active");
    expect(unknown.headers.get("www-authenticate")).toContain('scope="mcp:read mcp:write"');
  } finally {
    await proxy.stop();
  }
}, 60_000);

test("a wrong --oidc-client-secret: the 503 says the proxy's credentials were refused, and the proxy's log says which options to check", async () => {
  const proxy = await startProxy(`http://127.0.0.1:${upstream.port}/mcp`, [
    ...auth.introspectionArgs(),
    "--oidc-client-secret",
    "not-the-introspector-secret",
  ]);
  try {
    const response = await ping(proxy.url, {
      authorization: `Bearer ${await auth.token({ resource: OPAQUE_RESOURCE })}`,
    });
    expect(response.status).toBe(503);
    const body = (await response.json()) as { error: { message: string } };
    expect(body.error.message).toContain("refused the proxy's own credentials");
    expect(body.error.message).not.toContain("cannot be reached");
    await eventually(
      () => proxy.output().includes("refused mcpmgr's client credentials (HTTP 401)"),
      10_000,
      "the warning in the proxy's log",
    );
    expect(proxy.output()).toContain("--oidc-client-secret");
    expect(proxy.output()).not.toContain("not-the-introspector-secret");
  } finally {
    await proxy.stop();
  }
}, 60_000);

test("an introspection endpoint that does not answer: 503 with Retry-After, not 401 and not a hang", async () => {
  const silent = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {}, open() {} } });
  const proxy = await startProxy(`http://127.0.0.1:${upstream.port}/mcp`, [
    "--oidc-issuer",
    auth.issuer,
    "--oidc-audience",
    OPAQUE_RESOURCE,
    "--oidc-introspection-url",
    `http://127.0.0.1:${silent.port}/introspect`,
    "--oidc-client-id",
    CLIENTS.introspector.client_id,
    "--oidc-client-secret",
    CLIENTS.introspector.client_secret,
    ...LOCAL_DEV,
  ]);
  try {
    const reachedBefore = seenHeaders.length;
    const started = performance.now();
    const response = await ping(proxy.url, {
      authorization: `Bearer ${await auth.token({ resource: OPAQUE_RESOURCE })}`,
    });
    expect(response.status).toBe(503);
    expect(performance.now() - started).toBeLessThan(8_000);
    expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(0);
    // The token may be fine: the client is not told to drop it.
    expect(response.headers.get("www-authenticate")).toBeNull();
    const body = (await response.json()) as { error: { code: number; message: string } };
    expect(body.error.message).toContain("authorization server cannot be reached");
    // Fail closed: nothing reached the upstream.
    expect(seenHeaders.length).toBe(reachedBefore);
  } finally {
    await proxy.stop();
    silent.stop(true);
  }
}, 60_000);

describe("start-up checks", () => {
  const proxyFails = (args: string[]) => {
    const result = Bun.spawnSync(
      [process.execPath, CLI_ENTRY, "proxy", "p", "--target-uri", `http://127.0.0.1:${upstream.port}/mcp`, ...args],
      { cwd: REPO_ROOT, env: { ...process.env, NO_COLOR: "1" }, timeout: 30_000 },
    );
    return { code: result.exitCode, err: result.stderr.toString() };
  };

  test("an http:// issuer needs --oidc-insecure-allow-http; a private address needs --jwks-allow-private-ip", () => {
    const http = proxyFails(["--oidc-issuer", auth.issuer]);
    expect(http.code).toBe(2);
    expect(http.err).toContain("--oidc-insecure-allow-http");
    const privateIp = proxyFails(["--oidc-issuer", auth.issuer, "--oidc-insecure-allow-http"]);
    expect(privateIp.code).toBe(1);
    expect(privateIp.err).toContain("private address");
    expect(privateIp.err).toContain("--jwks-allow-private-ip");
    // An address is not repeated after itself ("127.0.0.1 is a private address (127.0.0.1)").
    expect(privateIp.err).toContain(`${new URL(auth.issuer).hostname} is a private address (hint:`);
    for (const result of [http, privateIp]) expect(result.err.trim().split("\n")).toHaveLength(1);
  });

  test("companions without an issuer, introspection without a client id, and an unreachable issuer are clear errors", async () => {
    expect(proxyFails(["--oidc-audience", "x"]).err).toContain("--oidc-audience needs --oidc-issuer");
    expect(
      proxyFails([
        "--oidc-issuer",
        auth.issuer,
        "--oidc-introspection-url",
        `${auth.issuer}/token/introspection`,
        ...LOCAL_DEV,
      ]).err,
    ).toContain("needs --oidc-client-id");
    const unreachable = proxyFails(["--oidc-issuer", "http://127.0.0.1:9/", ...LOCAL_DEV]);
    expect(unreachable.code).toBe(1);
    expect(unreachable.err).toContain("OIDC discovery");
    const tokenFile = join(scratch, "empty-token");
    await writeFile(tokenFile, "");
    expect(proxyFails(["--oidc-issuer", auth.issuer, "--jwks-auth-token-file", tokenFile, ...LOCAL_DEV]).err).toContain(
      "the file is empty",
    );
  });
});

test("mcpmgr run --oidc-* protects a workload's endpoint the same way", async () => {
  const { spawnUntil } = await import("../support/processes.ts");
  const run = await spawnUntil(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      "--foreground",
      "npx://./test/fixtures/sandbox-probe",
      "--name",
      "protected-probe",
      "--oidc-issuer",
      auth.issuer,
      "--oidc-audience",
      JWT_RESOURCE,
      ...LOCAL_DEV,
    ],
    /^(http:\/\/\S+)$/m,
    { timeoutMs: 30_000 },
  );
  try {
    const url = run.match[1] as string;
    const refused = await ping(url);
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toContain("/.well-known/oauth-protected-resource/mcp");
    const client = new Client({ name: "auth-run-test", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { authorization: `Bearer ${await auth.token()}` } },
      }),
    );
    expect((await client.listTools()).tools.map((t) => t.name)).toContain("env");
    await client.close();
  } finally {
    await run.stop();
  }
}, 60_000);

test("--jwks-auth-token-file is sent to the JWKS host, and --thv-ca-bundle trusts its private CA (https)", async () => {
  const dir = await mkdtemp(join(scratch, "tls-"));
  const made = Bun.spawnSync(
    [
      "openssl",
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
      "-keyout",
      join(dir, "key.pem"),
      "-out",
      join(dir, "cert.pem"),
    ],
    { stderr: "pipe" },
  );
  expect(made.exitCode).toBe(0);
  const jwks = await (await fetch(`${auth.issuer}/jwks`)).text();
  const seenAuth: (string | null)[] = [];
  // The JWKS behind TLS with a private CA, and only for holders of a token.
  const guarded = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: Bun.file(join(dir, "cert.pem")), key: Bun.file(join(dir, "key.pem")) },
    fetch(req) {
      seenAuth.push(req.headers.get("authorization"));
      if (req.headers.get("authorization") !== "Bearer jwks-reader-token") return new Response("no", { status: 401 });
      return new Response(jwks, { headers: { "content-type": "application/json" } });
    },
  });
  const tokenFile = join(dir, "jwks-token");
  await writeFile(tokenFile, "jwks-reader-token\n");
  const jwksUrl = `https://127.0.0.1:${guarded.port}/jwks`;
  const base = [
    "--oidc-issuer",
    auth.issuer,
    "--oidc-audience",
    JWT_RESOURCE,
    "--oidc-jwks-url",
    jwksUrl,
    ...LOCAL_DEV,
  ];
  const run = (extra: string[]) => {
    const proc = Bun.spawn(
      [
        process.execPath,
        CLI_ENTRY,
        "proxy",
        "p",
        "--target-uri",
        `http://127.0.0.1:${upstream.port}/mcp`,
        ...base,
        ...extra,
      ],
      { cwd: REPO_ROOT, env: { ...process.env, NO_COLOR: "1" }, stdout: "pipe", stderr: "pipe" },
    );
    return proc;
  };
  try {
    // Without the CA the TLS handshake fails; without the token the JWKS answers 401.
    for (const [extra, text] of [
      [["--jwks-auth-token-file", tokenFile], "cannot fetch the JWKS"],
      [["--thv-ca-bundle", join(dir, "cert.pem")], "HTTP 401"],
    ] as const) {
      const proc = run([...extra]);
      const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
      expect(code).toBe(1);
      expect(stderr).toContain(text);
    }
    const proxy = await startProxy(`http://127.0.0.1:${upstream.port}/mcp`, [
      ...base,
      "--jwks-auth-token-file",
      tokenFile,
      "--thv-ca-bundle",
      join(dir, "cert.pem"),
    ]);
    try {
      expect((await ping(proxy.url, { authorization: `Bearer ${await auth.token()}` })).status).toBe(200);
      expect(seenAuth).toContain("Bearer jwks-reader-token");
      expect(proxy.output()).not.toContain("jwks-reader-token");
    } finally {
      await proxy.stop();
    }
  } finally {
    await guarded.stop(true);
  }
}, 60_000);
