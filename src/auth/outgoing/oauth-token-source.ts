/**
 * The token source behind `--remote-auth` (and auto-detection): which authorization server
 * (given, or found from the remote's 401 through RFC 9728), which client (given, stored, or
 * registered with RFC 7591), then one grant session keeping the tokens. With a server given,
 * or a remote that asks at once, the login happens before serving; otherwise the first 401
 * (or 403 insufficient_scope) from the remote starts it. When a later 401 shows that the
 * remote now names another authorization server, the grant of the old one is left alone and
 * a new one is made with the new server — registering again (MCP 2026-07-28, SEP-2352).
 *
 * Storage, the lock, the clock and the interactive login are the caller's (the CLI gives the
 * secrets store, lock files and the callback server with the browser).
 */
import type { OAuthSpec } from "../../config/outgoing-auth-spec.ts";
import { McpmgrError } from "../../errors.ts";
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
import { grantKey } from "./grant-store.ts";
import { type InteractiveLogin, redirectUriFor } from "./login.ts";
import { type ClientInfo, refreshTokens, registerClient, type ServerInfo } from "./oauth-client.ts";
import { stepUpPolicy } from "./step-up.ts";
import type { TokenSource } from "./token-source.ts";

export interface OAuthTokenSourceOptions {
  readonly spec: OAuthSpec;
  readonly target: URL;
  /** mcpmgr's own requests (probe, metadata, discovery, registration, tokens): trusts --thv-ca-bundle. */
  readonly http?: Fetch | undefined;
  readonly log: OutgoingLog;
  readonly login: InteractiveLogin;
  readonly storeFor: (key: string) => GrantStore;
  readonly exclusive: <T>(key: string, renew: () => Promise<T>) => Promise<T>;
  readonly clock?: Clock;
  /**
   * Set for a background workload (nobody watching): a remote's step-up starts no login; this
   * says how the user logs in for the scopes instead (step-up.ts).
   */
  readonly stepUpDeferTo?: string | undefined;
}

interface Grant {
  readonly session: GrantSession;
  /** The authorization server the remote named when this grant was made (undefined: given by the user). */
  readonly foundIssuer: string | undefined;
}

export async function oauthTokenSource(options: OAuthTokenSourceOptions): Promise<TokenSource | undefined> {
  const { spec, target, http, log } = options;
  const userChoseServer = spec.issuer !== undefined || spec.endpoints !== undefined;
  const clock = options.clock ?? systemClock;
  // One budget of step-up logins for the remote, whichever of its authorization servers they go to.
  const stepUps = stepUpPolicy({ now: clock.now, deferTo: options.stepUpDeferTo });

  const open = async (found: ChallengeDiscovery | undefined): Promise<Grant> => {
    let server: ServerInfo;
    if (spec.endpoints) server = explicitServer(spec.endpoints.authorize, spec.endpoints.token, http);
    else if (spec.issuer) server = await discoverServer(spec.issuer, { fetch: http });
    else if (found) {
      log.info(`the remote server asks for OAuth; its authorization server is ${found.issuer.href}`);
      server = await discoverServer(found.issuer, { legacyDefaults: found.legacy === true, fetch: http });
    } else throw new McpmgrError("INTERNAL", "no authorization server to log in to");
    // Whatever discovery returned is checked like every URL the remote chose: scheme and address.
    await assertServerEndpoints(server, target, found !== undefined && !userChoseServer);
    // RFC 8707 / MCP: the resource is the remote server itself unless told otherwise.
    const resource = spec.resource ?? found?.resource ?? `${target.origin}${target.pathname}`;
    const key = grantKey({
      issuer: server.as.issuer,
      clientId: spec.clientId,
      resource,
      target,
      callbackPort: spec.callbackPort,
    });
    const store = options.storeFor(key);
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
      client = await registerClient(server, redirectUriFor(spec.callbackPort));
      log.info(`registered mcpmgr as OAuth client ${client.clientId} at ${server.as.issuer} (RFC 7591)`);
    }
    const session = await openGrantSession({
      client,
      storeClient: spec.clientId === undefined,
      scopes: requestedScopes(spec.scopes, found, server),
      store,
      clock,
      refresh: (refreshToken) => refreshTokens(server, client, refreshToken, resource),
      login: async (scopes) => {
        const tokens = await options.login({ server, client, scopes, resource });
        log.info(`logged in to ${server.as.issuer}`);
        return tokens;
      },
      exclusive: (renew) => options.exclusive(key, renew),
      log,
      stepUps,
    });
    return { session, foundIssuer: userChoseServer ? undefined : found?.issuer.href };
  };

  let grant: Grant | undefined;
  if (userChoseServer) grant = await open(undefined);
  else {
    const found = await discoverFromRemote(target, http);
    if (found) grant = await open(found);
    else log.info("the remote server does not ask for authentication yet; mcpmgr will log in when it does");
  }
  await grant?.session.current();

  // One (re)discovery at a time; a failed attempt is not remembered, so the next 401 tries again.
  let opening: Promise<Grant> | undefined;
  const reopen = async (challenge: string, why: (found: ChallengeDiscovery) => string | undefined) => {
    opening ??= (async () => {
      const found = await discoverFromChallenge(challenge, target, http);
      const reason = why(found);
      if (reason === undefined && grant) return grant;
      if (reason) log.info(reason);
      const next = await open(found);
      await next.session.current();
      return next;
    })().finally(() => {
      opening = undefined;
    });
    grant = await opening;
  };

  return {
    async authorization() {
      if (opening) await opening.catch(() => {});
      return grant ? `Bearer ${(await grant.session.current()).accessToken}` : undefined;
    },
    async invalidate(refused, response) {
      const challenge = response.headers.get("www-authenticate") ?? "";
      if (grant === undefined) {
        if (!/^Bearer\b/i.test(challenge) && response.status !== 401) return;
        await reopen(challenge, () => "");
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
            : `the remote server now names ${found.issuer.href} as its authorization server; the credentials of ${current.foundIssuer} are not used there`,
        ).then(
          () => grant !== current,
          () => false,
        );
        if (moved) return;
      }
      const outcome = current.session.expire(refused ?? "");
      if (outcome === "renew") log.warn("the remote server refused the access token; renewing it");
      else if (outcome === "throttled")
        log.warn(
          "the remote server refused the access token, and one renewed moments ago too: not renewing it again for 30 s (check the resource and scopes the remote expects: --remote-auth-resource, --remote-auth-scopes)",
        );
    },
  };
}
