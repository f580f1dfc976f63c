/**
 * mcpmgr's credentials towards a remote MCP server, assembled before the proxy serves:
 * injected headers (literal and from the secrets store), then one token source (a static
 * bearer token, the OAuth flow, or token exchange of the client's token), all attached by
 * the authenticated fetch — to the MCP endpoint only. The parts are auth/outgoing and
 * proxy/authenticated-fetch.ts; the OAuth and token-exchange modules are loaded only when
 * configured (the OAuth client is the heaviest part of mcpmgr).
 */
import type { TokenSource } from "../auth/outgoing/token-source.ts";
import { staticBearer } from "../auth/outgoing/token-source.ts";
import { cappedAnswers } from "../auth/capped-fetch.ts";
import { trustingFetch } from "../auth/trusted-fetch.ts";
import { type OutgoingAuthSpec, plainHttpWarning } from "../config/outgoing-auth-spec.ts";
import { McpmgrError } from "../errors.ts";
import { authenticatedFetch, type UpstreamFetch } from "../proxy/authenticated-fetch.ts";
import { collectingRedactor, learningRedactor, redactor } from "../secrets/redact.ts";
import { isCredentialHeader } from "../secrets/credential-header.ts";
import { defaultUpstreamClient } from "../proxy/upstream/client.ts";
import type { WorkloadContext } from "./context.ts";

/** Whether mcpmgr adds anything of its own to the requests it forwards to `spec`'s remote. */
function addsCredentials(spec: OutgoingAuthSpec): boolean {
  return (
    spec.mode.kind !== "none" ||
    spec.tokenExchange !== undefined ||
    spec.headers.length > 0 ||
    spec.secretHeaders.length > 0
  );
}

/** The fetch for the upstream, or undefined when mcpmgr adds nothing. */
export async function outgoingAuthentication(
  spec: OutgoingAuthSpec,
  target: URL,
  name: string,
  ctx: WorkloadContext,
  /** Aborted when the start is given up: a login waiting for the browser ends at once. */
  signal?: AbortSignal,
  /** What sends the requests (mcpmgr's own client; `proxy stdio NAME` gives the local listeners' one). */
  upstream: UpstreamFetch = defaultUpstreamClient().fetch,
): Promise<UpstreamFetch | undefined> {
  return (await outgoingCredentials(spec, target, name, ctx, signal, upstream)).fetch;
}

/**
 * The same, with a redactor of the secret values it sends (the secrets store's header values, a
 * static bearer token, the OAuth tokens of `--remote-auth` and the tokens of token exchange, learned
 * as each is obtained): a
 * remote that echoes its request headers (a debugging tool, an error page) would otherwise put them
 * in clear into audit data, which redacts a launched server's secrets only.
 */
export async function outgoingCredentials(
  spec: OutgoingAuthSpec,
  target: URL,
  name: string,
  ctx: WorkloadContext,
  signal?: AbortSignal,
  upstream: UpstreamFetch = defaultUpstreamClient().fetch,
): Promise<{ fetch: UpstreamFetch | undefined; redact: ((text: string) => string) | undefined }> {
  const secretValues: string[] = [];
  if (!addsCredentials(spec)) return { fetch: undefined, redact: undefined };
  // Said at every start, before anything is sent: the log shows it was chosen, and since when.
  const inClear = plainHttpWarning(spec, target);
  if (inClear !== undefined) ctx.log.warn(`${name}: ${inClear}`);
  const headers = [...spec.headers];
  // A plain header that is a credential by its name or form (`--remote-forward-headers X-Api-Key=…`, which
  // only a foreground run takes: a recorded one is refused) is as secret as one from the store.
  for (const { name: header, value } of spec.headers)
    if (isCredentialHeader(header, value)) secretValues.push(...credentialForms(value));
  for (const { name: header, secret } of spec.secretHeaders) {
    const value = (
      await ctx.secrets().resolveSecret(secret, `--remote-forward-headers-secret ${header}=${secret}`)
    ).reveal();
    if (/[\r\n\0]/.test(value)) {
      throw new McpmgrError(
        "INVALID_OPTION",
        `--remote-forward-headers-secret ${header}=${secret}: the secret's value contains a line break`,
        { hint: `store a one-line value with 'mcpmgr secret set ${secret}'` },
      );
    }
    headers.push({ name: header, value });
    secretValues.push(...credentialForms(value));
  }
  let source: TokenSource | undefined;
  let headerName: string | undefined;
  /** A redactor that learns tokens while the workload runs (OAuth renewals, exchanged tokens). */
  let learner: { redact: (text: string) => string } | undefined;
  // mcpmgr's own requests (OAuth, token exchange) trust --thv-ca-bundle; the forwarded traffic is the remote's business.
  const http = cappedAnswers(trustingFetch(spec.caBundle));
  if (spec.mode.kind === "bearer") {
    secretValues.push(spec.mode.token);
    source = staticBearer(spec.mode.token, (status) =>
      ctx.log.warn(`${name}: the remote server refused the bearer token (HTTP ${status})`),
    );
  } else if (spec.mode.kind === "oauth") {
    const oauth = spec.mode.oauth;
    const named = {
      info: (text: string) => ctx.log.info(`${name}: ${text}`),
      warn: (text: string) => ctx.log.warn(`${name}: ${text}`),
    };
    const [
      { oauthTokenSource },
      { lockedRenewals, secretsGrantStores },
      { callbackLogin, oauthLockDir, readyOAuthLockDir },
    ] = await Promise.all([
      import("../auth/outgoing/oauth-token-source.ts"),
      import("../auth/outgoing/grant-store.ts"),
      import("./oauth-callback.ts"),
    ]);
    // A lock folder in another user's reach is refused at the start, not at the first login or refresh.
    oauthLockDir(ctx.env);
    const learning = learningRedactor(secretValues);
    learner = learning;
    source = await oauthTokenSource({
      spec: oauth,
      target,
      http,
      log: named,
      login: callbackLogin(oauth, ctx, signal),
      storeFor: secretsGrantStores(() => ctx.secrets(), named),
      // The lock folder is checked at each refresh (another user may have made it since the start).
      exclusive: lockedRenewals(() => readyOAuthLockDir(ctx.env), oauth.timeoutMs + 90_000),
      // A background workload's logins happen at its start, while `run`/`start`/`restart` shows the URL.
      deferLoginsTo: ctx.background
        ? `run 'mcpmgr restart ${name}' to log in (restart shows the login URL)`
        : undefined,
      // Each renewal changes them: the one about to be sent is redacted from then on, the last ones for a while.
      onTokens: (tokens) =>
        learning.learn(tokens.refreshToken ? [tokens.accessToken, tokens.refreshToken] : [tokens.accessToken]),
    });
  } else if (spec.tokenExchange) {
    const { tokenExchangeSource } = await import("../auth/outgoing/token-exchange.ts");
    // One token per client user, many in use at once: each is learned at each use, so the ones in use stay redacted.
    const collecting = collectingRedactor(secretValues);
    learner = collecting;
    source = tokenExchangeSource(spec.tokenExchange, {
      onError: (text) => ctx.log.warn(`${name}: ${text}`),
      fetch: http,
      onToken: collecting.add,
    });
    headerName = spec.tokenExchange.headerName;
  }
  const redact = learner?.redact ?? (secretValues.length > 0 ? redactor(secretValues) : undefined);
  if (source === undefined && headers.length === 0) return { fetch: undefined, redact };
  return {
    fetch: authenticatedFetch(upstream, {
      endpoint: target,
      headers,
      ...(source ? { source } : {}),
      ...(headerName ? { headerName } : {}),
    }),
    redact,
  };
}

/**
 * A header value as a remote may echo it: whole, its credentials without the scheme (`Basic …`,
 * `Token …`: "invalid token: …" error pages quote just that), and a Basic credential decoded
 * (`user:password`) and its password, which a server that logs who called may print.
 */
function credentialForms(value: string): string[] {
  const forms = [value];
  const scheme = /^([A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*) +(\S+)$/.exec(value.trim());
  if (scheme === null) return forms;
  const credentials = scheme[2] as string;
  forms.push(credentials);
  if (scheme[1]?.toLowerCase() === "basic" && /^[A-Za-z0-9+/]+=*$/.test(credentials)) {
    const decoded = Buffer.from(credentials, "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    if (colon > 0 && !decoded.includes("\uFFFD")) forms.push(decoded, decoded.slice(colon + 1));
  }
  return forms;
}
