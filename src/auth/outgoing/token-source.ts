/**
 * Where the credential for a remote MCP server comes from. The authenticated fetch asks for
 * it per request and reports refusals; implementations: a static bearer token, the OAuth
 * flow (refreshing and re-authenticating), token exchange of the client's token.
 */
export interface TokenSource {
  /** The header value to send (e.g. "Bearer …") for this incoming request. */
  authorization(incoming: Request | undefined): Promise<string>;
  /** The remote refused `refused`: forget it, so the next call refreshes or re-authenticates. */
  invalidate(refused: string, response: Response): Promise<void>;
}

/** `--remote-auth-bearer-token(-file)`: the same token every time; a refusal is only logged. */
export function staticBearer(token: string, onRefused: (status: number) => void = () => {}): TokenSource {
  const value = `Bearer ${token}`;
  return {
    authorization: async () => value,
    invalidate: async (_refused, response) => onRefused(response.status),
  };
}
