/**
 * Where OAuth grants live between runs: the secrets store, one entry per grant, and a lock
 * file per grant so that processes sharing it renew it one at a time. Without a usable
 * secrets store the grant is kept in memory (a restart then asks to log in again).
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import type { SecretManager } from "../../secrets/manager.ts";
import { withLock } from "../../state/lock.ts";
import type { RecordKind, RecordLabel } from "./grant-labels.ts";
import type { GrantStore, OutgoingLog, StoredGrant } from "./grant-session.ts";
import { errorMessage } from "../../errors.ts";

/**
 * The key of a grant. MCP 2026-07-28 (SEP-2352): credentials are bound to the authorization
 * server that issued them, so its issuer is part of the key; so are the remote (tokens are
 * never offered to another server) and the callback port (a client registered for another
 * redirect URI is not reused).
 */
export function grantKey(parts: {
  issuer: string;
  clientId: string | undefined;
  resource: string;
  target: URL;
  callbackPort: number;
}): string {
  const text = [
    parts.issuer,
    parts.clientId ?? "(registered)",
    parts.resource,
    `${parts.target.origin}${parts.target.pathname}`,
    parts.callbackPort,
  ].join("\n");
  return `oauth-${createHash("sha256").update(text).digest("hex").slice(0, 32)}`;
}

/**
 * The key of the record of which authorization server a --remote-auth-client-id was first used
 * with for a remote (the issuer is what it holds, not part of its key): the client belongs to that
 * server across runs, so that a remote naming another one after a restart does not get it.
 */
export function clientHomeKey(clientId: string, target: URL): string {
  const text = ["client home", clientId, `${target.origin}${target.pathname}`].join("\n");
  return `oauth-${createHash("sha256").update(text).digest("hex").slice(0, 32)}`;
}

/**
 * The key of the record of the login a remote asked for after a background workload's start (its
 * 401 challenge), which the workload did not start: its next start, which the user watches, logs
 * in as the remote asked even when the remote's answer to the start's probe does not ask.
 */
export function deferredLoginKey(target: URL): string {
  const text = ["deferred login", `${target.origin}${target.pathname}`].join("\n");
  return `oauth-${createHash("sha256").update(text).digest("hex").slice(0, 32)}`;
}

/** What a failed save leaves unsaved, by the kind of record. */
function unsaved(kind: RecordKind, why: string): string {
  if (kind === "challenge")
    return `the login the remote server asked for is not remembered for the next start (${why})`;
  if (kind === "client-home")
    return `the authorization server the --remote-auth-client-id was first used with is not remembered for the next start (${why})`;
  return `OAuth tokens are kept in memory only (${why}); a restart will ask to log in again`;
}

/**
 * The grant stores of one remote's token source (its grants, client home and deferred login), each
 * record saved with its label (grant-labels.ts, which `secret list` and `rm` read): a secrets
 * store that cannot be read is said once per start, whatever the number of records read, and a
 * failed save once per kind of record, naming what was not saved.
 */
export function secretsGrantStores(
  secrets: () => SecretManager,
  log: OutgoingLog,
): (key: string, about: RecordLabel) => GrantStore {
  const said = new Set<string>();
  const warnOnce = (kind: string, text: string) => {
    if (said.has(kind)) return;
    said.add(kind);
    log.warn(text);
  };
  return (key, about) => {
    // Opened here, not in the calls below: a secrets store that cannot be opened at all is an error of the start.
    const manager = secrets();
    let memory: StoredGrant | undefined;
    return {
      async load() {
        if (memory !== undefined) return memory;
        try {
          const secret = await manager.provider.get(key);
          return secret ? (JSON.parse(secret.reveal()) as StoredGrant) : {};
        } catch (err) {
          warnOnce("unreadable", `stored OAuth tokens could not be read (${errorMessage(err)}); logging in again`);
          return {};
        }
      },
      async save(value) {
        const labelled = { ...value, about: value.about ?? about };
        try {
          await manager.provider.set(key, JSON.stringify(labelled));
        } catch (err) {
          memory = labelled;
          const kind = labelled.about.kind;
          warnOnce(kind, unsaved(kind, `the secrets store is unavailable: ${errorMessage(err)}`));
        }
      },
      async clear() {
        memory = undefined;
        await manager.provider.delete(key);
      },
    };
  };
}

/**
 * Renewals of one grant, one process at a time (lock files in the folder `lockDir` makes ready:
 * created if need be, and checked at each renewal, which may come hours after the start).
 */
export function lockedRenewals(lockDir: () => Promise<string>, timeoutMs: number) {
  return async <T>(key: string, renew: () => Promise<T>): Promise<T> => {
    const dir = await lockDir();
    // A holder that died is detected by its pid; a live one may be waiting for its user.
    return withLock(join(dir, `${key}.lock`), renew, { timeoutMs, staleMs: 24 * 3_600_000 });
  };
}
