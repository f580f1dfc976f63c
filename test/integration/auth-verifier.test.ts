/**
 * The token verifier against a real authorization server: expiry and not-before with the
 * clock moved (injected), signing-key rotation picked up from the JWKS, algorithms that
 * must never be accepted; the authorization server down or silent: fail closed, at once.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SignJWT, importJWK } from "jose";
import { incomingAuthSpec } from "../../src/config/incoming-auth-spec.ts";
import { createTokenVerifier, TokenRejected, VerificationUnavailable } from "../../src/auth/incoming/verifier.ts";
import {
  CLIENTS,
  JWT_RESOURCE,
  OPAQUE_RESOURCE,
  signingKey,
  startAuthServer,
  type AuthServer,
  type JsonWebKeyWithKid,
} from "../support/auth-server.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let auth: AuthServer;
let first: JsonWebKeyWithKid;

const specFor = (issuer: string) =>
  incomingAuthSpec(
    {
      "oidc-issuer": issuer,
      "oidc-audience": JWT_RESOURCE,
      "oidc-insecure-allow-http": true,
      "jwks-allow-private-ip": true,
    },
    new Set(["oidc-issuer", "oidc-audience", "oidc-insecure-allow-http", "jwks-allow-private-ip"]),
  )!;

/** The spec of a proxy for `audience` that asks `introspectionUrl` about opaque tokens, as the introspector client. */
const introspectingSpec = (audience: string, introspectionUrl: string) => {
  const options = {
    "oidc-issuer": auth.issuer,
    "oidc-audience": audience,
    "oidc-introspection-url": introspectionUrl,
    "oidc-client-id": CLIENTS.introspector.client_id,
    "oidc-client-secret": CLIENTS.introspector.client_secret,
    "oidc-insecure-allow-http": true,
    "jwks-allow-private-ip": true,
  };
  return incomingAuthSpec(options, new Set(Object.keys(options)))!;
};

async function rejection(promise: Promise<unknown>): Promise<TokenRejected> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof TokenRejected) return err;
    throw err;
  }
  throw new Error("the token was accepted");
}

beforeAll(async () => {
  first = await signingKey("key-1");
  auth = await startAuthServer({ keys: [first] });
});

afterAll(async () => {
  await auth?.stop();
});

test("exp and nbf are enforced with a small clock tolerance", async () => {
  const token = await auth.token();
  const now = Date.now();
  expect((await (await createTokenVerifier(specFor(auth.issuer), { now: () => now })).verify(token)).subject).toBe(
    "service-client",
  );
  // 300 s lifetime: 20 s past expiry is within the 30 s tolerance, 10 minutes is not.
  expect(
    (await (await createTokenVerifier(specFor(auth.issuer), { now: () => now + 320_000 })).verify(token)).subject,
  ).toBe("service-client");
  const expired = await rejection(
    (await createTokenVerifier(specFor(auth.issuer), { now: () => now + 600_000 })).verify(token),
  );
  expect(expired.message).toBe("the token has expired");
  const seconds = Math.floor(now / 1000);
  const notYet = await new SignJWT({ sub: "early", aud: JWT_RESOURCE, iss: auth.issuer })
    .setProtectedHeader({ alg: "RS256", kid: first.kid })
    .setNotBefore(seconds + 600)
    .setExpirationTime(seconds + 900)
    .sign(await importJWK(first, "RS256"));
  expect((await rejection((await createTokenVerifier(specFor(auth.issuer))).verify(notYet))).message).toBe(
    "the token is not valid yet",
  );
});

test("a rotated signing key is fetched from the JWKS when a token names it", async () => {
  const verifier = await createTokenVerifier(specFor(auth.issuer), { jwksCooldownMs: 0 });
  expect((await verifier.verify(await auth.token())).subject).toBe("service-client");
  // The server restarts on the same address with a new key first (it signs with it).
  const port = Number(new URL(auth.issuer).port);
  await auth.stop();
  const second = await signingKey("key-2");
  auth = await startAuthServer({ keys: [second, first], port });
  const rotated = await auth.token();
  expect(JSON.parse(Buffer.from(rotated.split(".")[0] as string, "base64url").toString()).kid).toBe("key-2");
  expect((await verifier.verify(rotated)).subject).toBe("service-client");
});

test("symmetric and unsigned algorithms are refused even with a matching key id", async () => {
  const verifier = await createTokenVerifier(specFor(auth.issuer));
  const now = Math.floor(Date.now() / 1000);
  const claims = { sub: "mallory", aud: JWT_RESOURCE, iss: auth.issuer, iat: now, exp: now + 60 };
  const hs256 = await new SignJWT(claims)
    .setProtectedHeader({ alg: "HS256", kid: "key-1" })
    .sign(new TextEncoder().encode("x".repeat(32)));
  expect((await rejection(verifier.verify(hs256))).message).toBe("the token's signing algorithm is not allowed");
  const none = `${Buffer.from(JSON.stringify({ alg: "none", kid: "key-1" })).toString("base64url")}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}.sig`;
  expect((await rejection(verifier.verify(none))).error).toBe("invalid_token");
  // A properly signed token without exp is refused too.
  const noExp = await new SignJWT({ sub: "x", aud: JWT_RESOURCE, iss: auth.issuer })
    .setProtectedHeader({ alg: "RS256", kid: "key-1" })
    .sign(await importJWK(first, "RS256"));
  expect((await rejection(verifier.verify(noExp))).error).toBe("invalid_token");
});

/** What a promise settles with, and after how long. */
async function timed<T>(promise: Promise<T>): Promise<{ value?: T; error?: unknown; ms: number }> {
  const started = performance.now();
  try {
    return { value: await promise, ms: performance.now() - started };
  } catch (error) {
    return { error, ms: performance.now() - started };
  }
}

/** A listener that accepts connections and never answers (a hung authorization server). */
const silentListener = (port = 0) => Bun.listen({ hostname: "127.0.0.1", port, socket: { data() {}, open() {} } });

test("the issuer silent: cached keys still verify; a token needing a fetch is refused as unavailable, then at once", async () => {
  const key = await signingKey("outage-1");
  const own = await startAuthServer({ keys: [key] });
  const port = Number(new URL(own.issuer).port);
  const verifier = await createTokenVerifier(specFor(own.issuer), { jwksCooldownMs: 0 });
  expect((await verifier.verify(await own.token())).subject).toBe("service-client");
  await own.stop();
  const hung = silentListener(port);
  try {
    const now = Math.floor(Date.now() / 1000);
    const signer = await importJWK(key, "RS256");
    const sign = (kid: string, sub: string) =>
      new SignJWT({ sub, aud: JWT_RESOURCE })
        .setProtectedHeader({ alg: "RS256", kid, typ: "at+jwt" })
        .setIssuer(own.issuer)
        .setIssuedAt(now)
        .setExpirationTime(now + 300)
        .sign(signer);
    // Its key is cached (and fresh): no need to ask the server.
    expect((await verifier.verify(await sign("outage-1", "alice"))).subject).toBe("alice");
    // An unknown key id means asking the server: refused as unavailable after one fetch timeout, not 401.
    const first = await timed(verifier.verify(await sign("outage-2", "bob")));
    expect(first.error).toBeInstanceOf(VerificationUnavailable);
    expect(first.ms).toBeLessThan(8_000);
    // Meanwhile nobody waits for it again: refused at once, and cached keys keep working.
    const again = await timed(verifier.verify(await sign("outage-3", "carol")));
    expect(again.error).toBeInstanceOf(VerificationUnavailable);
    expect(again.ms).toBeLessThan(500);
    expect((again.error as VerificationUnavailable).retryAfterMs).toBeGreaterThan(0);
    expect((await verifier.verify(await sign("outage-1", "dave"))).subject).toBe("dave");
  } finally {
    hung.stop(true);
  }
}, 30_000);

test("introspection silent: concurrent requests share one call and are refused as unavailable; then at once", async () => {
  const seen: string[] = [];
  const recorder = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: { data: (_socket, chunk) => void seen.push(chunk.toString()), open() {} },
  });
  try {
    const verifier = await createTokenVerifier(
      introspectingSpec(OPAQUE_RESOURCE, `http://127.0.0.1:${recorder.port}/introspect`),
    );
    const opaque = await auth.token({ resource: OPAQUE_RESOURCE });
    const outcomes = await Promise.all([1, 2, 3].map(() => timed(verifier.verify(opaque))));
    for (const outcome of outcomes) {
      expect(outcome.error).toBeInstanceOf(VerificationUnavailable);
      expect(outcome.ms).toBeLessThan(8_000);
    }
    expect(seen.filter((text) => text.startsWith("POST /introspect")).length).toBe(1);
    const again = await timed(verifier.verify(await auth.token({ resource: OPAQUE_RESOURCE })));
    expect(again.error).toBeInstanceOf(VerificationUnavailable);
    expect(again.ms).toBeLessThan(500);
  } finally {
    recorder.stop(true);
  }
}, 30_000);

test("introspection refusing mcpmgr's own client secret: said to be a refusal, and logged with the options to check", async () => {
  const options = {
    "oidc-issuer": auth.issuer,
    "oidc-audience": OPAQUE_RESOURCE,
    "oidc-introspection-url": `${auth.issuer}/token/introspection`,
    "oidc-client-id": CLIENTS.introspector.client_id,
    "oidc-client-secret": "not-the-secret",
    "oidc-insecure-allow-http": true,
    "jwks-allow-private-ip": true,
  };
  const warnings: string[] = [];
  const verifier = await createTokenVerifier(incomingAuthSpec(options, new Set(Object.keys(options)))!, {
    warn: (text) => warnings.push(text),
  });
  const outcome = await timed(verifier.verify(await auth.token({ resource: OPAQUE_RESOURCE })));
  expect(outcome.error).toBeInstanceOf(VerificationUnavailable);
  expect((outcome.error as Error).message).toContain("refused the proxy's own credentials");
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toContain("HTTP 401");
  expect(warnings[0]).toContain("--oidc-client-secret");
  expect(warnings[0]).not.toContain("not-the-secret");
});

test("an authorization server that cannot be reached is logged once per back-off, with what went wrong", async () => {
  const silent = silentListener();
  try {
    const options = {
      "oidc-issuer": auth.issuer,
      "oidc-audience": OPAQUE_RESOURCE,
      "oidc-introspection-url": `http://127.0.0.1:${silent.port}/introspect`,
      "oidc-client-id": CLIENTS.introspector.client_id,
      "oidc-client-secret": CLIENTS.introspector.client_secret,
      "oidc-insecure-allow-http": true,
      "jwks-allow-private-ip": true,
    };
    const warnings: string[] = [];
    const verifier = await createTokenVerifier(incomingAuthSpec(options, new Set(Object.keys(options)))!, {
      warn: (text) => warnings.push(text),
    });
    const token = await auth.token({ resource: OPAQUE_RESOURCE });
    expect((await timed(verifier.verify(token))).error).toBeInstanceOf(VerificationUnavailable);
    expect((await timed(verifier.verify(token))).error).toBeInstanceOf(VerificationUnavailable);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("no answer in time");
  } finally {
    silent.stop(true);
  }
}, 30_000);

test("an active token refused for its audience or its key binding is remembered: asked about once, like an inactive one", async () => {
  // The real authorization server, with the requests to it counted.
  let introspections = 0;
  const counting = (async (input: string | URL | Request, init?: RequestInit) => {
    if (String(input instanceof Request ? input.url : input).endsWith("/token/introspection")) introspections++;
    return fetch(input, init);
  }) as typeof fetch;
  // Not the audience the opaque tokens are issued for.
  const spec = introspectingSpec("https://another.example.test/mcp", `${auth.issuer}/token/introspection`);
  const verifier = await createTokenVerifier(spec, { fetch: counting });
  const elsewhere = await auth.token({ resource: OPAQUE_RESOURCE });
  const bound = await auth.token({ resource: OPAQUE_RESOURCE, dpop: true });
  for (const [token, why] of [
    [elsewhere, "not meant for this resource"],
    [bound, "bound to a key"],
  ] as const) {
    const before = introspections;
    for (let i = 0; i < 3; i++) expect((await rejection(verifier.verify(token))).message).toContain(why);
    expect(introspections - before).toBe(1);
  }
});

test("a discovery document without end is read no further than 1 MiB: a start-up error, not memory", async () => {
  const mebibyte = new TextEncoder().encode(" ".repeat(1024 * 1024));
  let sent = 0;
  const issuer = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (req) =>
      new Response(
        new ReadableStream({
          pull(controller) {
            if (sent++ < 256) return controller.enqueue(mebibyte);
            const origin = new URL(req.url).origin;
            controller.enqueue(
              new TextEncoder().encode(JSON.stringify({ issuer: origin, jwks_uri: `${origin}/jwks` })),
            );
            controller.close();
          },
        }),
        { headers: { "content-type": "application/json" } },
      ),
  });
  try {
    const failure = await createTokenVerifier(specFor(`http://127.0.0.1:${issuer.port}`)).catch((err: unknown) => err);
    expect(String((failure as Error).message)).toContain("is larger than 1024 KiB");
    expect(sent).toBeLessThan(64);
  } finally {
    await issuer.stop(true);
  }
});

test("--jwks-auth-token-file goes to the issuer's origin and to the URLs given, never to a jwks_uri the discovery document puts elsewhere", async () => {
  const jwks = await (await fetch(`${auth.issuer}/jwks`)).text();
  const seen: { where: string; authorization: string | null }[] = [];
  // The keys on another host, as a Kubernetes issuer's may be (a public bucket): readable by anyone.
  const keys = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      seen.push({ where: "keys host", authorization: req.headers.get("authorization") });
      return new Response(jwks, { headers: { "content-type": "application/json" } });
    },
  });
  // The issuer itself, whose discovery document names that host's JWKS.
  const issuer = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      seen.push({ where: "issuer", authorization: req.headers.get("authorization") });
      const origin = new URL(req.url).origin;
      return Response.json({ issuer: origin, jwks_uri: `http://127.0.0.1:${keys.port}/jwks` });
    },
  });
  const dir = await mkdtemp(join(tmpdir(), "mcpmgr-jwks-token-"));
  try {
    const tokenFile = join(dir, "token");
    await writeFile(tokenFile, "issuer-only-token\n");
    const issuerUrl = `http://127.0.0.1:${issuer.port}`;
    const specWith = (extra: Record<string, string>) => {
      const options = {
        "oidc-issuer": issuerUrl,
        "oidc-audience": JWT_RESOURCE,
        "oidc-insecure-allow-http": true,
        "jwks-allow-private-ip": true,
        "jwks-auth-token-file": tokenFile,
        ...extra,
      };
      return incomingAuthSpec(options, new Set(Object.keys(options)))!;
    };
    const token = await new SignJWT({ sub: "alice" })
      .setProtectedHeader({ alg: "RS256", kid: "key-1", typ: "at+jwt" })
      .setIssuer(issuerUrl)
      .setAudience(JWT_RESOURCE)
      .setExpirationTime("5m")
      .sign(await importJWK(first, "RS256"));

    const discovered = await createTokenVerifier(specWith({}));
    expect((await discovered.verify(token)).subject).toBe("alice");
    expect(seen.filter((s) => s.where === "issuer").map((s) => s.authorization)).toEqual(["Bearer issuer-only-token"]);
    expect(seen.filter((s) => s.where === "keys host").length).toBeGreaterThan(0);
    expect(seen.filter((s) => s.where === "keys host").map((s) => s.authorization)).not.toContain(
      "Bearer issuer-only-token",
    );

    // The same host named by the user (--oidc-jwks-url) gets it: the user chose it.
    seen.length = 0;
    const given = await createTokenVerifier(specWith({ "oidc-jwks-url": `http://127.0.0.1:${keys.port}/jwks` }));
    expect((await given.verify(token)).subject).toBe("alice");
    expect(seen.map((s) => s.authorization)).toEqual(seen.map(() => "Bearer issuer-only-token"));
    expect(seen.length).toBeGreaterThan(0);
  } finally {
    await issuer.stop(true);
    await keys.stop(true);
    await rm(dir, { recursive: true, force: true });
  }
});
