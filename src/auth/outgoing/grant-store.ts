/**
 * Where OAuth grants live between runs: the secrets store, one entry per grant, and a lock
 * file per grant so that processes sharing it renew it one at a time. Without a usable
 * secrets store the grant is kept in memory (a restart then asks to log in again).
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import type { SecretManager } from "../../secrets/manager.ts";
import { ensureDir } from "../../state/atomic-file.ts";
import { withLock } from "../../state/lock.ts";
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

export function secretsGrantStore(secrets: SecretManager, key: string, log: OutgoingLog): GrantStore {
  let warned = false;
  let memory: StoredGrant | undefined;
  return {
    async load() {
      if (memory !== undefined) return memory;
      try {
        const secret = await secrets.provider.get(key);
        return secret ? (JSON.parse(secret.reveal()) as StoredGrant) : {};
      } catch (err) {
        log.warn(`stored OAuth tokens could not be read (${errorMessage(err)}); logging in again`);
        return {};
      }
    },
    async save(value) {
      try {
        await secrets.provider.set(key, JSON.stringify(value));
      } catch (err) {
        memory = value;
        if (!warned)
          log.warn(
            `OAuth tokens are kept in memory only (the secrets store is unavailable: ${errorMessage(err)}); a restart will ask to log in again`,
          );
        warned = true;
      }
    },
    async clear() {
      memory = undefined;
      await secrets.provider.delete(key);
    },
  };
}

/** Renewals of one grant, one process at a time (lock files in `dir`). */
export function lockedRenewals(dir: string, timeoutMs: number) {
  return async <T>(key: string, renew: () => Promise<T>): Promise<T> => {
    await ensureDir(dir);
    // A holder that died is detected by its pid; a live one may be waiting for its user.
    return withLock(join(dir, `${key}.lock`), renew, { timeoutMs, staleMs: 24 * 3_600_000 });
  };
}
