/**
 * One interactive authorization-code login, apart from how the user is shown the URL and
 * how the redirect comes back (the CLI's callback server and browser): authorization request
 * with PKCE, the redirect checked (issuer, state) before anything is redeemed, then the code
 * exchange.
 */
import {
  type ClientInfo,
  exchangeAuthorizationCode,
  type ServerInfo,
  startAuthorization,
  type TokenSet,
  validateAuthorizationResponse,
} from "./oauth-client.ts";

export interface LoginRequest {
  readonly server: ServerInfo;
  readonly client: ClientInfo;
  readonly scopes: readonly string[];
  readonly resource: string | undefined;
}

/** Logs in for a grant: the interactive part of the token source, injected by the caller. */
export type InteractiveLogin = (request: LoginRequest) => Promise<TokenSet>;

/** The loopback redirect URI mcpmgr registers and logs in with. */
export function redirectUriFor(callbackPort: number): string {
  return `http://127.0.0.1:${callbackPort}/callback`;
}

export interface RedirectReceiver {
  readonly redirectUri: string;
  /** Shows the user where to log in (print, open a browser). */
  show(url: URL): void;
  /** The redirect that carries `state` (others are not answers); rejects when the user takes too long. */
  receive(state: string): Promise<URL>;
}

export async function browserLogin(request: LoginRequest, receiver: RedirectReceiver): Promise<TokenSet> {
  const { server, client, resource } = request;
  const pending = await startAuthorization(server, client, {
    redirectUri: receiver.redirectUri,
    scopes: request.scopes,
    resource,
  });
  receiver.show(pending.url);
  const callback = await receiver.receive(pending.state);
  const params = validateAuthorizationResponse(server, client, pending, callback);
  return exchangeAuthorizationCode(server, client, pending, params, resource);
}
