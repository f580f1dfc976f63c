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
import { join } from "node:path";
import { hasOwnAuthentication } from "../state/gateway-guard.ts";
import { isSupervisorOf } from "../state/supervisor-identity.ts";
import { workloadUrl } from "../state/workload-url.ts";
import { isGatewayRecord, reconcileStatus, type WorkloadStore } from "../state/workloads.ts";

export interface Member {
  readonly name: string;
  /** The workload's MCP endpoint. */
  readonly url: string;
  /** The installation's gateway key (state/gateway-guard.ts), presented as a bearer token to the member. */
  readonly credential?: string;
  /** The workload was run with `--oidc-*` of its own (then only a gateway that authenticates may serve it). */
  readonly ownAuthentication?: boolean;
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
  close(): void;
}

export async function runningMembers(store: WorkloadStore, group: string): Promise<Member[]> {
  const members: Member[] = [];
  for (const record of (await store.listReadable()).records) {
    // A background gateway is a workload record too, but never a member: no gateway aggregates itself or another.
    if (record.group !== group || isGatewayRecord(record)) continue;
    const status = await store.readStatus(record.name).catch(() => undefined);
    if (status === undefined || reconcileStatus(status, (pid) => isSupervisorOf(pid, record.name)).state !== "running")
      continue;
    // A running status without its supervisor's pid is not one mcpmgr wrote (a hand-edited file): no
    // supervisor is known to hold that port, so the gateway key is not sent there (member-send.ts).
    if (status.pid === undefined) continue;
    members.push({
      name: record.name,
      // The URL MCP clients use too: the address the member listens on, never a name to resolve.
      url: workloadUrl(record),
      supervisor: { pid: status.pid },
      ...(hasOwnAuthentication(record) ? { ownAuthentication: true } : {}),
    });
  }
  return members;
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
  let key = "";
  let closed = false;
  let running: Promise<void> | undefined;
  let again = false;
  const refresh = async (): Promise<void> => {
    // One read at a time; a change seen during a read triggers one more read after it.
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        try {
          const next = (await runningMembers(options.store, options.group)).map(keepSupervisor);
          const nextKey = next.map((m) => `${m.name} ${m.url} ${m.ownAuthentication === true}`).join("\n");
          if (nextKey !== key && !closed) {
            key = nextKey;
            members = next;
            options.onChange(members);
          }
        } catch (err) {
          options.onError?.(err);
        }
      } while (again && !closed);
    })().finally(() => {
      running = undefined;
    });
    return running;
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
    close() {
      closed = true;
      clearInterval(timer);
      clearTimeout(debounce);
      watcher?.close();
    },
  };
}
