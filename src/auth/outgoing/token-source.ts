/**
 * Where the credential for a remote MCP server comes from. The authenticated fetch asks for
 * it per request and reports refusals; implementations: a static bearer token, the OAuth
 * flow (refreshing and re-authenticating), token exchange of the client's token.
 */
export interface TokenSource {
  /** The header value to send (e.g. "Bearer …") for this incoming request; undefined: none (yet). */
  authorization(incoming: Request | undefined): Promise<string | undefined>;
  /**
   * The remote refused (401, or 403 insufficient_scope) what was sent (`refused`, undefined
   * when nothing was): forget it, or log in, so the next call has something better.
   */
  invalidate(refused: string | undefined, response: Response): Promise<void>;
}

/** `--remote-auth-bearer-token(-file)`: the same token every time; a refusal is only logged. */
export function staticBearer(token: string, onRefused: (status: number) => void = () => {}): TokenSource {
  const value = `Bearer ${token}`;
  return {
    authorization: async () => value,
    invalidate: async (_refused, response) => onRefused(response.status),
  };
}
