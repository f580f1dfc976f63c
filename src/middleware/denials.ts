/**
 * Responses a policy produced (authentication, the message checks, tool filter,
 * authorization, webhooks), as opposed to the server's own errors: audit records them with
 * outcome "denied" and, when the policy gave one, the reason.
 */
export interface Denial {
  /** Why, in a few words, for the audit line. */
  readonly reason?: string;
  /** The body was refused as a whole before any policy decided on it (message-checks.ts). */
  readonly invalid?: boolean;
  /** Refused by authentication (no token, a bad one, or none could be checked): the caller is nobody known. */
  readonly unauthenticated?: boolean;
}

const denied = new WeakMap<Response, Denial>();

export function markDenied(response: Response, denial: Denial = {}): Response {
  // Marking an explained refusal again without a reason keeps the reason.
  if (denial.reason !== undefined || !denied.has(response)) denied.set(response, denial);
  return response;
}

export function isDenied(response: Response): boolean {
  return denied.has(response);
}

export function denialOf(response: Response): Denial | undefined {
  return denied.get(response);
}
