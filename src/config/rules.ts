/**
 * Rules between options (exclusive pairs, options that need another). They run after every
 * value has parsed, so the messages can name options without repeating value errors.
 */
import { McpmgrError } from "../errors.ts";

export type Given = ReadonlySet<string>;

function assertNotBoth(given: Given, a: string, b: string, hint: string): void {
  if (given.has(a) && given.has(b)) {
    throw new McpmgrError("CONFLICTING_OPTIONS", `--${a} and --${b} cannot be used together`, { hint });
  }
}

function assertRequires(given: Given, option: string, needed: string, hint?: string): void {
  if (given.has(option) && !given.has(needed)) {
    throw new McpmgrError("MISSING_OPTION", `--${option} needs --${needed}`, { hint: hint ?? `add --${needed}` });
  }
}

/** Options shared by `run` and `proxy` whose combinations are invalid whatever the command. */
export function checkOutgoingAuthRules(given: Given): void {
  assertNotBoth(
    given,
    "remote-auth-issuer",
    "remote-auth-authorize-url",
    "use --remote-auth-issuer for OIDC discovery, or --remote-auth-authorize-url with --remote-auth-token-url",
  );
  assertRequires(given, "remote-auth-authorize-url", "remote-auth-token-url");
  assertRequires(given, "remote-auth-token-url", "remote-auth-authorize-url");
  assertNotBoth(
    given,
    "remote-auth-bearer-token",
    "remote-auth-bearer-token-file",
    "give the token once, preferably as a file",
  );
  // Everything that only means something to the OAuth flow would be silently ignored next to a static token.
  for (const oauth of [
    "remote-auth",
    "remote-auth-issuer",
    "remote-auth-authorize-url",
    "remote-auth-client-id",
    "remote-auth-client-secret",
    "remote-auth-client-secret-file",
    "remote-auth-resource",
    "remote-auth-scopes",
  ]) {
    for (const bearer of ["remote-auth-bearer-token", "remote-auth-bearer-token-file"]) {
      assertNotBoth(
        given,
        oauth,
        bearer,
        "a static bearer token replaces the OAuth flow and its client credentials; choose one",
      );
    }
  }
  assertNotBoth(
    given,
    "token-exchange-client-secret",
    "token-exchange-client-secret-file",
    "give the secret once, preferably as a file",
  );
  for (const secret of ["token-exchange-client-secret", "token-exchange-client-secret-file"]) {
    assertRequires(
      given,
      secret,
      "token-exchange-client-id",
      "the secret authenticates the client named by --token-exchange-client-id",
    );
  }
  for (const name of given) {
    if (name.startsWith("token-exchange-") && name !== "token-exchange-url") {
      assertRequires(given, name, "token-exchange-url", "token exchange is enabled by --token-exchange-url");
    }
  }
}
