/**
 * The upkeep of one OAuth grant (one authorization server, client and resource): a valid
 * access token from memory, the store (so a restart needs no browser), a refresh a little
 * before it expires (retrying transient failures), or an interactive login when nothing else
 * works; step-up for more scopes. Everything with side effects is injected — the store, the
 * clock, the refresh and login calls, the cross-process lock — so the timing rules are unit
 * tested with a fake clock and the real calls in the integration tests.
 */
import { errorMessage, McpmgrError } from "../../errors.ts";
import { RefreshFailed, type ClientInfo, type TokenSet } from "./oauth-client.ts";
import type { RecordLabel } from "./grant-labels.ts";
import { type LoginPolicy, loginPolicy } from "./login-policy.ts";

export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = { now: () => Date.now(), sleep: (ms) => Bun.sleep(ms) };

/** What is kept between runs: the registered client (when mcpmgr registered it) and the tokens. */
export interface StoredGrant {
  clientId?: string;
  clientSecret?: string;
  authMethod?: string;
  accessToken?: string;
  refreshToken?: string;
  expiresAt?: number;
  lifetimeMs?: number;
  /**
   * Scopes a remote asked for that a background workload did not log in for (login-policy.ts): the
   * next start logs in for them instead of using the stored tokens.
   */
  stepUpScopes?: string[];
  /** A client-home record (grant-store.ts `clientHomeKey`): the server the user's client was first used with. */
  issuer?: string;
  /** A deferred-login record (grant-store.ts `deferredLoginKey`): the remote's 401 challenge. */
  challenge?: string;
  /** What the record is for (grant-labels.ts); the store adds its own when a save gives none. */
  about?: RecordLabel;
}

export interface GrantStore {
  load(): Promise<StoredGrant>;
  save(value: StoredGrant): Promise<void>;
  /** Forget the record (a deferred login once a start logged in from it). */
  clear?(): Promise<void>;
}

export interface OutgoingLog {
  info(text: string): void;
  warn(text: string): void;
}

export interface GrantSessionOptions {
  readonly client: ClientInfo;
  /** Keep the client in the store (mcpmgr registered it; a given --remote-auth-client-id is not stored). */
  readonly storeClient: boolean;
  readonly scopes: readonly string[];
  readonly store: GrantStore;
  readonly clock: Clock;
  /** A refresh at the token endpoint; RefreshFailed says whether the grant is gone. */
  readonly refresh: (refreshToken: string) => Promise<TokenSet>;
  /** An interactive login asking for these scopes. */
  readonly login: (scopes: readonly string[]) => Promise<TokenSet>;
  /**
   * Runs a renewal exclusively among the processes sharing the store: several `proxy stdio`
   * for one remote must not refresh the same grant at once (servers that rotate refresh
   * tokens would see one reused and revoke the grant).
   */
  readonly exclusive: <T>(renew: () => Promise<T>) => Promise<T>;
  readonly log: OutgoingLog;
  /** Which step-ups may log in (default: the bounds of login-policy.ts, interactive). */
  readonly stepUps?: LoginPolicy;
  /**
   * Asked before a login the session starts by itself (no token, the refresh refused, scopes
   * deferred to this start); throws to refuse it (the token source's rules: none from a background
   * workload once it runs, and a login for a server the remote moved to counts). Step-ups ask `stepUps`.
   */
  readonly beforeLogin?: () => void;
  /**
   * Told the tokens in use each time current() gives them (the same ones again, mostly): the
   * remote's audit redactor learns a renewed token before it is sent (workload/outgoing-auth.ts).
   */
  readonly onTokens?: (tokens: TokenSet) => void;
}

export interface GrantSession {
  /** A valid access token: from memory, the store, a refresh, or a login. */
  current(): Promise<TokenSet>;
  /**
   * Forget the access token the remote refused, so the next current() renews it ("renew"). Kept when
   * it is no longer the one in use ("stale": renewed meanwhile), or when the last renewal a refusal
   * forced was less than FORCED_RENEWAL_INTERVAL_MS ago ("throttled"): a remote that refuses every
   * token must not cost the authorization server a refresh per request.
   */
  expire(refused: string): "renew" | "stale" | "throttled";
  /**
   * Log in again asking for more scopes (RFC 6750 insufficient_scope); false when that set was
   * already tried. Throws (an McpmgrError the client is given) when the step-up policy refuses or
   * defers the login.
   */
  stepUp(scopes: readonly string[]): Promise<boolean>;
}

const REFRESH_EARLY_MS = 60_000;
/** At most one renewal forced by the remote's refusals in this time. */
export const FORCED_RENEWAL_INTERVAL_MS = 30_000;
const REFRESH_ATTEMPTS = 3;

/** Refresh a minute early, or at half-life for tokens that live less than two minutes. */
export function refreshLeadMs(tokens: TokenSet): number {
  return tokens.lifetimeMs === undefined ? REFRESH_EARLY_MS : Math.min(REFRESH_EARLY_MS, tokens.lifetimeMs / 2);
}

function fresh(tokens: TokenSet | undefined, now: number): tokens is TokenSet {
  return tokens !== undefined && (tokens.expiresAt === undefined || tokens.expiresAt - refreshLeadMs(tokens) > now);
}

function tokensOf(value: StoredGrant): TokenSet | undefined {
  return value.accessToken
    ? {
        accessToken: value.accessToken,
        refreshToken: value.refreshToken,
        expiresAt: value.expiresAt,
        lifetimeMs: value.lifetimeMs,
      }
    : undefined;
}

function union(a: readonly string[], b: readonly string[]): string[] {
  return [...new Set([...a, ...b])];
}

export async function openGrantSession(options: GrantSessionOptions): Promise<GrantSession> {
  const { client, store, clock, log } = options;
  const stepUps = options.stepUps ?? loginPolicy({ now: clock.now });
  const stored = await store.load();
  /** Scopes of a deferred step-up, kept in the store until a login asks for them. */
  let pendingScopes = stored.stepUpScopes;
  let scopes = pendingScopes ? union(options.scopes, pendingScopes) : options.scopes;
  /** A deferred step-up found at the start: log in for it (the user started this) rather than use the stored tokens. */
  let mustLogin = pendingScopes !== undefined;
  let tokens = mustLogin ? undefined : tokensOf(stored);

  const persist = (next: TokenSet) =>
    store.save({
      ...(options.storeClient
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
      ...(pendingScopes ? { stepUpScopes: pendingScopes } : {}),
    });

  const login = async (why: string): Promise<TokenSet> => {
    log.info(why);
    const asked = scopes;
    const next = await options.login(asked);
    if (pendingScopes?.every((scope) => asked.includes(scope))) pendingScopes = undefined;
    mustLogin = false;
    await persist(next);
    return next;
  };

  /** A login of the session's own (not a step-up): the token source may refuse it. */
  const renewalLogin = (why: string): Promise<TokenSet> => {
    options.beforeLogin?.();
    return login(why);
  };

  /** Under the lock: what another process stored since, else a refresh (retried), else a login. */
  const renewExclusively = async (): Promise<TokenSet> => {
    if (mustLogin && pendingScopes) {
      const asked = pendingScopes.join(" ");
      // Refused (not failed): the scopes stay for a start that may log in.
      options.beforeLogin?.();
      try {
        return await login(`logging in for the scopes the remote server asked for earlier (${asked})`);
      } catch (err) {
        // Refused (a scope the authorization server does not know, the user declining, no one there):
        // kept, they would fail every later start too. Forgotten; the grant goes on as it was.
        log.warn(
          `the login for the scopes the remote server asked for earlier (${asked}) failed (${errorMessage(err)}); going on with the scopes granted before`,
        );
        pendingScopes = undefined;
        mustLogin = false;
        scopes = options.scopes;
        const { stepUpScopes: _, ...kept } = await store.load();
        await store.save(kept);
      }
    }
    const latest = tokensOf(await store.load());
    if (latest && latest.accessToken !== tokens?.accessToken && fresh(latest, clock.now())) return latest;
    if (latest?.refreshToken) tokens = latest;
    const refreshToken = tokens?.refreshToken;
    if (refreshToken) {
      for (let attempt = 0; attempt < REFRESH_ATTEMPTS; attempt++) {
        try {
          const next = await options.refresh(refreshToken);
          await persist(next);
          return next;
        } catch (err) {
          if (!(err instanceof RefreshFailed)) throw err;
          if (err.revoked) return renewalLogin(`${err.message}: the grant was revoked or expired, logging in again`);
          log.warn(`${err.message}; retrying`);
          await clock.sleep(500 * 2 ** attempt);
        }
      }
    }
    return renewalLogin(
      refreshToken
        ? "the token could not be refreshed, logging in again"
        : "logging in to the remote server's authorization server",
    );
  };

  let renewing: Promise<TokenSet> | undefined;
  let forcedRenewalAt: number | undefined;
  const triedScopes = new Set<string>([scopes.join(" ")]);
  /** Step-ups deferred (logged once each), and when a refused one was last logged. */
  const warned = new Set<string>();
  let refusalLoggedAt: number | undefined;
  return {
    async current() {
      if (!fresh(tokens, clock.now())) {
        // One renewal at a time, whatever the number of requests waiting for it.
        renewing ??= options.exclusive(renewExclusively).finally(() => {
          renewing = undefined;
        });
        tokens = await renewing;
      }
      options.onTokens?.(tokens);
      return tokens;
    },
    expire(refused) {
      if (!tokens || `Bearer ${tokens.accessToken}` !== refused) return "stale";
      const now = clock.now();
      if (forcedRenewalAt !== undefined && now - forcedRenewalAt < FORCED_RENEWAL_INTERVAL_MS) return "throttled";
      forcedRenewalAt = now;
      tokens = { ...tokens, expiresAt: 0 };
      return "renew";
    },
    async stepUp(wanted) {
      // One login at a time: a step-up waits for the renewal or step-up in progress, then looks again.
      while (renewing) await renewing.catch(() => {});
      // MCP 2026-07-28 (SEP-2350): the union of what was asked before and what is asked now.
      const next = union(scopes, wanted);
      const label = next.join(" ");
      // The same request twice would loop: a server that keeps refusing gets its 403.
      if (triedScopes.has(label)) return false;
      let decision: "login" | "defer";
      try {
        // Scopes waiting for the next start count too: a background remote cannot pile them up.
        decision = stepUps.admit(union(scopes, pendingScopes ?? []), wanted, options.scopes);
      } catch (err) {
        // Every time to the client, at most every 30 s in the log (a hostile remote asks at each request).
        if (
          err instanceof McpmgrError &&
          (refusalLoggedAt === undefined || clock.now() - refusalLoggedAt >= FORCED_RENEWAL_INTERVAL_MS)
        ) {
          refusalLoggedAt = clock.now();
          log.warn(`${err.message} (hint: ${err.hint})`);
        }
        throw err;
      }
      if (decision === "defer") {
        const added = next.filter((scope) => !scopes.includes(scope));
        const message = `the remote server needs more scopes (${added.join(" ")}), and a background workload does not start a login by itself: ${stepUps.deferTo}`;
        if (!warned.has(label)) {
          warned.add(label);
          pendingScopes = union(pendingScopes ?? [], added);
          const kept = await store.load();
          await store.save({ ...kept, stepUpScopes: pendingScopes });
          log.warn(message);
        }
        throw new McpmgrError("AUTH_SETUP_FAILED", message, {
          hint: "a login for them is started only while you watch: at the workload's start",
        });
      }
      triedScopes.add(label);
      scopes = next;
      // Through the same single flight as renewals, so a refresh finishing later cannot undo it.
      renewing = login(`the remote server needs more scopes (${wanted.join(" ")}), logging in again`).finally(() => {
        renewing = undefined;
      });
      tokens = await renewing;
      return true;
    },
  };
}
