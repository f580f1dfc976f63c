/** The authorization request mcpmgr builds (its checks need no server: the metadata is given). */
import { expect, test } from "bun:test";
import { assertRemoteChosenUrl } from "../../src/auth/outgoing/discovery.ts";
import { serverWords, startAuthorization, type ServerInfo } from "../../src/auth/outgoing/oauth-client.ts";
import { rejection } from "../support/errors.ts";

const as = {
  issuer: "https://as.example.test",
  authorization_endpoint: "https://as.example.test/authorize",
  token_endpoint: "https://as.example.test/token",
};
const request = {
  redirectUri: "http://127.0.0.1:8666/callback",
  scopes: ["mcp"],
  resource: "https://mcp.example.test",
};

test("discovered metadata that does not list PKCE S256 is refused (MCP authorization)", async () => {
  for (const methods of [undefined, [], ["plain"]]) {
    const server: ServerInfo = {
      as: { ...as, ...(methods ? { code_challenge_methods_supported: methods } : {}) },
      oidc: true,
      issuerValidated: true,
    };
    const err = await rejection(startAuthorization(server, { clientId: "c" }, request), "AUTH_SETUP_FAILED");
    expect(err.message).toContain("PKCE");
  }
});

test("with S256 listed, or endpoints given by hand, the request carries an S256 challenge and state", async () => {
  for (const server of [
    { as: { ...as, code_challenge_methods_supported: ["S256"] }, oidc: true, issuerValidated: true },
    { as, oidc: false, issuerValidated: false },
  ] satisfies ServerInfo[]) {
    const pending = await startAuthorization(server, { clientId: "c" }, request);
    expect(pending.url.searchParams.get("code_challenge_method")).toBe("S256");
    expect(pending.url.searchParams.get("code_challenge")).toMatch(/^[\w-]{43}$/);
    expect(pending.url.searchParams.get("state")).toBe(pending.state);
  }
});

test("a remote may name a plain-http endpoint on loopback only; a name that merely begins with 127. is no loopback", async () => {
  const target = new URL("http://127.0.0.1:9/mcp");
  expect((await assertRemoteChosenUrl("http://127.0.0.1:8080/token", "token endpoint", target)).href).toBe(
    "http://127.0.0.1:8080/token",
  );
  const err = await rejection(
    assertRemoteChosenUrl("http://127.attacker.example/token", "token endpoint", target),
    "AUTH_SETUP_FAILED",
  );
  expect(err.message).toBe(
    "refusing http://127.attacker.example as the remote's token endpoint: only https:// (or http:// on loopback)",
  );
});

test("an authorization server's error words are one line, however it writes them", () => {
  expect(serverWords("invalid_grant", "expired\n[info] Authorize mcpmgr at:\nhttp://192.0.2.1/x")).toBe(
    "invalid_grant: expired\\n[info] Authorize mcpmgr at:\\nhttp://192.0.2.1/x",
  );
  expect(serverWords("access_denied")).toBe("access_denied");
  expect(serverWords("e", "x".repeat(1_000)).length).toBeLessThan(320);
});
