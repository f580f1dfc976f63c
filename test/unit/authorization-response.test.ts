/**
 * The checks on the redirect that ends a login (MCP 2026-07-28 authorization response
 * validation, RFC 9207): the `iss` parameter against the issuer recorded from validated
 * metadata, whether or not the server advertises it, compared without normalisation, or
 * against the remote's origin for the 2025-03-26 defaults; an
 * error response from the wrong issuer is refused without repeating what it says.
 */
import { describe, expect, test } from "bun:test";
import { McpmgrError } from "../../src/errors.ts";
import {
  type PendingAuthorization,
  type ServerInfo,
  validateAuthorizationResponse,
} from "../../src/auth/outgoing/oauth-client.ts";

const ISSUER = "https://as.example";
const pending: PendingAuthorization = {
  url: new URL(`${ISSUER}/authorize`),
  state: "the-state",
  codeVerifier: "verifier",
  redirectUri: "http://127.0.0.1:9/callback",
};
const client = { clientId: "c" };

function server(advertised: boolean | undefined, issuerValidated = true): ServerInfo {
  return {
    as: {
      issuer: ISSUER,
      ...(advertised === undefined ? {} : { authorization_response_iss_parameter_supported: advertised }),
    },
    oidc: false,
    issuerValidated,
  };
}

function redirect(params: Record<string, string>): URL {
  const url = new URL(pending.redirectUri);
  for (const [k, v] of Object.entries({ state: pending.state, ...params })) url.searchParams.set(k, v);
  return url;
}

function refusal(run: () => unknown): McpmgrError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(McpmgrError);
    return err as McpmgrError;
  }
  throw new Error("expected a refusal");
}

describe("iss in the authorization response", () => {
  test("advertised and present and equal: accepted", () => {
    const params = validateAuthorizationResponse(server(true), client, pending, redirect({ code: "x", iss: ISSUER }));
    expect(params.get("code")).toBe("x");
  });

  test("advertised and absent: refused", () => {
    const err = refusal(() => validateAuthorizationResponse(server(true), client, pending, redirect({ code: "x" })));
    expect(err.code).toBe("AUTH_SETUP_FAILED");
    expect(err.message).toContain("no issuer");
  });

  test("not advertised and absent: accepted", () => {
    for (const advertised of [false, undefined])
      expect(
        validateAuthorizationResponse(server(advertised), client, pending, redirect({ code: "x" })).get("code"),
      ).toBe("x");
  });

  test("present but another issuer: refused, advertised or not", () => {
    for (const advertised of [true, false, undefined]) {
      const err = refusal(() =>
        validateAuthorizationResponse(
          server(advertised),
          client,
          pending,
          redirect({ code: "x", iss: "https://evil.example" }),
        ),
      );
      expect(err.message).toContain("https://evil.example");
    }
  });

  test("compared as a plain string: a trailing slash or other case is another issuer", () => {
    for (const iss of [`${ISSUER}/`, "HTTPS://AS.EXAMPLE", "https://as.example:443"])
      refusal(() => validateAuthorizationResponse(server(true), client, pending, redirect({ code: "x", iss })));
  });

  test("an error response from the wrong issuer is refused without repeating its text", () => {
    const err = refusal(() =>
      validateAuthorizationResponse(
        server(true),
        client,
        pending,
        redirect({ error: "access_denied", error_description: "click-here-evil", iss: "https://evil.example" }),
      ),
    );
    expect(err.message).not.toContain("click-here-evil");
    expect(err.message).not.toContain("access_denied");
  });

  test("an error response from the right issuer says what the server said", () => {
    const err = refusal(() =>
      validateAuthorizationResponse(
        server(true),
        client,
        pending,
        redirect({ error: "access_denied", error_description: "user said no", iss: ISSUER }),
      ),
    );
    expect(err.message).toContain("access_denied: user said no");
  });

  test("endpoints given by hand record no issuer: iss cannot be checked and is ignored", () => {
    const params = validateAuthorizationResponse(
      server(undefined, false),
      client,
      pending,
      redirect({ code: "x", iss: "https://realm.example/issuer" }),
    );
    expect(params.get("code")).toBe("x");
  });

  test("the 2025-03-26 defaults know their issuer, the remote's origin: another iss is refused", () => {
    const defaults: ServerInfo = { ...server(undefined, false), knownIssuer: [ISSUER, `${ISSUER}/`] };
    for (const iss of [ISSUER, `${ISSUER}/`])
      expect(validateAuthorizationResponse(defaults, client, pending, redirect({ code: "x", iss })).get("code")).toBe(
        "x",
      );
    // Not sent: nothing to compare (no metadata says the server always sends it).
    expect(validateAuthorizationResponse(defaults, client, pending, redirect({ code: "x" })).get("code")).toBe("x");
    const err = refusal(() =>
      validateAuthorizationResponse(defaults, client, pending, redirect({ code: "x", iss: "https://evil.example" })),
    );
    expect(err.message).toContain(`not ${ISSUER};`);
  });

  test("the state must be ours", () => {
    refusal(() =>
      validateAuthorizationResponse(
        server(true),
        client,
        pending,
        redirect({ code: "x", iss: ISSUER, state: "other" }),
      ),
    );
  });
});
