/**
 * Responses a policy produced (authentication, tool filter, later authorization), as
 * opposed to the server's own errors: audit records them with outcome "denied".
 */
const denied = new WeakSet<Response>();

export function markDenied(response: Response): Response {
  denied.add(response);
  return response;
}

export function isDenied(response: Response): boolean {
  return denied.has(response);
}
