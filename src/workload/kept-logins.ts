/**
 * What `rm` of a remote workload leaves in the secrets store on purpose (docs/authentication.md
 * "Forgetting a login"): the `oauth-` records of its remote (its login grants, its client home,
 * a remembered challenge), which every workload and `proxy` of that remote shares. `rm` names them
 * and the command that forgets them, in one line.
 */
import { clientHomeKey, deferredLoginKey } from "../auth/outgoing/grant-store.ts";
import { oauthRecords, remoteOf } from "../auth/outgoing/grant-labels.ts";
import { errorMessage } from "../errors.ts";
import { printable } from "../printable.ts";
import { parseSource } from "../runtime/source.ts";
import type { WorkloadRecord } from "../state/workload-record.ts";
import type { WorkloadContext } from "./context.ts";

/** What of a recorded remote workload its OAuth records depend on; undefined: not a remote that logs in with OAuth. */
interface OAuthRemote {
  readonly target: URL;
  readonly clientId: string | undefined;
}

/**
 * How long `rm` waits for a registry given by URL to name a registry entry's remote: the workload is
 * removed already, and this only words a notice, which must not hold `rm` for the 15 s a start may
 * wait (an offline machine, a registry that does not answer).
 */
export const REGISTRY_WAIT_MS = 2_000;

/** The registry could not say which remote an entry names (unreachable, or no answer in time). */
class RegistryUnread extends Error {
  readonly entry: string;
  constructor(entry: string, why: string) {
    super(why);
    this.entry = entry;
  }
}

async function oauthRemoteOf(record: WorkloadRecord, ctx: Pick<WorkloadContext, "env" | "paths">) {
  if (record.runtime !== "remote") return undefined;
  // The options as `run` validated them (record.runOptions, the source among them).
  const { parseRunArgv } = await import("../config/run-argv.ts");
  const values = parseRunArgv(record.runOptions).values;
  const bearer = values["remote-auth-bearer-token"] ?? values["remote-auth-bearer-token-file"];
  const oauth =
    values["remote-auth"] ||
    values["remote-auth-issuer"] !== undefined ||
    values["remote-auth-authorize-url"] !== undefined ||
    values["remote-auth-client-id"] !== undefined;
  if (bearer !== undefined || !oauth) return undefined;
  let source = parseSource(record.source.ref);
  if (source.kind === "registry") {
    // A registry entry's remote: its URL as `run` found it (workload/locate.ts).
    const [{ loadRegistry }, { sourceOf }] = await Promise.all([
      import("../registry/loader.ts"),
      import("../registry/entry.ts"),
    ]);
    let registry: Awaited<ReturnType<typeof loadRegistry>>;
    try {
      registry = await loadRegistry({ env: ctx.env, configDir: ctx.paths.configDir, timeoutMs: REGISTRY_WAIT_MS });
    } catch (err) {
      throw new RegistryUnread(source.name, errorMessage(err));
    }
    source = parseSource(sourceOf(registry.get(source.name)).runTarget);
  }
  if (source.kind !== "remote") return undefined;
  return { target: source.url, clientId: values["remote-auth-client-id"] } satisfies OAuthRemote;
}

/**
 * The line `rm` says about the `oauth-` records it keeps for `record`'s remote, or undefined when
 * the workload is not a remote that logs in with OAuth, or nothing is stored for it.
 */
export async function keptLoginsLine(
  record: WorkloadRecord,
  ctx: Pick<WorkloadContext, "env" | "paths" | "secrets">,
): Promise<string | undefined> {
  let remote: OAuthRemote | undefined;
  try {
    remote = await oauthRemoteOf(record, ctx);
  } catch (err) {
    // Offline, the remote of a registry entry is unknown: say where its login may be, without waiting longer.
    if (err instanceof RegistryUnread)
      return printable(
        `the OAuth login of registry entry ${err.entry}'s remote may be kept in the secrets store; which remote that is could not be read from the registry (${err.message}): 'mcpmgr secret list' describes its oauth- entries`,
      );
    // A record `run` would no longer accept (an edited file, a registry entry gone): nothing to say.
    return undefined;
  }
  if (remote === undefined) return undefined;
  const url = remoteOf(remote.target);
  let names: string[];
  try {
    const secrets = ctx.secrets();
    const stored = new Set(await secrets.provider.list());
    const labelled = await oauthRecords(secrets.provider, [...stored]);
    // Records saved before they carried a label: the ones whose key says the remote.
    const byKey = [
      deferredLoginKey(remote.target),
      ...(remote.clientId ? [clientHomeKey(remote.clientId, remote.target)] : []),
    ];
    names = [...stored].filter((name) => labelled.get(name)?.remote === url || byKey.includes(name));
  } catch (err) {
    return printable(
      `the OAuth login of ${url} may be kept in the secrets store, which could not be read (${errorMessage(err)}): 'mcpmgr secret list' describes its oauth- entries`,
    );
  }
  if (names.length === 0) return undefined;
  // mcpmgr saves its records only where it can write (not the read-only environment provider).
  const forget = names.map((name) => `mcpmgr secret delete ${name}`).join(" && ");
  return printable(
    `the OAuth login of ${url} stays in the secrets store for every workload and proxy of that remote (${names.join(", ")}); to forget it: ${forget}`,
  );
}
