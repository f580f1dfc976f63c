/**
 * A session id as audit lines and telemetry show it. The id is a bearer capability (whoever
 * presents it, and passes authentication, uses the session), and audit files and trace
 * backends are read by more people than the proxy's clients, so they get a keyed hash: the
 * same session has the same reference throughout this process (lines and spans still
 * correlate), but the reference cannot be turned back into the id, nor computed from an id
 * without the key, which lives in this process's memory only.
 */
import { createHmac, randomBytes } from "node:crypto";

const key = randomBytes(32);

export function sessionRef(sessionId: string): string {
  return `s_${createHmac("sha256", key).update(sessionId).digest("base64url").slice(0, 22)}`;
}
