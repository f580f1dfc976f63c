/**
 * How mcpmgr authenticates to a remote MCP server (`--remote-auth*`, `--token-exchange-*`,
 * `--remote-forward-headers*`), as one validated spec. Secrets are read here from their
 * files, in the documented order of precedence; nothing here touches the network.
 */
import { McpmgrError } from "../errors.ts";
import { readCaBundle } from "./ca-bundle.ts";
import { readOptionFile } from "./config-file.ts";
import { isLoopbackHostname } from "./loopback.ts";

type Given = ReadonlySet<string>;
type Env = Readonly<Record<string, string | undefined>>;

export interface OutgoingAuthValues {
  readonly "remote-auth": boolean;
  readonly "remote-auth-issuer"?: string | undefined;
  readonly "remote-auth-authorize-url"?: string | undefined;
  readonly "remote-auth-token-url"?: string | undefined;
  readonly "remote-auth-client-id"?: string | undefined;
  readonly "remote-auth-client-secret"?: string | undefined;
  readonly "remote-auth-client-secret-file"?: string | undefined;
  readonly "remote-auth-bearer-token"?: string | undefined;
  readonly "remote-auth-bearer-token-file"?: string | undefined;
  readonly "remote-auth-callback-port": number;
  readonly "remote-auth-resource"?: string | undefined;
  readonly "remote-auth-scopes"?: readonly string[] | undefined;
  readonly "remote-auth-skip-browser": boolean;
  readonly "remote-auth-timeout": number;
  readonly "remote-forward-headers": readonly { readonly name: string; readonly value: string }[];
  readonly "remote-forward-headers-secret": readonly { readonly key: string; readonly value: string }[];
  readonly "token-exchange-url"?: string | undefined;
  readonly "token-exchange-audience"?: string | undefined;
  readonly "token-exchange-client-id"?: string | undefined;
  readonly "token-exchange-client-secret"?: string | undefined;
  readonly "token-exchange-client-secret-file"?: string | undefined;
  readonly "token-exchange-header-name"?: string | undefined;
  readonly "token-exchange-scopes"?: readonly string[] | undefined;
  readonly "token-exchange-subject-token-type": "access_token" | "id_token";
  readonly "remote-insecure-allow-http": boolean;
  /** Absent where the command has no such option (`proxy stdio`). */
  readonly "thv-ca-bundle"?: string | undefined;
}

export interface OAuthSpec {
  /** OIDC / RFC 8414 discovery from here; or explicit endpoints. Both undefined: discovered from the remote's 401 (RFC 9728). */
  readonly issuer: URL | undefined;
  readonly endpoints: { readonly authorize: URL; readonly token: URL } | undefined;
  /** undefined: dynamic registration (RFC 7591). */
  readonly clientId: string | undefined;
  readonly clientSecret: string | undefined;
  readonly resource: string | undefined;
  /** undefined: openid,profile,email for OIDC issuers, else what the server advertises. */
  readonly scopes: readonly string[] | undefined;
  readonly callbackPort: number;
  readonly skipBrowser: boolean;
  readonly timeoutMs: number;
  /** Started only when the remote answers 401 (`--target-uri URL --remote-auth-client-id ID`). */
  readonly onDemand: boolean;
}

export interface TokenExchangeSpec {
  readonly url: URL;
  readonly audience: string | undefined;
  readonly clientId: string | undefined;
  readonly clientSecret: string | undefined;
  readonly scopes: readonly string[];
  readonly subjectTokenType: "access_token" | "id_token";
  /** The header the exchanged token goes in (Authorization, as Bearer, by default). */
  readonly headerName: string;
}

/** The option that gave the bearer token, which refusals and warnings name. */
type BearerOption = "remote-auth-bearer-token" | "remote-auth-bearer-token-file";
/** The first of the options that asked for OAuth, which refusals and warnings name. */
type OAuthOption = "remote-auth" | "remote-auth-issuer" | "remote-auth-authorize-url" | "remote-auth-client-id";

export interface OutgoingAuthSpec {
  readonly mode:
    | { readonly kind: "none" }
    | { readonly kind: "bearer"; readonly token: string; readonly option: BearerOption }
    | { readonly kind: "oauth"; readonly oauth: OAuthSpec; readonly option: OAuthOption };
  readonly tokenExchange: TokenExchangeSpec | undefined;
  readonly headers: readonly { readonly name: string; readonly value: string }[];
  /** Header name → secret name in the secrets manager (resolved when the proxy starts). */
  readonly secretHeaders: readonly { readonly name: string; readonly secret: string }[];
  /** Extra CAs (PEM, `--thv-ca-bundle`) for the OAuth and token-exchange requests. */
  readonly caBundle: string | undefined;
  /** `--remote-insecure-allow-http`: the credentials may go to a plain http:// remote beyond loopback. */
  readonly insecureAllowHttp: boolean;
}

/** Headers a caller must not set: hop-by-hop (RFC 9110 §7.6.1), framing, and forwarding metadata. */
const refusedHeaders = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
  "content-length",
  "forwarded",
  "x-real-ip",
  "mcp-session-id",
  "mcp-protocol-version",
]);

/** https, or http on loopback only: credentials never cross the network in clear text. */
function secureUrl(option: string, text: string): URL {
  const url = new URL(text);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopbackHostname(url.hostname))) {
    throw new McpmgrError(
      "INVALID_OPTION",
      `--${option} ${url.href}: OAuth endpoints must be https:// (http:// only on loopback)`,
      { hint: "use the https:// URL" },
    );
  }
  return url;
}

/** `setter`: the option that already sets Authorization (a bearer token, OAuth, a token exchange into it). */
function assertHeaderAllowed(option: string, name: string, setter: string | undefined): void {
  const lower = name.toLowerCase();
  if (refusedHeaders.has(lower) || lower.startsWith("x-forwarded-")) {
    throw new McpmgrError(
      "INVALID_OPTION",
      `--${option} ${name}: a hop-by-hop, framing or forwarding header cannot be injected`,
      { hint: "inject application headers only (e.g. X-Api-Key)" },
    );
  }
  if (lower === "authorization" && setter !== undefined) {
    throw new McpmgrError(
      "CONFLICTING_OPTIONS",
      `--${option} Authorization conflicts with --${setter}, which sets it`,
      { hint: "let the authentication option set Authorization" },
    );
  }
}

export function outgoingAuthSpec(values: OutgoingAuthValues, given: Given, env: Env = process.env): OutgoingAuthSpec {
  let mode: OutgoingAuthSpec["mode"] = { kind: "none" };
  // The flag before the file (the documented precedence); the one that gave it is named in refusals.
  const bearerOption: BearerOption =
    values["remote-auth-bearer-token"] !== undefined ? "remote-auth-bearer-token" : "remote-auth-bearer-token-file";
  const bearer =
    values["remote-auth-bearer-token"] ??
    (values["remote-auth-bearer-token-file"]
      ? readOptionFile("remote-auth-bearer-token-file", values["remote-auth-bearer-token-file"])
      : undefined);
  const wantsOAuth =
    values["remote-auth"] ||
    values["remote-auth-issuer"] !== undefined ||
    values["remote-auth-authorize-url"] !== undefined;
  if (bearer !== undefined) {
    if (!/^[\x21-\x7e]+$/.test(bearer))
      throw new McpmgrError(
        "INVALID_OPTION",
        `--${bearerOption}: the bearer token contains spaces or control characters`,
        {
          hint:
            bearerOption === "remote-auth-bearer-token-file" ? "put only the token in the file" : "give only the token",
        },
      );
    mode = { kind: "bearer", token: bearer, option: bearerOption };
  } else if (wantsOAuth || values["remote-auth-client-id"] !== undefined) {
    // Precedence (spec): the flag, then the file, then MCPMGR_REMOTE_OAUTH_CLIENT_SECRET.
    const clientSecret =
      values["remote-auth-client-secret"] ??
      (values["remote-auth-client-secret-file"]
        ? readOptionFile("remote-auth-client-secret-file", values["remote-auth-client-secret-file"])
        : undefined) ??
      (env.MCPMGR_REMOTE_OAUTH_CLIENT_SECRET || undefined);
    const authorize = values["remote-auth-authorize-url"];
    const token = values["remote-auth-token-url"];
    const option = (["remote-auth", "remote-auth-issuer", "remote-auth-authorize-url"] as const).find(
      (name) => values[name] !== undefined && values[name] !== false,
    );
    mode = {
      kind: "oauth",
      option: option ?? "remote-auth-client-id",
      oauth: Object.freeze({
        issuer: values["remote-auth-issuer"]
          ? secureUrl("remote-auth-issuer", values["remote-auth-issuer"])
          : undefined,
        endpoints:
          authorize && token
            ? {
                authorize: secureUrl("remote-auth-authorize-url", authorize),
                token: secureUrl("remote-auth-token-url", token),
              }
            : undefined,
        clientId: values["remote-auth-client-id"],
        clientSecret,
        resource: values["remote-auth-resource"],
        scopes: values["remote-auth-scopes"] ? [...values["remote-auth-scopes"]] : undefined,
        callbackPort: values["remote-auth-callback-port"],
        skipBrowser: values["remote-auth-skip-browser"],
        timeoutMs: values["remote-auth-timeout"],
        onDemand: !wantsOAuth,
      }),
    };
  } else {
    for (const name of [
      "remote-auth-client-secret",
      "remote-auth-client-secret-file",
      "remote-auth-resource",
      "remote-auth-scopes",
    ]) {
      if (given.has(name))
        throw new McpmgrError("MISSING_OPTION", `--${name} needs --remote-auth (or --remote-auth-client-id)`, {
          hint: "add --remote-auth",
        });
    }
  }
  let tokenExchange: TokenExchangeSpec | undefined;
  if (values["token-exchange-url"]) {
    tokenExchange = Object.freeze({
      url: secureUrl("token-exchange-url", values["token-exchange-url"]),
      audience: values["token-exchange-audience"],
      clientId: values["token-exchange-client-id"],
      clientSecret:
        values["token-exchange-client-secret"] ??
        (values["token-exchange-client-secret-file"]
          ? readOptionFile("token-exchange-client-secret-file", values["token-exchange-client-secret-file"])
          : undefined),
      scopes: values["token-exchange-scopes"] ? [...values["token-exchange-scopes"]] : [],
      subjectTokenType: values["token-exchange-subject-token-type"],
      headerName: values["token-exchange-header-name"] ?? "Authorization",
    });
    if (mode.kind !== "none") {
      throw new McpmgrError(
        "CONFLICTING_OPTIONS",
        `--token-exchange-url exchanges the client's token; it cannot be combined with --${mode.option}`,
        { hint: "choose one way to authenticate to the remote server" },
      );
    }
  }
  if (tokenExchange && tokenExchange.headerName.toLowerCase() !== "authorization") {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(tokenExchange.headerName))
      throw new McpmgrError(
        "INVALID_OPTION",
        `--token-exchange-header-name ${JSON.stringify(tokenExchange.headerName)}: not a valid header name`,
        { hint: "e.g. X-Upstream-Token" },
      );
    assertHeaderAllowed("token-exchange-header-name", tokenExchange.headerName, undefined);
    if (["cookie", "mcp-session-id"].includes(tokenExchange.headerName.toLowerCase()))
      throw new McpmgrError(
        "INVALID_OPTION",
        `--token-exchange-header-name ${tokenExchange.headerName}: that header has another meaning`,
        { hint: "e.g. X-Upstream-Token" },
      );
  }
  const setsAuthorization =
    mode.kind !== "none"
      ? mode.option
      : tokenExchange !== undefined && tokenExchange.headerName.toLowerCase() === "authorization"
        ? "token-exchange-url"
        : undefined;
  for (const header of values["remote-forward-headers"])
    assertHeaderAllowed("remote-forward-headers", header.name, setsAuthorization);
  for (const header of values["remote-forward-headers-secret"]) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(header.key))
      throw new McpmgrError(
        "INVALID_OPTION",
        `--remote-forward-headers-secret ${header.key}: not a valid header name`,
        { hint: "use Name=secret-name" },
      );
    assertHeaderAllowed("remote-forward-headers-secret", header.key, setsAuthorization);
  }
  return Object.freeze({
    mode,
    tokenExchange,
    headers: values["remote-forward-headers"].map((h) => ({ name: h.name, value: h.value })),
    secretHeaders: values["remote-forward-headers-secret"].map((h) => ({ name: h.key, secret: h.value })),
    caBundle: readCaBundle(values["thv-ca-bundle"]),
    insecureAllowHttp: values["remote-insecure-allow-http"] === true,
  });
}

/**
 * --token-exchange-url trades the client's token for one the upstream accepts: without incoming
 * authentication (`--oidc-*`) there is no client token to trade. A rule of `proxy` and of `run` with a remote.
 */
export function assertTokenExchangeHasCaller(outgoingAuth: OutgoingAuthSpec, incomingAuth: boolean): void {
  if (outgoingAuth.tokenExchange && !incomingAuth) {
    throw new McpmgrError(
      "MISSING_OPTION",
      "--token-exchange-url exchanges the client's token, so it needs incoming authentication",
      { hint: "add --oidc-issuer (and --oidc-audience)" },
    );
  }
}

/** Which of mcpmgr's credentials `outgoingAuth` sends to the remote itself, by the option that gives it. */
function credentialSent(outgoingAuth: OutgoingAuthSpec): string | undefined {
  if (outgoingAuth.mode.kind === "bearer") return `the bearer token (--${outgoingAuth.mode.option})`;
  if (outgoingAuth.mode.kind === "oauth") return `the OAuth access token (--${outgoingAuth.mode.option})`;
  if (outgoingAuth.tokenExchange) return "the exchanged token (--token-exchange-url)";
  const secret = outgoingAuth.secretHeaders[0];
  if (secret !== undefined) return `the secret header ${secret.name} (--remote-forward-headers-secret)`;
  const authorization = outgoingAuth.headers.find((header) => header.name.toLowerCase() === "authorization");
  if (authorization !== undefined) return "the Authorization header (--remote-forward-headers)";
  return undefined;
}

/** What mcpmgr would send `target` in clear text: its credentials, to a plain http:// remote beyond loopback. */
function sentInClear(outgoingAuth: OutgoingAuthSpec, target: URL): string | undefined {
  if (target.protocol !== "http:" || isLoopbackHostname(target.hostname)) return undefined;
  return credentialSent(outgoingAuth);
}

/**
 * mcpmgr's own credentials for a remote go to its MCP endpoint over https:// only (http:// on loopback),
 * as those for the OAuth endpoints do: a plain http:// remote elsewhere would get them in clear text, for
 * everyone on the way to read. `--remote-insecure-allow-http` is the deliberate way out (a sidecar on a
 * private or container network), announced by plainHttpWarning at every start. A rule of `run` with a
 * remote, `proxy` and `proxy stdio`.
 */
export function assertCredentialsOverHttps(outgoingAuth: OutgoingAuthSpec, target: URL): void {
  if (outgoingAuth.insecureAllowHttp) return;
  const what = sentInClear(outgoingAuth, target);
  if (what === undefined) return;
  throw new McpmgrError(
    "INVALID_OPTION",
    `${target.origin} is plain http://: mcpmgr sends ${what} over https:// only (http:// only on loopback)`,
    {
      hint: "use the server's https:// URL, or reach it through a tunnel on loopback; only on a network you trust, --remote-insecure-allow-http sends it in clear text",
    },
  );
}

/** Words every plain-http warning has, which `run`, `start` and `restart` show from a supervisor's log. */
export const PLAIN_HTTP_MARKER = "in clear text (--remote-insecure-allow-http)";

/**
 * The one line said at the start when --remote-insecure-allow-http lets a credential go to a plain
 * http:// remote beyond loopback: which credential (by its option, never its value) and to which origin.
 */
export function plainHttpWarning(outgoingAuth: OutgoingAuthSpec, target: URL): string | undefined {
  if (!outgoingAuth.insecureAllowHttp) return undefined;
  const what = sentInClear(outgoingAuth, target);
  return what === undefined ? undefined : `sending ${what} to ${target.origin} over plain http:// ${PLAIN_HTTP_MARKER}`;
}
