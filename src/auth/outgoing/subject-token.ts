/**
 * The raw bearer token of an incoming request, kept beside the request (never in enumerable
 * places) for RFC 8693 token exchange. Its own module so that incoming authentication records
 * it without loading the token-exchange client (oauth4webapi) when no exchange is configured.
 */
import { requestState } from "../request-state.ts";

const subjectTokens = requestState<string>();

export function rememberSubjectToken(req: Request, token: string): void {
  subjectTokens.set(req, token);
}

export function subjectTokenOf(req: Request): string | undefined {
  return subjectTokens.get(req);
}
