/**
 * Introspection under a hostile or struggling authorization server (review 12, F10): what blames
 * the server (a 429 with its Retry-After) stops introspection for a while, what says nothing (a
 * 400 about one token) refuses that request alone; tokens the server vouched for keep working
 * meanwhile; a flood of made-up tokens runs at most a fixed number of introspections at once.
 * The issuer is the real oidc-provider (discovery, keys); the introspection endpoint is a small
 * real HTTP server in the test that answers as each case needs.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { MAX_INTROSPECTIONS_IN_FLIGHT, MAX_INTROSPECTIONS_WAITING } from "../../src/auth/incoming/introspection.ts";
import { createTokenVerifier, TokenRejected, VerificationUnavailable } from "../../src/auth/incoming/verifier.ts";
import { incomingAuthSpec } from "../../src/config/incoming-auth-spec.ts";
import { type AuthServer, CLIENTS, OPAQUE_RESOURCE, signingKey, startAuthServer } from "../support/auth-server.ts";
import { eventually } from "../support/raw-http.ts";

setDefaultTimeout(60_000);

let auth: AuthServer;
beforeAll(async () => {
  auth = await startAuthServer({ keys: [await signingKey("introspection-key")] });
});
afterAll(async () => {
  await auth?.stop();
});

/**
 * An introspection endpoint: `good-NAME` is active for NAME, `odd-…` gets a 400, anything else
 * is inactive; `rateLimited` answers every request 429 with that Retry-After; `hold` keeps
 * requests for `made-up-…` tokens waiting until released. Counts requests, and the most at once.
 */
function introspectionEndpoint() {
  const state = {
    requests: 0,
    open: 0,
    mostOpen: 0,
    rateLimited: undefined as string | undefined,
    hold: undefined as Promise<void> | undefined,
  };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      state.requests++;
      state.open++;
      state.mostOpen = Math.max(state.mostOpen, state.open);
      try {
        const token = new URLSearchParams(await request.text()).get("token") ?? "";
        if (state.rateLimited !== undefined)
          return new Response("slow down", { status: 429, headers: { "retry-after": state.rateLimited } });
        if (token.startsWith("odd-")) return Response.json({ error: "invalid_request" }, { status: 400 });
        if (token.startsWith("made-up-") && state.hold) await state.hold;
        // An active token whose `exp` is not a NumericDate (review39): a string, or null.
        if (token.startsWith("string-exp-") || token.startsWith("null-exp-"))
          return Response.json({
            active: true,
            sub: "mallory",
            aud: OPAQUE_RESOURCE,
            exp: token.startsWith("null-") ? null : String(Math.floor(Date.now() / 1000) + 3600),
          });
        if (!token.startsWith("good-")) return Response.json({ active: false });
        return Response.json({
          active: true,
          sub: token.slice(5),
          aud: OPAQUE_RESOURCE,
          exp: Math.floor(Date.now() / 1000) + 3600,
        });
      } finally {
        state.open--;
      }
    },
  });
  return { state, server, url: `http://127.0.0.1:${server.port}/introspect` };
}

async function verifierFor(url: string, now: () => number, warnings: string[]) {
  const options = {
    "oidc-issuer": auth.issuer,
    "oidc-audience": OPAQUE_RESOURCE,
    "oidc-introspection-url": url,
    "oidc-client-id": CLIENTS.introspector.client_id,
    "oidc-client-secret": CLIENTS.introspector.client_secret,
    "oidc-insecure-allow-http": true,
    "jwks-allow-private-ip": true,
  };
  return createTokenVerifier(incomingAuthSpec(options, new Set(Object.keys(options)))!, {
    now,
    warn: (text) => warnings.push(text),
  });
}

async function outcome(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => value,
    (err: unknown) => err,
  );
}

test("a 400 about one token refuses that request alone; a 429 stops introspection for its Retry-After, while tokens it vouched for keep working", async () => {
  const endpoint = introspectionEndpoint();
  let clock = Date.now();
  const warnings: string[] = [];
  try {
    const verifier = await verifierFor(endpoint.url, () => clock, warnings);
    expect((await verifier.verify("good-alice")).subject).toBe("alice");
    // An answer that says nothing about the server's health: this request is refused, not the next one.
    const odd = await outcome(verifier.verify("odd-token"));
    expect(odd).toBeInstanceOf(VerificationUnavailable);
    expect((await verifier.verify("good-bob")).subject).toBe("bob");
    expect(warnings.some((text) => text.includes("HTTP 400") && text.includes("other requests are not affected"))).toBe(
      true,
    );

    // Rate limited: the server is to blame, and says for how long.
    endpoint.state.rateLimited = "20";
    clock += 40_000; // alice's answer is no longer fresh (30 s): she would be asked about again
    const carol = await outcome(verifier.verify("good-carol"));
    expect(carol).toBeInstanceOf(VerificationUnavailable);
    expect((carol as VerificationUnavailable).retryAfterMs).toBeGreaterThan(15_000);
    // Nobody asks it again meanwhile: refused at once, without a request.
    const asked = endpoint.state.requests;
    expect(await outcome(verifier.verify("good-dave"))).toBeInstanceOf(VerificationUnavailable);
    expect(endpoint.state.requests).toBe(asked);
    // The tokens it said were active minutes ago still are, for the length of the outage.
    expect((await verifier.verify("good-alice")).subject).toBe("alice");
    expect((await verifier.verify("good-bob")).subject).toBe("bob");
    expect(endpoint.state.requests).toBe(asked);
  } finally {
    endpoint.server.stop(true);
  }
});

test("a flood of made-up tokens runs a bounded number of introspections at once; a known token is still served", async () => {
  const endpoint = introspectionEndpoint();
  let clock = Date.now();
  let release!: () => void;
  try {
    const verifier = await verifierFor(endpoint.url, () => clock, []);
    expect((await verifier.verify("good-alice")).subject).toBe("alice");
    clock += 40_000;
    endpoint.state.hold = new Promise<void>((resolve) => {
      release = resolve;
    });
    // As many as may run, as many as may wait their turn, and more.
    const flood = Array.from({ length: 2 * MAX_INTROSPECTIONS_IN_FLIGHT + MAX_INTROSPECTIONS_WAITING }, (_, i) =>
      outcome(verifier.verify(`made-up-${i}-${crypto.randomUUID()}`)),
    );
    await eventually(() => endpoint.state.open >= MAX_INTROSPECTIONS_IN_FLIGHT, 10_000, "the introspections to arrive");
    // Meanwhile alice (answered before, due for a new answer) is not kept waiting behind them.
    expect((await verifier.verify("good-alice")).subject).toBe("alice");
    release();
    const results = await Promise.all(flood);
    expect(endpoint.state.mostOpen).toBeLessThanOrEqual(MAX_INTROSPECTIONS_IN_FLIGHT);
    const asked = results.filter((result) => result instanceof TokenRejected);
    const refusedAtOnce = results.filter(
      (result) => result instanceof VerificationUnavailable && result.retryAfterMs <= 1_000,
    );
    expect(asked.length).toBe(MAX_INTROSPECTIONS_IN_FLIGHT + MAX_INTROSPECTIONS_WAITING);
    expect(refusedAtOnce.length).toBe(MAX_INTROSPECTIONS_IN_FLIGHT);
    // Not an outage: the next new token is asked about normally.
    expect((await verifier.verify("good-erin")).subject).toBe("erin");
  } finally {
    release?.();
    endpoint.server.stop(true);
  }
});

test("a new client arriving while every introspection slot is busy waits its turn instead of getting a 503 (review 14, R4)", async () => {
  const endpoint = introspectionEndpoint();
  let release!: () => void;
  try {
    const verifier = await verifierFor(endpoint.url, () => Date.now(), []);
    endpoint.state.hold = new Promise<void>((resolve) => {
      release = resolve;
    });
    const busy = Array.from({ length: MAX_INTROSPECTIONS_IN_FLIGHT }, (_, i) =>
      outcome(verifier.verify(`made-up-busy-${i}`)),
    );
    await eventually(() => endpoint.state.open >= MAX_INTROSPECTIONS_IN_FLIGHT, 10_000, "the slots to fill");
    const newcomer = outcome(verifier.verify("good-bob"));
    // bob is not sent while the slots are busy: the endpoint sees no more than the eight.
    await eventually(() => endpoint.state.requests >= MAX_INTROSPECTIONS_IN_FLIGHT, 10_000, "the eight requests");
    expect(endpoint.state.open).toBe(MAX_INTROSPECTIONS_IN_FLIGHT);
    release();
    const bob = await newcomer;
    expect(bob instanceof Error ? bob.message : (bob as { subject: string }).subject).toBe("bob");
    expect((await Promise.all(busy)).every((result) => result instanceof TokenRejected)).toBe(true);
    expect(endpoint.state.mostOpen).toBeLessThanOrEqual(MAX_INTROSPECTIONS_IN_FLIGHT);
  } finally {
    release?.();
    endpoint.server.stop(true);
  }
});

test("an active answer whose exp is not a number is refused, with a log line that says why and not the token (review39)", async () => {
  const endpoint = introspectionEndpoint();
  const warnings: string[] = [];
  try {
    const verifier = await verifierFor(endpoint.url, Date.now, warnings);
    for (const token of ["string-exp-s3cr3t", "null-exp-s3cr3t"]) {
      const refused = await outcome(verifier.verify(token));
      expect(refused).toBeInstanceOf(TokenRejected);
      expect((refused as TokenRejected).error).toBe("invalid_token");
      expect((refused as TokenRejected).message).toContain("malformed (exp)");
    }
    expect(warnings.some((text) => text.includes("exp that is not a number (string)"))).toBe(true);
    expect(warnings.join("\n")).not.toContain("s3cr3t");
    // A well-formed answer is still accepted.
    expect((await verifier.verify("good-alice")).subject).toBe("alice");
  } finally {
    endpoint.server.stop(true);
  }
});
