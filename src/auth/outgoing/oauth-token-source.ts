/**
 * The token source behind `--remote-auth` (and auto-detection): which authorization server
 * (given, or found from the remote's 401 through RFC 9728), which client (given, stored, or
 * registered with RFC 7591), then one grant session keeping the tokens. With a server given,
 * or a remote that asks at once, the login happens before serving; otherwise the first 401
 * (or 403 insufficient_scope) from the remote starts it. When a later 401 shows that the
 * remote now names another authorization server, the grant of the old one is left alone and
 * a new one is made with the new server — registering again (MCP 2026-07-28, SEP-2352); a
 * client given with --remote-auth-client-id belongs to the server it was first used with and
 * is not offered to the next. Logins the remote starts once the workload runs (a first 401
 * late, a move, a step-up) follow login-policy.ts: one at a time, a budget per remote, none
 * from a background workload.
 *
 * Storage, the lock, the clock and the interactive login are the caller's (the CLI gives the
 * secrets store, lock files and the callback server with the browser).
 */
import type { OAuthSpec } from "../../config/outgoing-auth-spec.ts";
import { errorMessage, McpmgrError } from "../../errors.ts";
import type { Fetch } from "../trusted-fetch.ts";
import {
  assertServerEndpoints,
  type ChallengeDiscovery,
  challengeScopes,
  discoverFromChallenge,
  discoverFromRemote,
  discoverServer,
  explicitServer,
  requestedScopes,
} from "./discovery.ts";
import {
  type Clock,
  type GrantSession,
  type GrantStore,
  type OutgoingLog,
  openGrantSession,
  systemClock,
} from "./grant-session.ts";
import { type RecordLabel, remoteOf } from "./grant-labels.ts";
import { clientHomeKey, deferredLoginKey, grantKey } from "./grant-store.ts";
import { type InteractiveLogin, redirectUriFor } from "./login.ts";
import { type ClientInfo, refreshTokens, registerClient, type ServerInfo, type TokenSet } from "./oauth-client.ts";
import { LoginRefused, loginPolicy } from "./login-policy.ts";
import type { TokenSource } from "./token-source.ts";

export interface OAuthTokenSourceOptions {
  readonly spec: OAuthSpec;
  readonly target: URL;
  /** mcpmgr's own requests (probe, metadata, discovery, registration, tokens): trusts --thv-ca-bundle. */
  readonly http?: Fetch | undefined;
  readonly log: OutgoingLog;
  readonly login: InteractiveLogin;
  /** The store of one record, saved with its label (grant-labels.ts: what it is, for which remote). */
  readonly storeFor: (key: string, about: RecordLabel) => GrantStore;
  readonly exclusive: <T>(key: string, renew: () => Promise<T>) => Promise<T>;
  readonly clock?: Clock;
  /**
   * Set for a background workload (nobody watching): once it runs, no login is started (a step-up,
   * a move to another authorization server, a first 401, a grant that ended); this says how the
   * user logs in instead (login-policy.ts).
   */
  readonly deferLoginsTo?: string | undefined;
  /** Told the tokens each time one is about to be used (grant-session.ts). */
  readonly onTokens?: (tokens: TokenSet) => void;
}

interface Grant {
  readonly session: GrantSession;
  /** The authorization server the remote named when this grant was made (undefined: given by the user). */
  readonly foundIssuer: string | undefined;
}

/** A remote's challenge longer than this is not remembered for the next start (it is the remote's text). */
const MAX_CHALLENGE_CHARS = 4_096;

/** Warnings a remote can cause at each request: each text at most every 30 s in the log. */
const WARN_INTERVAL_MS = 30_000;
/**
 * How long a login the policy refused stays refused without asking again: a remote answering every
 * request with a 401 must not make mcpmgr fetch its metadata and a server's discovery document each time.
 */
const REFUSAL_MEMORY_MS = 30_000;

export async function oauthTokenSource(options: OAuthTokenSourceOptions): Promise<TokenSource | undefined> {
  const { spec, target, http, log } = options;
  const userChoseServer = spec.issuer !== undefined || spec.endpoints !== undefined;
  const clock = options.clock ?? systemClock;
  const remote = remoteOf(target);
  // One budget and one queue of logins for the remote, whichever of its authorization servers
  // they go to and whatever asked for them (step-up, a move, a late first 401).
  const logins = loginPolicy({ now: clock.now, deferTo: options.deferLoginsTo });
  /** Set once the start is over: from then on, every login is one the remote asked for. */
  let running = false;
  // The server a --remote-auth-client-id was first used with: the only one it is offered to, in
  // this run and the next (a remote that moved while mcpmgr was stopped does not get it either).
  // A server the user names (--remote-auth-issuer) is the client's by the user's word.
  const clientHome =
    spec.clientId !== undefined && !userChoseServer
      ? options.storeFor(clientHomeKey(spec.clientId, target), { kind: "client-home", remote, clientId: spec.clientId })
      : undefined;
  let clientIssuer: string | undefined = (await clientHome?.load())?.issuer;

  /**
   * `late`: why the remote sent mcpmgr here after the start (a move, a first 401); the first login
   * (or registration) of such a grant is counted by the policy, and none is started in the background.
   */
  const open = async (found: ChallengeDiscovery | undefined, late?: string): Promise<Grant> => {
    let server: ServerInfo;
    if (spec.endpoints) server = explicitServer(spec.endpoints.authorize, spec.endpoints.token, http);
    else if (spec.issuer) server = await discoverServer(spec.issuer, { fetch: http });
    else if (found) {
      log.info(`the remote server asks for OAuth; its authorization server is ${found.issuer.href}`);
      server = await discoverServer(found.issuer, { legacyDefaults: found.legacy === true, fetch: http });
    } else throw new McpmgrError("INTERNAL", "no authorization server to log in to");
    // Whatever discovery returned is checked like every URL the remote chose: scheme and address.
    await assertServerEndpoints(server, target, found !== undefined && !userChoseServer);
    const issuer = server.as.issuer;
    // The user's client is registered at one server; a secret of it must not go to another the remote names.
    const ownClient = spec.clientId !== undefined && (clientIssuer === undefined || clientIssuer === issuer);
    if (spec.clientId !== undefined && !ownClient)
      log.info(
        `the client given with --remote-auth-client-id is for ${clientIssuer}; mcpmgr registers itself at ${issuer} instead`,
      );
    // RFC 8707 / MCP: the resource is the remote server itself unless told otherwise.
    const resource = spec.resource ?? found?.resource ?? `${target.origin}${target.pathname}`;
    const key = grantKey({
      issuer,
      clientId: ownClient ? spec.clientId : undefined,
      resource,
      target,
      callbackPort: spec.callbackPort,
    });
    const store = options.storeFor(key, { kind: "grant", remote, issuer });
    const stored = await store.load();
    let counted = false;
    /** Before a login (or the registration that leads to one) this grant starts by itself. */
    const beforeLogin = () => {
      if (!running || counted) return;
      if (late !== undefined) {
        logins.admitLogin(late);
        counted = true;
        return;
      }
      // A grant that ended (the refresh refused) is the server's doing, not the remote's: not
      // counted, but nobody is there to log in for a background workload either.
      if (logins.deferTo !== undefined) logins.admitLogin(`the login to ${issuer} has ended`);
    };
    let client: ClientInfo;
    if (ownClient)
      client = {
        clientId: spec.clientId as string,
        ...(spec.clientSecret !== undefined ? { clientSecret: spec.clientSecret } : {}),
      };
    else if (stored.clientId !== undefined)
      client = { clientId: stored.clientId, clientSecret: stored.clientSecret, authMethod: stored.authMethod };
    else {
      beforeLogin();
      client = await registerClient(server, redirectUriFor(spec.callbackPort));
      log.info(`registered mcpmgr as OAuth client ${client.clientId} at ${issuer} (RFC 7591)`);
      // Kept at once: a login that fails or is abandoned must not make the next attempt register again.
      await store.save({
        ...stored,
        clientId: client.clientId,
        ...(client.clientSecret ? { clientSecret: client.clientSecret } : {}),
        ...(client.authMethod ? { authMethod: client.authMethod } : {}),
      });
    }
    const session = await openGrantSession({
      client,
      storeClient: !ownClient,
      scopes: requestedScopes(spec.scopes, found, server),
      store,
      clock,
      refresh: (refreshToken) => refreshTokens(server, client, refreshToken, resource),
      login: (scopes) =>
        logins.serial(async () => {
          const tokens = await options.login({ server, client, scopes, resource });
          log.info(`logged in to ${issuer}`);
          return tokens;
        }),
      exclusive: (renew) => options.exclusive(key, renew),
      log,
      stepUps: logins,
      beforeLogin,
      ...(options.onTokens ? { onTokens: options.onTokens } : {}),
    });
    if (ownClient && clientIssuer === undefined) {
      clientIssuer = issuer;
      await clientHome?.save({ issuer });
    }
    return { session, foundIssuer: userChoseServer ? undefined : found?.issuer.href };
  };

  // A login the remote asked for after a background workload's start, which it did not start: this
  // start logs in as it asked, even when the remote does not ask its probe (it guards only some requests).
  const deferred = userChoseServer
    ? undefined
    : options.storeFor(deferredLoginKey(target), { kind: "challenge", remote });
  /** The authorization server the last challenge a 401 carried named (once discovered): the label of a remembered one. */
  let challengeServer: { readonly challenge: string; readonly issuer: string } | undefined;
  /** What the store holds: a refusal at each request writes only a challenge that changed. */
  let deferredChallenge: string | undefined;
  const deferredFound = async (): Promise<ChallengeDiscovery | undefined> => {
    const challenge = (await deferred?.load())?.challenge;
    deferredChallenge = challenge;
    if (challenge === undefined) return undefined;
    return discoverFromChallenge(challenge, target, http).catch((err: unknown) => {
      log.warn(`the login the remote server asked for earlier could not be prepared: ${errorMessage(err)}`);
      return undefined;
    });
  };
  /** A background workload refused a login a 401 asked for: remembered for the next start. */
  const deferLogin = async (challenge: string, err: unknown) => {
    if (!(err instanceof LoginRefused) || logins.deferTo === undefined || challenge === deferredChallenge) return;
    if (challenge.length > MAX_CHALLENGE_CHARS) return;
    deferredChallenge = challenge;
    const issuer = challengeServer?.challenge === challenge ? challengeServer.issuer : undefined;
    await deferred?.save({ challenge, about: { kind: "challenge", remote, issuer } }).catch(() => {});
  };

  let grant: Grant | undefined;
  /** Whether the start's own probe asked for the login (then a remembered challenge is not needed). */
  let probeAsked = false;
  if (userChoseServer) grant = await open(undefined);
  else {
    const probed = await discoverFromRemote(target, http);
    probeAsked = probed !== undefined;
    const found = probed ?? (await deferredFound());
    if (found) grant = await open(found);
    else log.info("the remote server does not ask for authentication yet; mcpmgr will log in when it does");
  }
  await grant?.session.current();
  running = true;
  // The remembered challenge has served once this start logged in from it (or the remote asks the
  // probe itself): forgotten, so that a remote that stops asking is not logged in to at every start.
  if (grant !== undefined && deferred !== undefined) {
    if (probeAsked) deferredChallenge = (await deferred.load()).challenge;
    if (deferredChallenge !== undefined) {
      deferredChallenge = undefined;
      await deferred.clear?.().catch(() => {});
    }
  }

  const warnedAt = new Map<string, number>();
  const warnNow = (text: string) => {
    const last = warnedAt.get(text);
    if (last !== undefined && clock.now() - last < WARN_INTERVAL_MS) return;
    warnedAt.set(text, clock.now());
    log.warn(text);
  };
  /** A refusal of the policy: to the client every time, to the log at most every 30 s. */
  const refused = (err: unknown): never => {
    if (err instanceof LoginRefused) warnNow(`${err.message} (hint: ${err.hint})`);
    throw err;
  };

  // One (re)discovery at a time; a failed attempt is not remembered, so the next 401 tries again,
  // except a refusal of the policy, which stands for REFUSAL_MEMORY_MS.
  let opening: Promise<Grant> | undefined;
  let refusal: { readonly error: LoginRefused; readonly until: number } | undefined;
  const reopen = async (challenge: string, why: (found: ChallengeDiscovery) => string | undefined) => {
    if (refusal !== undefined && clock.now() < refusal.until) throw refusal.error;
    opening ??= (async () => {
      const found = await discoverFromChallenge(challenge, target, http);
      // Named as its metadata names itself (no slash after a bare origin), as the grants' labels name it.
      challengeServer = { challenge, issuer: found.issuer.pathname === "/" ? found.issuer.origin : found.issuer.href };
      const reason = why(found);
      if (reason === undefined && grant) return grant;
      if (reason) log.info(reason);
      const late = grant
        ? `the remote server now names ${found.issuer.href} as its authorization server`
        : "the remote server asks for a login now (it did not at the start)";
      const next = await open(found, late);
      await next.session.current();
      return next;
    })()
      .catch((err: unknown) => {
        if (err instanceof LoginRefused) refusal = { error: err, until: clock.now() + REFUSAL_MEMORY_MS };
        throw err;
      })
      .finally(() => {
        opening = undefined;
      });
    grant = await opening;
  };

  return {
    async authorization() {
      if (opening) await opening.catch(() => {});
      return grant ? `Bearer ${(await grant.session.current().catch(refused)).accessToken}` : undefined;
    },
    async invalidate(refusedValue, response) {
      const challenge = response.headers.get("www-authenticate") ?? "";
      if (grant === undefined) {
        if (!/^Bearer\b/i.test(challenge) && response.status !== 401) return;
        await reopen(challenge, () => "").catch(async (err: unknown) => {
          await deferLogin(challenge, err);
          return refused(err);
        });
        return;
      }
      if (response.status === 403) {
        const wanted = challengeScopes(challenge);
        if (wanted && (await grant.session.stepUp(wanted))) return;
        log.warn("the remote server refused the request for lack of scope");
        return;
      }
      const current = grant;
      if (current.foundIssuer !== undefined) {
        // The remote may have moved to another authorization server: its metadata says.
        const moved = await reopen(challenge, (found) =>
          found.issuer.href === current.foundIssuer
            ? undefined
            : `the remote server now names ${found.issuer.href} as its authorization server (it was ${current.foundIssuer}); the credentials of ${current.foundIssuer} are not used there`,
        ).then(
          () => grant !== current,
          async (err: unknown) => {
            // Not allowed to log in there (yet): the client is told why.
            if (err instanceof LoginRefused) {
              await deferLogin(challenge, err);
              return refused(err);
            }
            // Failed (discovery, registration, a login not completed): not remembered, the next 401 tries again.
            warnNow(`could not follow the remote server to its new authorization server: ${errorMessage(err)}`);
            return false;
          },
        );
        if (moved) return;
      }
      const outcome = current.session.expire(refusedValue ?? "");
      if (outcome === "renew") log.warn("the remote server refused the access token; renewing it");
      else if (outcome === "throttled")
        log.warn(
          "the remote server refused the access token, and one renewed moments ago too: not renewing it again for 30 s (check the resource and scopes the remote expects: --remote-auth-resource, --remote-auth-scopes)",
        );
    },
  };
}
