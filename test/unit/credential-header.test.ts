/**
 * The heuristic that keeps credentials forwarded as plain headers out of a background
 * workload's record (review L7): the common names and value forms it must catch, and ordinary
 * headers it must let through.
 */
import { expect, test } from "bun:test";
import { isCredentialHeader, isCredentialValue } from "../../src/secrets/credential-header.ts";

test("credential header names are caught whatever their value", () => {
  for (const name of [
    "Authorization",
    "Proxy-Authorization",
    "X-Authorization",
    "X-Auth",
    "X-Authn-Token",
    "Authorized-User-Token",
    "Cookie",
    "X-Api-Key",
    "Api-Key",
    "apikey",
    "X-Goog-Api-Key",
    "Ocp-Apim-Subscription-Key",
    "X-Access-Key",
    "X-Functions-Key",
    "X-Secret-Key",
    "Private-Token",
    "X-Upstream-Token",
    "X-Auth-Email",
    "X-Client-Secret",
    "X-Amz-Security-Token",
    "X-Amz-Sig",
    "X-Session-Id",
    "X-Password",
    "X-Pwd",
    "X-PAT",
    "X-CSRF-Token",
    "X_API_KEY",
    "x.api.key",
    // A describing last word does not clear a name whose other words hold one.
    "X-Api-Key-Id",
    "access_token",
    // Collector keys whose names carry no credential word.
    "x-honeycomb-team",
    "X-Honeycomb-Team",
    "uptrace-dsn",
    "Sentry-Dsn",
  ]) {
    expect({ name, caught: isCredentialHeader(name, "plain-value") }).toEqual({ name, caught: true });
  }
});

test("credential values are caught whatever the header is called", () => {
  for (const value of [
    "Bearer abc.def",
    "basic dXNlcjpwYXNz",
    "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.sig",
    "sk-live-0123456789abcdef",
    "sk_live_0123456789abcdef",
    "ghp_0123456789abcdefABCDEF0123456789abcd",
    "github_pat_11AAAAAAA0123456789",
    "glpat-0123456789abcdef",
    "xoxb-0123456789-abcdef",
    "AKIAIOSFODNN7EXAMPLE",
    "AIzaSyA0123456789abcdefghijklmnopqrstu",
    "npm_0123456789abcdef",
    "hf_0123456789abcdef",
  ]) {
    expect({ value, caught: isCredentialHeader("X-Custom", value) }).toEqual({ value, caught: true });
  }
});

test("ordinary headers pass", () => {
  for (const [name, value] of [
    ["X-Tenant", "acme"],
    ["X-Region", "eu-west-1"],
    ["Accept-Language", "en"],
    ["X-Request-Id", "4f1c2a"],
    ["Idempotency-Key", "retry-1"],
    ["X-Author", "ada"],
    ["X-Authority", "ca.example"],
    ["Authorship", "team-a"],
    ["X-Cache-Key", "v2"],
    ["X-Path-Prefix", "/v1"],
    ["X-Monitoring", "skip-this"],
    // Names that describe a credential without holding one (an OTLP endpoint's query too: `?token_type=`).
    ["token_type", "access"],
    ["tokenType", "access"],
    ["X-Auth-Mode", "oauth"],
    ["session_timeout", "300"],
    ["token_endpoint", "https://as.example/token"],
    ["X-Amz-Signature-Version", "4"],
  ] as const) {
    expect({ name, caught: isCredentialHeader(name, value) }).toEqual({ name, caught: false });
  }
});

test("ordinary values that start like a credential pass: a Slovak locale, a phrase opening with a scheme's word", () => {
  // Review 8: `run -e LANG=sk_SK.UTF-8` was refused as a secret key; so was `-e NOTE="token of thanks"`.
  for (const value of ["sk_SK.UTF-8", "sk_SK:cs_CZ", "sk-SK.ISO-8859-2", "token of thanks", "Basic auth is off here"]) {
    expect({ value, caught: isCredentialValue(value) }).toEqual({ value, caught: false });
  }
  // The forms they resemble are still caught.
  for (const value of ["sk-ant-api03-0123456789abcdef", "Token 0123456789abcdef", 'Digest username="u", nonce="n"']) {
    expect({ value, caught: isCredentialValue(value) }).toEqual({ value, caught: true });
  }
});
