/**
 * Which of a group's workloads are running right now, followed over time. The workload store
 * is a folder of small JSON files replaced by atomic renames, so reading it is cheap: the
 * gateway re-reads it on a short interval, and sooner when `fs.watch` reports a change in the
 * workloads folder (a workload created or removed). A status that says "running" counts only
 * while its pid is still that workload's supervisor (state/supervisor-identity.ts: a pid that
 * died and came round to another process, or another user's, does not), and a background
 * gateway never counts.
 */
import { type FSWatcher, watch } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { parseRunArgv } from "../config/run-argv.ts";
import { isCredentialHeader } from "../secrets/credential-header.ts";
import { isSecretVariable, secretValues } from "../secrets/credential-variables.ts";
import { hasOwnAuthentication } from "../state/gateway-guard.ts";
import { isSupervisorOf, type SupervisorHome } from "../state/supervisor-identity.ts";
import { workloadUrl } from "../state/workload-url.ts";
import type { WorkloadRecord } from "../state/workload-record.ts";
import { isGatewayRecord, reconcileStatus, type WorkloadStore } from "../state/workloads.ts";

export interface Member {
  readonly name: string;
  /** The workload's MCP endpoint. */
  readonly url: string;
  /** The installation's gateway key (state/gateway-guard.ts), presented as a bearer token to the member. */
  readonly credential?: string;
  /** The workload was run with `--oidc-*` of its own (then only a gateway that authenticates may serve it). */
  readonly ownAuthentication?: boolean;
  /** The workload holds secrets (holdsSecrets): what it answers may quote them, and only it can redact them. */
  readonly holdsSecrets?: boolean;
  /**
   * Its supervisor, whose pid the membership keeps current (one object per workload name, updated in
   * place: connections opened before a restart see the new supervisor): nothing is sent to the port
   * once that process is gone (member-send.ts).
   */
  readonly supervisor?: Supervisor;
}

/** A member's supervisor as last read from its status. */
export interface Supervisor {
  pid: number;
  /** The home whose supervisor it must be (state/supervisor-identity.ts). */
  readonly home: SupervisorHome;
}

export interface MembershipOptions {
  readonly store: WorkloadStore;
  readonly group: string;
  /** Called with the full member list whenever it changes (and once at start). */
  readonly onChange: (members: readonly Member[]) => void;
  readonly onError?: (err: unknown) => void;
  readonly pollMs?: number;
}

export interface Membership {
  /** The members as last read. */
  current(): readonly Member[];
  /** Re-reads the store now (also what the timer does). */
  refresh(): Promise<void>;
  /**
   * For a call to a member held as gone: reads that workload's own record and status (two small files,
   * whatever the size of the home) and, when it runs again, the membership anew (the read begun after
   * this call), so the member is known back before the call is answered.
   */
  readBack(name: string): Promise<void>;
  close(): void;
}

export async function runningMembers(store: WorkloadStore, group: string): Promise<Member[]> {
  const members: Member[] = [];
  for (const record of (await store.listReadable()).records) {
    const member = await memberOf(store, group, record);
    if (member !== undefined) members.push(member);
  }
  return members;
}

/** The workload as a running member of `group`, or undefined. */
async function memberOf(store: WorkloadStore, group: string, record: WorkloadRecord): Promise<Member | undefined> {
  // A background gateway is a workload record too, but never a member: no gateway aggregates itself or another.
  if (record.group !== group || isGatewayRecord(record)) return undefined;
  const status = await store.readStatus(record.name).catch(() => undefined);
  if (
    status === undefined ||
    reconcileStatus(status, (pid) => isSupervisorOf(pid, record.name, store.paths)).state !== "running"
  )
    return undefined;
  // A running status without its supervisor's pid is not one mcpmgr wrote (a hand-edited file): no
  // supervisor is known to hold that port, so the gateway key is not sent there (member-send.ts).
  if (status.pid === undefined) return undefined;
  return {
    name: record.name,
    // The URL MCP clients use too: the address the member listens on, never a name to resolve.
    url: workloadUrl(record),
    supervisor: { pid: status.pid, home: store.paths },
    ...(hasOwnAuthentication(record) ? { ownAuthentication: true } : {}),
    // The supervisor's word counts too: a registry entry's default that is a secret is in no record.
    ...(status.holdsSecrets === true || holdsSecrets(record) ? { holdsSecrets: true } : {}),
  };
}

/**
 * Whether a workload is given secret values, the ones its own audit redacts: `--secret` (its
 * server's environment), the plain variables that are secrets by name or form (`-e OPENAI_API_KEY=…`,
 * and those of its `--env-file` and `--env-file-dir`: secrets/credential-variables.ts), and for a remote
 * the secret headers and tokens mcpmgr sends it (`--remote-forward-headers-secret`, `--remote-auth*`,
 * `--token-exchange-*`, a plain `--remote-forward-headers` credential an old record still has). What the
 * record cannot say (a registry entry's default that is a secret) its running supervisor's status does:
 * memberOf counts both.
 */
export function holdsSecrets(record: WorkloadRecord): boolean {
  if (record.secrets.length > 0) return true;
  const end = record.runOptions.indexOf("--");
  const own = end === -1 ? record.runOptions : record.runOptions.slice(0, end);
  if (
    own.some(
      (arg) =>
        arg.startsWith("--remote-forward-headers-secret") ||
        arg.startsWith("--remote-auth") ||
        arg.startsWith("--token-exchange"),
    )
  )
    return true;
  return holdsSecretVariables(record);
}

/**
 * The plain variables as the member's start read them: `-e` from its options, the files read again
 * (small, and read at each start of the member too). Options that do not parse, or a file that cannot
 * be read now, count as holding secrets: the gateway cannot tell, and a miss would put them in its audit.
 */
function holdsSecretVariables(record: WorkloadRecord): boolean {
  // A record without options (written by hand, or by a version before they were recorded): its `env` is all there is.
  if (record.runOptions.length === 0)
    return Object.entries(record.env ?? {}).some(([name, value]) => isSecretVariable(name, value));
  try {
    const { values } = parseRunArgv(record.runOptions);
    if (values.env.some((pair) => isSecretVariable(pair.key, pair.value))) return true;
    // A plain header that is a credential: a new background run is refused it, a record from before is
    // started with it (warned) and its workload redacts it.
    if (values["remote-forward-headers"].some((header) => isCredentialHeader(header.name, header.value))) return true;
    const at = (path: string) => (isAbsolute(path) ? path : resolve(record.workingDir ?? ".", path));
    const dir = values["env-file-dir"];
    const file = values["env-file"];
    if (dir === undefined && file === undefined) return false;
    // The env-file parser (dotenv) only for a member that names a file, as its start loads it; required,
    // not imported: this is synchronous.
    const envFiles = require("../config/env-files.ts") as typeof import("../config/env-files.ts");
    if (dir !== undefined && secretValues(envFiles.loadEnvDir(at(dir))).length > 0) return true;
    return file !== undefined && secretValues(envFiles.loadEnvFile(at(file))).length > 0;
  } catch {
    return true;
  }
}

/** How long a member that held secrets keeps the gateway's audit data withheld after it left (redact.ts RETIRED_KEEP_MS). */
export const WITHHELD_AFTER_LEAVING_MS = 60 * 60_000;

/**
 * Why the gateway's audit records no data now, if it does not (middleware/audit.ts `withhold`): some
 * members hold secrets, and their answers may quote them (a server printing its environment, a remote
 * echoing its headers) while only the member knows them; copying them into the gateway to redact there
 * would spread them to one more process. Each member's own audit records its calls with them redacted.
 * A member that left keeps it so for WITHHELD_AFTER_LEAVING_MS: an answer of its still on its way when it
 * stopped, or a client's later request quoting one, holds its secrets as well. Fed by every change of the
 * membership, so a member that joins and leaves between two records counts too. Meanwhile resource URIs
 * lose their userinfo, query and fragment in the audit, the spans and the log (middleware/withheld-uri.ts).
 */
export interface SecretHolders {
  /** The members as they are now (the membership's onChange): holders seen join, and leave. */
  see(members: readonly Member[]): void;
  /** The reason to withhold data now, if any. */
  withhold(): string | undefined;
}

export function secretHolders(now: () => number = Date.now): SecretHolders {
  /** Secret-holding members that left, by name → when they left. */
  const left = new Map<string, number>();
  let present: readonly string[] = [];
  return {
    see(members) {
      const next = members.filter((member) => member.holdsSecrets).map((member) => member.name);
      for (const name of present) if (!next.includes(name)) left.set(name, now());
      for (const name of next) left.delete(name);
      present = next;
    },
    withhold() {
      // Asked for each audited resource and reason: a group without holders costs one test.
      if (present.length === 0 && left.size === 0) return undefined;
      const at = now();
      for (const [name, when] of left) if (at - when >= WITHHELD_AFTER_LEAVING_MS) left.delete(name);
      const names = [...present, ...[...left.keys()].map((name) => `${name} (left)`)];
      if (names.length === 0) return undefined;
      return `${names.join(", ")} hold${names.length === 1 ? "s" : ""} secrets the gateway cannot redact; see ${names.length === 1 ? "its" : "their"} own audit`;
    },
  };
}

export async function followMembership(options: MembershipOptions): Promise<Membership> {
  let members: readonly Member[] = [];
  /** One Supervisor per workload name, kept across reads: the members handed out earlier see a restart's new pid. */
  const supervisors = new Map<string, Supervisor>();
  const keepSupervisor = (member: Member): Member => {
    if (member.supervisor === undefined) return member;
    const kept = supervisors.get(member.name) ?? member.supervisor;
    kept.pid = member.supervisor.pid;
    supervisors.set(member.name, kept);
    return { ...member, supervisor: kept };
  };
  /**
   * Members seen holding secrets, by name → their supervisor's pid then. Held so while that supervisor runs:
   * its server was started with what its env files said then, and an edit that takes a key out of a file (or
   * a file half written when it is read) does not take it out of the running server, whose words must stay
   * unquoted (member-words.ts). A new supervisor (the workload restarted) is judged anew.
   */
  const held = new Map<string, number>();
  const keepHolding = (member: Member): Member => {
    const pid = member.supervisor?.pid;
    if (member.holdsSecrets === true) {
      if (pid !== undefined) held.set(member.name, pid);
      return member;
    }
    return pid !== undefined && held.get(member.name) === pid ? { ...member, holdsSecrets: true } : member;
  };
  let key = "";
  let closed = false;
  let running: Promise<void> | undefined;
  let again = false;
  /** Reads begun and reads done, counted: a caller waits for the one read that begins after it asked. */
  let begun = 0;
  let done = 0;
  const waiting: { readonly after: number; readonly resolve: () => void }[] = [];
  const settle = () => {
    for (const waiter of waiting.splice(0)) {
      if (waiter.after <= done || closed) waiter.resolve();
      else waiting.push(waiter);
    }
  };
  const refresh = async (): Promise<void> => {
    // One read at a time; a change seen during a read triggers one more read after it.
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        const read = ++begun;
        try {
          const next = (await runningMembers(options.store, options.group)).map(keepSupervisor).map(keepHolding);
          for (const name of held.keys()) if (!next.some((member) => member.name === name)) held.delete(name);
          // Everything a member's record decides is in the key: a workload removed and run again under its
          // name and port with --secret must be seen to hold secrets (the gateway's audit withholds then).
          const nextKey = next
            .map((m) => `${m.name} ${m.url} ${m.ownAuthentication === true} ${m.holdsSecrets === true}`)
            .join("\n");
          if (nextKey !== key && !closed) {
            key = nextKey;
            members = next;
            options.onChange(members);
          }
        } catch (err) {
          options.onError?.(err);
        }
        done = read;
        settle();
      } while (again && !closed);
    })().finally(() => {
      running = undefined;
      settle();
    });
    return running;
  };
  /**
   * Resolves once a read begun after this call is done. Not `refresh`'s own promise: callers asking all
   * the time (calls to a stopped member under load) keep its reads going one after another, and each of
   * them waited for all of those reads, for as long as the calls kept coming.
   */
  const readFresh = (): Promise<void> =>
    new Promise<void>((resolve) => {
      waiting.push({ after: begun + 1, resolve });
      void refresh();
    });
  // Under a stream of calls to a member that stays stopped, reading the whole membership for each kept the
  // gateway reading the store back to back (every workload's files), starving every other request.
  const readBack = async (name: string): Promise<void> => {
    const record = await options.store.get(name).catch(() => undefined);
    const back = record === undefined ? undefined : await memberOf(options.store, options.group, record);
    if (back !== undefined) await readFresh();
  };
  await refresh();
  const timer = setInterval(() => void refresh(), options.pollMs ?? 1_000);
  timer.unref();
  let debounce: ReturnType<typeof setTimeout> | undefined;
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(join(options.store.paths.stateDir, "workloads"), { recursive: true }, () => {
      clearTimeout(debounce);
      debounce = setTimeout(() => void refresh(), 50);
    });
    watcher.on("error", () => watcher?.close());
  } catch {
    // No workloads folder yet (or no watch support): the timer alone notices changes.
  }
  return {
    current: () => members,
    refresh,
    readBack,
    close() {
      closed = true;
      settle();
      clearInterval(timer);
      clearTimeout(debounce);
      watcher?.close();
    },
  };
}
