/**
 * The `--oidc-*` options (and their companions) as one validated spec for protecting the
 * proxy's endpoint, or undefined when none is given. Checks that need no network happen
 * here: which options go together, http:// only with --oidc-insecure-allow-http, files
 * readable. Network checks (discovery, private addresses) happen when the verifier starts.
 */
import { McpmgrError } from "../errors.ts";
import { readCaBundle } from "./ca-bundle.ts";
import { readOptionFile } from "./config-file.ts";

type Given = ReadonlySet<string>;

export interface IncomingAuthValues {
  readonly "oidc-issuer"?: string | undefined;
  readonly "oidc-audience"?: string | undefined;
  readonly "oidc-client-id"?: string | undefined;
  readonly "oidc-client-secret"?: string | undefined;
  readonly "oidc-client-secret-file"?: string | undefined;
  readonly "oidc-introspection-url"?: string | undefined;
  readonly "oidc-jwks-url"?: string | undefined;
  readonly "oidc-scopes"?: readonly string[] | undefined;
  readonly "oidc-insecure-allow-http": boolean;
  readonly "jwks-allow-private-ip": boolean;
  readonly "jwks-auth-token-file"?: string | undefined;
  readonly "thv-ca-bundle"?: string | undefined;
  readonly "resource-url"?: string | undefined;
}

export interface IncomingAuthSpec {
  readonly issuer: URL;
  /** Required `aud`; undefined: any audience (the issuer is still checked). */
  readonly audience: string | undefined;
  /** Where signing keys come from; undefined: discovered from the issuer. */
  readonly jwksUrl: URL | undefined;
  /** RFC 7662 endpoint for opaque tokens, with the proxy's client credentials. */
  readonly introspection:
    | { readonly url: URL; readonly clientId: string; readonly clientSecret: string | undefined }
    | undefined;
  /** Advertised in the RFC 9728 document and the challenge (default openid); not enforced. */
  readonly scopesSupported: readonly string[];
  readonly allowHttp: boolean;
  readonly allowPrivateIp: boolean;
  /** Sent as `Authorization: Bearer` when fetching discovery documents and JWKS. */
  readonly fetchToken: string | undefined;
  /** Extra trusted CA certificates (PEM) for those fetches (`--thv-ca-bundle`, which also serves outgoing auth). */
  readonly caBundle: string | undefined;
  /** The resource identifier advertised; undefined: the proxy endpoint's own URL. */
  readonly resourceUrl: URL | undefined;
}

const companions = [
  "oidc-audience",
  "oidc-client-id",
  "oidc-client-secret",
  "oidc-client-secret-file",
  "oidc-introspection-url",
  "oidc-jwks-url",
  "oidc-scopes",
  "oidc-insecure-allow-http",
  "jwks-allow-private-ip",
  "jwks-auth-token-file",
  "resource-url",
];

function assertSecure(option: string, url: URL, allowHttp: boolean): void {
  if (url.protocol === "https:" || allowHttp) return;
  throw new McpmgrError("INVALID_OPTION", `--${option} ${url.href}: http:// is refused for token validation`, {
    hint: "use https://, or --oidc-insecure-allow-http for local development only",
  });
}

export function incomingAuthSpec(values: IncomingAuthValues, given: Given): IncomingAuthSpec | undefined {
  const issuerText = values["oidc-issuer"];
  if (issuerText === undefined) {
    // Booleans given as false mean nothing; any other companion without an issuer is a mistake.
    const stray = companions.find(
      (name) => given.has(name) && (values as unknown as Record<string, unknown>)[name] !== false,
    );
    if (stray)
      throw new McpmgrError("MISSING_OPTION", `--${stray} needs --oidc-issuer`, {
        hint: "add --oidc-issuer URL (the authorization server whose tokens the proxy accepts)",
      });
    // Given but unused here (a local server, a gateway): still a file named by an option, checked
    // now rather than recorded with a typo for whatever option comes to use it.
    readCaBundle(values["thv-ca-bundle"]);
    return undefined;
  }
  const allowHttp = values["oidc-insecure-allow-http"];
  const issuer = new URL(issuerText);
  assertSecure("oidc-issuer", issuer, allowHttp);
  const jwksUrl = values["oidc-jwks-url"] ? new URL(values["oidc-jwks-url"]) : undefined;
  if (jwksUrl) assertSecure("oidc-jwks-url", jwksUrl, allowHttp);
  let introspection: IncomingAuthSpec["introspection"];
  if (values["oidc-introspection-url"]) {
    const url = new URL(values["oidc-introspection-url"]);
    assertSecure("oidc-introspection-url", url, allowHttp);
    const clientId = values["oidc-client-id"];
    if (clientId === undefined)
      throw new McpmgrError("MISSING_OPTION", "--oidc-introspection-url needs --oidc-client-id", {
        hint: "introspection calls authenticate as the proxy's client",
      });
    if (given.has("oidc-client-secret") && given.has("oidc-client-secret-file")) {
      throw new McpmgrError(
        "CONFLICTING_OPTIONS",
        "--oidc-client-secret and --oidc-client-secret-file cannot be used together",
        { hint: "give the secret once, preferably as a file" },
      );
    }
    const secretFile = values["oidc-client-secret-file"];
    const clientSecret = secretFile
      ? readOptionFile("oidc-client-secret-file", secretFile)
      : values["oidc-client-secret"];
    introspection = { url, clientId, clientSecret };
  } else {
    for (const option of ["oidc-client-secret", "oidc-client-secret-file"]) {
      if (!given.has(option)) continue;
      throw new McpmgrError("MISSING_OPTION", `--${option} is only used with --oidc-introspection-url`, {
        hint: "add --oidc-introspection-url, or leave the secret out",
      });
    }
  }
  const scopes = values["oidc-scopes"];
  return Object.freeze({
    issuer,
    audience: values["oidc-audience"],
    jwksUrl,
    introspection,
    scopesSupported: scopes && scopes.length > 0 ? [...scopes] : ["openid"],
    allowHttp,
    allowPrivateIp: values["jwks-allow-private-ip"],
    fetchToken: values["jwks-auth-token-file"]
      ? readOptionFile("jwks-auth-token-file", values["jwks-auth-token-file"])
      : undefined,
    caBundle: readCaBundle(values["thv-ca-bundle"]),
    resourceUrl: values["resource-url"] ? new URL(values["resource-url"]) : undefined,
  });
}
