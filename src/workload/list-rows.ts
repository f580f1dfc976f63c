/**
 * `mcpmgr list`'s rows: every recorded workload (of one group, when asked) with its real status,
 * read from its supervisor (a dead one shows as failed), and the URL its clients use (where an older
 * supervisor really answers, when that differs: recorded-bind.ts).
 */
import { workloadUrl } from "../state/workload-url.ts";
import type { WorkloadRecord } from "../state/workload-record.ts";
import type { WorkloadStore } from "../state/workloads.ts";
import { loopbackNameAddress } from "../config/loopback.ts";
import { LAST_OUTPUT } from "./server-output.ts";
import { currentStatus } from "./supervisor-control.ts";

export interface WorkloadRow {
  readonly name: string;
  readonly status: string;
  readonly url: string;
  readonly source: string;
  readonly group: string;
  readonly runtime: string;
  readonly restarts: number;
  readonly lastError?: string;
}

/**
 * The rows, and why each record that cannot be read was not listed (a file broken by hand, one a
 * newer mcpmgr wrote): the others are listed regardless, since one bad file must not hide them all.
 */
export async function workloadRows(
  store: WorkloadStore,
  group?: string,
): Promise<{ rows: WorkloadRow[]; unreadable: unknown[]; hints: Map<string, string>; notes: string[] }> {
  const rows: WorkloadRow[] = [];
  // Lines about running workloads that answer elsewhere than their URL (recorded-bind.ts).
  const notes: string[] = [];
  // A failed workload's own way out, where the usual 'start NAME' would fail again (its port or container name taken).
  const hints = new Map<string, string>();
  const { records, errors } = await store.listReadable();
  for (const record of records) {
    if (group !== undefined && record.group !== group) continue;
    const status = await currentStatus(store, record.name);
    const serving = status?.pid !== undefined && (status.state === "running" || status.state === "restarting");
    // Only records an earlier mcpmgr wrote keep a loopback name: the module (socket tables) is loaded for those alone.
    const misplaced =
      serving && loopbackNameAddress(record.host) !== undefined
        ? (await import("./recorded-bind.ts")).misplacedListener(record, status.pid as number)
        : undefined;
    if (misplaced !== undefined) notes.push(misplaced.note);
    rows.push({
      name: record.name,
      status: status?.state ?? "stopped",
      url: misplaced?.url ?? workloadUrl(record),
      source: record.source.ref,
      group: record.group,
      runtime: record.runtime,
      restarts: status?.restarts ?? 0,
      ...(status?.lastError ? { lastError: withoutOutputMark(status.lastError) } : {}),
    });
    const hint =
      status?.state !== "failed"
        ? undefined
        : status.lastCode === "WORKLOAD_EXISTS"
          ? (await import("./lifecycle.ts")).nameTakenHint(record)
          : await takenPortHint(record);
    if (hint !== undefined) hints.set(record.name, hint);
  }
  return { rows, unreadable: errors, hints, notes };
}

/**
 * How to free or move a failed workload whose port another program listens on now (its supervisor is
 * gone, so the listener is not mcpmgr's): loaded only for a failed workload, which `list` rarely has.
 */
async function takenPortHint(record: WorkloadRecord): Promise<string | undefined> {
  const { portInUse } = await import("../proxy/serve.ts");
  if (!portInUse(record.proxyPort, record.host)) return undefined;
  const { portTakenHint } = await import("./lifecycle.ts");
  return portTakenHint(record);
}

/**
 * A crash's reason as the status keeps it ends where the log goes on with the server's last output
 * (`…; its last output:`); the output is in the log, not in the status, so the row ends the reason there.
 */
function withoutOutputMark(reason: string): string {
  return reason.endsWith(LAST_OUTPUT) ? reason.slice(0, -LAST_OUTPUT.length) : reason;
}
