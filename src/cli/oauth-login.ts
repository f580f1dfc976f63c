/**
 * The OAuth login and token upkeep behind `--remote-auth` (and auto-detection): which
 * authorization server, which client (given, stored, or registered with RFC 7591), tokens
 * from the secrets store (so a restart needs no browser), refreshed before they expire and
 * when the remote refuses them, and an interactive login — the local callback server, the
 * browser (opened without a shell) or the printed URL — when nothing else works. Logins
 * are serialised across mcpmgr processes by a lock, since they share the callback port.
 */
import { createHash } from "node:crypto";
import { homedir } from "node:os";
import { join } from "node:path";
import type { OAuthSpec } from "../config/outgoing-auth-spec.ts";
import { McpmgrError } from "../errors.ts";
import {
  assertServerEndpoints,
  challengeScopes,
  completeAuthorization,
  discoverFromChallenge,
  discoverFromRemote,
  discoverServer,
  explicitServer,
  refreshTokens,
  RefreshFailed,
  registerClient,
  requestedScopes,
  startAuthorization,
  type ChallengeDiscovery,
  type ClientInfo,
  type ServerInfo,
  type TokenSet,
} from "../auth/outgoing/oauth-client.ts";
import type { TokenSource } from "../auth/outgoing/token-source.ts";
import type { Fetch } from "../auth/trusted-fetch.ts";
import { serve } from "../proxy/serve.ts";
import { createSecretManager } from "../secrets/manager.ts";
import { ensureDir } from "../state/atomic-file.ts";
import { withLock } from "../state/lock.ts";
import { resolvePaths } from "../state/paths.ts";
import { log } from "./output.ts";

/** The line `run` looks for in a supervisor's log to show the user where to log in. */
export const LOGIN_URL_MARKER = "Authorize mcpmgr at:";
const REFRESH_EARLY_MS = 60_000;

/** Refresh a minute early, or at half-life for tokens that live less than two minutes. */
function earlyMs(tokens: TokenSet): number {
  return tokens.lifetimeMs === undefined ? REFRESH_EARLY_MS : Math.min(REFRESH_EARLY_MS, tokens.lifetimeMs / 2);
}

interface Stored {
  lifetimeMs?: number;
  clientId?: string;
  clientSecret?: string;
  authMethod?: string;
  refreshToken?: string;
  accessToken?: string;
  expiresAt?: number;
}

/** Tokens and registered clients live in the secrets store; without it, only in memory. */
function tokenStore(key: string) {
  const secrets = createSecretManager({ dir: resolvePaths().dataDir, env: process.env });
  let warned = false;
  return {
    async load(): Promise<Stored> {
      try {
        const secret = await secrets.provider.get(key);
        return secret ? (JSON.parse(secret.reveal()) as Stored) : {};
      } catch (err) {
        log.warn(
          `stored OAuth tokens could not be read (${err instanceof Error ? err.message : String(err)}); logging in again`,
        );
        return {};
      }
    },
    async save(value: Stored): Promise<void> {
      try {
        await secrets.provider.set(key, JSON.stringify(value));
      } catch (err) {
        if (!warned)
          log.warn(
            `OAuth tokens are kept in memory only (the secrets store is unavailable: ${err instanceof Error ? err.message : String(err)}); a restart will ask to log in again`,
          );
        warned = true;
      }
    },
  };
}

function openBrowser(url: string): void {
  const command =
    process.platform === "darwin"
      ? ["open", url]
      : process.platform === "win32"
        ? ["rundll32", "url.dll,FileProtocolHandler", url]
        : ["xdg-open", url];
  try {
    const child = Bun.spawn(command, { stdin: "ignore", stdout: "ignore", stderr: "ignore" });
    child.unref();
  } catch {
    // No browser here: the printed URL is the way.
  }
}

const page = (title: string, text: string) =>
  new Response(`<!doctype html><meta charset="utf-8"><title>${title}</title><p>${text}</p>`, {
    headers: { "content-type": "text/html; charset=utf-8" },
  });

/** The callback server; a busy port names the option that moves it. */
function serveCallback(
  port: number,
  options: Omit<Parameters<typeof serve>[0], "host" | "port">,
): ReturnType<typeof serve> {
  try {
    return serve({ host: "127.0.0.1", port, ...options });
  } catch (err) {
    if (err instanceof McpmgrError && err.code === "PORT_IN_USE") {
      throw new McpmgrError(
        "PORT_IN_USE",
        `the OAuth callback port ${port} on 127.0.0.1 is in use by another program`,
        { hint: "choose another with --remote-auth-callback-port (the client's redirect URI must allow it)" },
      );
    }
    throw err;
  }
}

/** One interactive login: callback server up, URL shown, wait for the redirect (or the timeout). */
async function interactiveLogin(
  server: ServerInfo,
  client: ClientInfo,
  spec: OAuthSpec,
  scopes: readonly string[],
  resource: string | undefined,
): Promise<TokenSet> {
  // Per user and machine-wide (not per MCPMGR_HOME: the port is the machine's), in the
  // user's own runtime or cache directory rather than the shared /tmp.
  const lockDir = join(process.env.XDG_RUNTIME_DIR || join(homedir(), ".cache"), "mcpmgr");
  await ensureDir(lockDir);
  const lockPath = join(lockDir, `oauth-callback-${spec.callbackPort}.lock`);
  // Another mcpmgr logging in holds the port: wait for it rather than fail or steal its callback.
  return withLock(
    lockPath,
    async () => {
      const redirectUri = `http://127.0.0.1:${spec.callbackPort}/callback`;
      const pending = await startAuthorization(server, client, { redirectUri, scopes, resource });
      let settle!: (result: { url: URL } | { error: string }) => void;
      const arrived = new Promise<{ url: URL } | { error: string }>((resolve) => (settle = resolve));
      const callback = serveCallback(spec.callbackPort, {
        handler: (req) => {
          const url = new URL(req.url);
          if (url.pathname !== "/callback") return new Response("Not Found", { status: 404 });
          // Someone else's (or a stale) redirect: not ours, and not an answer.
          if (url.searchParams.get("state") !== pending.state)
            return page("mcpmgr", "This login link is not the one mcpmgr is waiting for.");
          const error = url.searchParams.get("error");
          settle(
            error
              ? {
                  error: `${error}${url.searchParams.get("error_description") ? `: ${url.searchParams.get("error_description")}` : ""}`,
                }
              : { url },
          );
          return error
            ? page("mcpmgr login failed", "The authorization server refused the login. You can close this window.")
            : page("mcpmgr login complete", "mcpmgr is authorized. You can close this window.");
        },
      });
      try {
        log.info(`${LOGIN_URL_MARKER}`);
        // On its own line, so it can be copied (and found by `run` in a supervisor's log).
        process.stderr.write(`${pending.url.href}\n`);
        if (!spec.skipBrowser) openBrowser(pending.url.href);
        const timer = new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), spec.timeoutMs));
        const result = await Promise.race([arrived, timer]);
        if (result === "timeout") {
          throw new McpmgrError(
            "AUTH_SETUP_FAILED",
            `the OAuth login did not complete within ${Math.round(spec.timeoutMs / 1000)} s`,
            {
              hint: "open the printed URL sooner, or give more time with --remote-auth-timeout (e.g. 2m)",
            },
          );
        }
        if ("error" in result)
          throw new McpmgrError("AUTH_SETUP_FAILED", `the OAuth login was refused (${result.error})`, {
            hint: "check the account and the client's permissions, then try again",
          });
        return await completeAuthorization(server, client, pending, result.url, resource);
      } finally {
        await callback.shutdown();
      }
    },
    // A holder that died is detected by its pid; a live one may wait for its user for long.
    { timeoutMs: spec.timeoutMs + 60_000, staleMs: 24 * 3_600_000 },
  ).catch((err: unknown) => {
    if (err instanceof McpmgrError && err.code === "STATE_LOCKED") {
      throw new McpmgrError("AUTH_SETUP_FAILED", `another mcpmgr login is using callback port ${spec.callbackPort}`, {
        hint: "finish that login first, or give this one another --remote-auth-callback-port",
      });
    }
    throw err;
  });
}

interface Session {
  readonly issuer: string;
  /** A valid access token: from memory, the store, a refresh, or a login. */
  current(): Promise<TokenSet>;
  /** Forget the access token (the remote refused it). */
  expire(refused: string): void;
  /** Log in again asking for more scopes (RFC 6750 insufficient_scope); false when already tried. */
  stepUp(scopes: readonly string[]): Promise<boolean>;
}

/** Everything about one authorization server, client and resource: discovery done, client known, tokens kept. */
async function openSession(
  spec: OAuthSpec,
  target: URL,
  name: string,
  found: ChallengeDiscovery | undefined,
  http: Fetch | undefined,
): Promise<Session> {
  let server: ServerInfo;
  if (spec.endpoints) server = explicitServer(spec.endpoints.authorize, spec.endpoints.token, http);
  else if (spec.issuer) server = await discoverServer(spec.issuer, { fetch: http });
  else if (found) {
    log.info(`${name}: the remote server asks for OAuth; its authorization server is ${found.issuer.href}`);
    server = await discoverServer(found.issuer, { legacyDefaults: found.legacy === true, fetch: http });
  } else throw new McpmgrError("INTERNAL", "no authorization server to log in to");
  // Whatever discovery returned is checked like every URL the remote chose: scheme and address.
  await assertServerEndpoints(
    server,
    target,
    found !== undefined && spec.issuer === undefined && spec.endpoints === undefined,
  );
  // RFC 8707 / MCP: the resource is the remote server itself unless told otherwise.
  const resource = spec.resource ?? found?.resource ?? `${target.origin}${target.pathname}`;
  let scopes = requestedScopes(spec.scopes, found, server);
  // The target and the redirect URI are part of the key: tokens are never offered to another
  // server, and a client registered for another callback port is not reused.
  const key = `oauth-${createHash("sha256")
    .update(
      [
        server.as.issuer,
        spec.clientId ?? "(registered)",
        resource,
        `${target.origin}${target.pathname}`,
        spec.callbackPort,
      ].join("\n"),
    )
    .digest("hex")
    .slice(0, 32)}`;
  const store = tokenStore(key);
  const stored = await store.load();

  let client: ClientInfo;
  if (spec.clientId !== undefined)
    client = {
      clientId: spec.clientId,
      ...(spec.clientSecret !== undefined ? { clientSecret: spec.clientSecret } : {}),
    };
  else if (stored.clientId !== undefined)
    client = { clientId: stored.clientId, clientSecret: stored.clientSecret, authMethod: stored.authMethod };
  else {
    client = await registerClient(server, `http://127.0.0.1:${spec.callbackPort}/callback`);
    log.info(`${name}: registered mcpmgr as OAuth client ${client.clientId} (RFC 7591)`);
  }

  const fromStore = (value: Stored): TokenSet | undefined =>
    value.accessToken
      ? {
          accessToken: value.accessToken,
          refreshToken: value.refreshToken,
          expiresAt: value.expiresAt,
          lifetimeMs: value.lifetimeMs,
        }
      : undefined;
  let tokens: TokenSet | undefined = fromStore(stored);
  const persist = (next: TokenSet) =>
    store.save({
      ...(spec.clientId === undefined
        ? {
            clientId: client.clientId,
            ...(client.clientSecret ? { clientSecret: client.clientSecret } : {}),
            ...(client.authMethod ? { authMethod: client.authMethod } : {}),
          }
        : {}),
      accessToken: next.accessToken,
      ...(next.refreshToken ? { refreshToken: next.refreshToken } : {}),
      ...(next.expiresAt ? { expiresAt: next.expiresAt } : {}),
      ...(next.lifetimeMs ? { lifetimeMs: next.lifetimeMs } : {}),
    });

  const login = async (why: string): Promise<TokenSet> => {
    log.info(`${name}: ${why}`);
    const next = await interactiveLogin(server, client, spec, scopes, resource);
    await persist(next);
    log.info(`${name}: logged in to ${server.as.issuer}`);
    return next;
  };

  /**
   * A fresh access token: refresh (retrying transient failures), else log in again. Other
   * mcpmgr processes share the stored grant (several `proxy stdio` for one remote): under a
   * lock, whatever one of them stored since is taken instead of refreshing again (servers
   * that rotate refresh tokens would see a reused one and revoke the grant).
   */
  const renew = async (): Promise<TokenSet> => {
    const lockDir = join(process.env.XDG_RUNTIME_DIR || join(homedir(), ".cache"), "mcpmgr");
    await ensureDir(lockDir);
    return withLock(join(lockDir, `${key}.lock`), () => renewLocked(), {
      timeoutMs: spec.timeoutMs + 90_000,
      staleMs: 24 * 3_600_000,
    });
  };
  const renewLocked = async (): Promise<TokenSet> => {
    const latest = fromStore(await store.load());
    if (
      latest &&
      latest.accessToken !== tokens?.accessToken &&
      (latest.expiresAt === undefined || latest.expiresAt - earlyMs(latest) > Date.now())
    )
      return latest;
    if (latest?.refreshToken) tokens = latest;
    const refreshToken = tokens?.refreshToken;
    if (refreshToken) {
      for (let attempt = 0; attempt < 3; attempt++) {
        try {
          const next = await refreshTokens(server, client, refreshToken, resource);
          await persist(next);
          return next;
        } catch (err) {
          if (!(err instanceof RefreshFailed)) throw err;
          if (err.revoked) return login(`${err.message}: the grant was revoked or expired, logging in again`);
          log.warn(`${name}: ${err.message}; retrying`);
          await Bun.sleep(500 * 2 ** attempt);
        }
      }
    }
    return login(
      refreshToken
        ? "the token could not be refreshed, logging in again"
        : "logging in to the remote server's authorization server",
    );
  };

  let renewing: Promise<TokenSet> | undefined;
  const triedScopes = new Set<string>([scopes.join(" ")]);
  return {
    issuer: server.as.issuer,
    async current() {
      if (tokens && (tokens.expiresAt === undefined || tokens.expiresAt - earlyMs(tokens) > Date.now())) return tokens;
      // One renewal at a time, whatever the number of requests waiting for it.
      renewing ??= renew().finally(() => (renewing = undefined));
      tokens = await renewing;
      return tokens;
    },
    expire(refused) {
      if (tokens && `Bearer ${tokens.accessToken}` === refused) tokens = { ...tokens, expiresAt: 0 };
    },
    async stepUp(wanted) {
      const next = [...new Set([...scopes, ...wanted])];
      const label = next.join(" ");
      // The same request twice would loop: a server that keeps refusing gets its 403.
      if (triedScopes.has(label)) return false;
      triedScopes.add(label);
      scopes = next;
      // Through the same single flight as renewals, so a refresh finishing later cannot undo it.
      if (renewing) await renewing.catch(() => {});
      renewing = login(`the remote server needs more scopes (${wanted.join(" ")}), logging in again`).finally(
        () => (renewing = undefined),
      );
      tokens = await renewing;
      return true;
    },
  };
}

/**
 * The token source for `--remote-auth` (and auto-detection). With an authorization server
 * given, or a remote that asks at once, the login happens before serving; otherwise the
 * first 401 (or 403 insufficient_scope) from the remote starts it. `http` makes mcpmgr's
 * own requests (probe, metadata, discovery, registration, tokens): it trusts --thv-ca-bundle.
 */
export async function oauthTokenSource(
  spec: OAuthSpec,
  target: URL,
  name: string,
  http?: Fetch,
): Promise<TokenSource | undefined> {
  let session: Session | undefined;
  if (spec.endpoints || spec.issuer) session = await openSession(spec, target, name, undefined, http);
  else {
    const found = await discoverFromRemote(target, http);
    if (found) session = await openSession(spec, target, name, found, http);
    else log.info(`${name}: the remote server does not ask for authentication yet; mcpmgr will log in when it does`);
  }
  await session?.current();
  let opening: Promise<Session> | undefined;
  return {
    async authorization() {
      return session ? `Bearer ${(await session.current()).accessToken}` : undefined;
    },
    async invalidate(refused, response) {
      const challenge = response.headers.get("www-authenticate") ?? "";
      if (session === undefined) {
        if (!/^Bearer\b/i.test(challenge) && response.status !== 401) return;
        // A failed attempt (network, timeout) must not be remembered: the next 401 tries again.
        opening ??= discoverFromChallenge(challenge, target, http)
          .then((found) => openSession(spec, target, name, found, http))
          .finally(() => (opening = undefined));
        session = await opening;
        await session.current();
        return;
      }
      if (response.status === 403) {
        const wanted = challengeScopes(challenge);
        if (wanted && (await session.stepUp(wanted))) return;
        log.warn(`${name}: the remote server refused the request for lack of scope`);
        return;
      }
      session.expire(refused ?? "");
      log.warn(`${name}: the remote server refused the access token; renewing it`);
    },
  };
}
