/**
 * Every secret a workload record names, with the option or file entry that names it: what its
 * next start looks up, so `secret delete` can say which workloads a deletion would stop from
 * starting. The places are the ones a start resolves (server-environment.ts, outgoing-auth.ts,
 * policies.ts, gateway.ts): `--secret`, `--remote-forward-headers-secret`, a `--webhook-config`
 * file's `hmac_secret_ref`, and a gateway's `--tool-search-embeddings-key-secret`. mcpmgr's own
 * `oauth-` records are not among them: a record never names them, and deleting one is how a
 * login is forgotten (kept-logins.ts), after which the workload asks for a new one.
 * `deleteSecret` is `secret delete`'s use of them: refused while workloads use it, unless forced;
 * `secretUsers` is `secret list`'s: each stored secret with the workloads that use it.
 * `assertSecretsResolve` is `restart`'s: every one must be there before the workload is stopped.
 */
import { isAbsolute, resolve } from "node:path";
import { parseArgv } from "../config/argv.ts";
import { gatewayOptions } from "../config/gateway-options.ts";
import { parseRunArgv } from "../config/run-argv.ts";
import { webhookConfig } from "../config/webhook-config.ts";
import { closeMatches, didYouMean } from "../close-matches.ts";
import { McpmgrError } from "../errors.ts";
import type { SecretManager } from "../secrets/manager.ts";
import type { SecretProvider } from "../secrets/provider.ts";
import type { McpmgrPaths } from "../state/paths.ts";
import { isGatewayRecord, type WorkloadRecord } from "../state/workload-record.ts";
import { WorkloadStore } from "../state/workloads.ts";
import { currentStatus } from "./supervisor-control.ts";

export interface SecretReference {
  readonly secret: string;
  /** What names it, worded as a start's error about it is (`--secret NAME,target=VAR`). */
  readonly via: string;
}

/**
 * The secrets `record` names. Options a start would refuse are read as far as they can be (the
 * record's `secrets` still count); a webhook file that cannot be read now stops that workload's
 * start whatever is deleted, so it adds nothing.
 */
export function secretReferences(record: WorkloadRecord): SecretReference[] {
  const found: SecretReference[] = [];
  const add = (secret: string, via: string) => {
    if (!found.some((ref) => ref.secret === secret && ref.via === via)) found.push({ secret, via });
  };
  if (isGatewayRecord(record)) {
    const values = tryParse(() => parseArgv(record.runOptions, gatewayOptions, "gateway", false).values);
    const key = values?.["tool-search-embeddings-key-secret"];
    if (key !== undefined) add(key, "--tool-search-embeddings-key-secret");
    return found;
  }
  for (const ref of record.secrets) add(ref.name, `--secret ${ref.name},target=${ref.target}`);
  const values = tryParse(() => parseRunArgv(record.runOptions).values);
  if (values === undefined) return found;
  for (const ref of values.secret) add(ref.name, `--secret ${ref.name},target=${ref.target}`);
  for (const header of values["remote-forward-headers-secret"])
    add(header.value, `--remote-forward-headers-secret ${header.key}=${header.value}`);
  // The supervisor reads these files at every start, from the directory `run` was given in.
  const files = values["webhook-config"].map((file) =>
    isAbsolute(file) ? file : resolve(record.workingDir ?? ".", file),
  );
  const webhooks = tryParse(() => webhookConfig(files));
  for (const hook of [...(webhooks?.mutating ?? []), ...(webhooks?.validating ?? [])])
    if (hook.hmacSecretRef !== undefined) add(hook.hmacSecretRef, `${hook.origin}: hmac_secret_ref`);
  return found;
}

/**
 * Looks up every secret `record` names, as its next start will: `restart` asks first, so a
 * secret that start could not have (deleted, or no password in this shell) is refused while the
 * workload still runs, rather than found by the new supervisor after the old one was stopped.
 */
export async function assertSecretsResolve(record: WorkloadRecord, secrets: () => SecretManager): Promise<void> {
  const refs = secretReferences(record);
  if (refs.length === 0) return;
  const manager = secrets();
  for (const ref of refs) await manager.resolveSecret(ref.secret, ref.via);
}

export interface SecretUser {
  readonly workload: string;
  /** How it names the secret (one entry per option or webhook). */
  readonly via: readonly string[];
}

/** The recorded workloads (gateways included) that name `secret`, by name; and the records that could not be read. */
export async function workloadsUsingSecret(
  paths: McpmgrPaths,
  secret: string,
): Promise<{ users: SecretUser[]; unreadable: string[] }> {
  const { users, unreadable } = await secretUsers(paths);
  return { users: users.get(secret) ?? [], unreadable };
}

/**
 * The workloads using `secret` that run now (or are starting): they looked it up when they started, so a
 * new value reaches them at their next start. A restarting one looks it up again by itself.
 */
export async function runningUsers(paths: McpmgrPaths, secret: string): Promise<string[]> {
  const { users } = await workloadsUsingSecret(paths, secret);
  const store = new WorkloadStore(paths);
  const running: string[] = [];
  for (const user of users) {
    const state = (await currentStatus(store, user.workload).catch(() => undefined))?.state;
    if (state === "running" || state === "starting") running.push(user.workload);
  }
  return running;
}

/**
 * Every secret the recorded workloads name, with its users by workload name (`secret list`): each
 * record read once, whatever the number of secrets; and the records that could not be read.
 */
export async function secretUsers(
  paths: McpmgrPaths,
): Promise<{ users: Map<string, SecretUser[]>; unreadable: string[] }> {
  const { records, unreadable } = await new WorkloadStore(paths).listReadable();
  const users = new Map<string, SecretUser[]>();
  for (const record of [...records].sort((a, b) => a.name.localeCompare(b.name))) {
    const bySecret = new Map<string, string[]>();
    for (const ref of secretReferences(record))
      bySecret.set(ref.secret, [...(bySecret.get(ref.secret) ?? []), ref.via]);
    for (const [secret, via] of bySecret)
      users.set(secret, [...(users.get(secret) ?? []), { workload: record.name, via }]);
  }
  return { users, unreadable };
}

/**
 * Deletes `secret` from a writable `provider`. While recorded workloads use it, that is refused
 * (SECRET_IN_USE, naming them and how) unless `force`: deleting it anyway is the user's call, and
 * the caller then says who still uses it. A secret that is not stored is SECRET_NOT_FOUND either way.
 */
export async function deleteSecret(
  provider: SecretProvider,
  paths: McpmgrPaths,
  secret: string,
  force: boolean,
): Promise<{ users: SecretUser[]; unreadable: string[] }> {
  const found = await workloadsUsingSecret(paths, secret);
  if (found.users.length > 0 && !force && (await provider.list()).includes(secret)) {
    throw new McpmgrError(
      "SECRET_IN_USE",
      `secret '${secret}' is used by ${describeUsers(found.users)}: their next start or restart would fail without it`,
      {
        hint: `remove them first ('mcpmgr rm NAME'), change its value with 'mcpmgr secret set ${secret}', or delete it anyway with 'mcpmgr secret delete ${secret} --force'`,
      },
    );
  }
  if (!(await provider.delete(secret))) {
    // The nearest stored name first, as for a missing secret anywhere else (secrets/manager.ts).
    const near = didYouMean(closeMatches(secret, await provider.list().catch(() => []), { nearestOnly: true }));
    throw new McpmgrError("SECRET_NOT_FOUND", `secret '${secret}' not found`, {
      hint: `${near === undefined ? "" : `${near} `}'mcpmgr secret list' shows the stored names`,
    });
  }
  return found;
}

/** `probe1 (--secret tok,target=TOKEN), remote2 (--remote-forward-headers-secret X-Key=tok)`. */
export function describeUsers(users: readonly SecretUser[]): string {
  return users.map((user) => `${user.workload} (${user.via.join(", ")})`).join(", ");
}

function tryParse<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}
