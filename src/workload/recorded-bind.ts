/**
 * Where the supervisor of a workload recorded with a loopback name really listens, when that is not
 * where its URL points. An mcpmgr from before loopback names were bound as their address (config/
 * loopback.ts) recorded `--host localhost` as "localhost" and left it to the resolver, which binds
 * ::1 first on many machines; the URL of that record now names 127.0.0.1. Until the workload is
 * restarted, `list` shows where it really answers and says that a restart puts it where its clients'
 * entries point. Linux only (the kernel's socket tables, state/listener-owner.ts).
 */
import { loopbackNameAddress } from "../config/loopback.ts";
import { listenerHeldBy } from "../state/listener-owner.ts";
import type { WorkloadRecord } from "../state/workload-record.ts";
import { clientUrl, workloadUrl } from "../state/workload-url.ts";

export interface MisplacedListener {
  /** The URL the supervisor `pid` really answers at. */
  readonly url: string;
  /** One line for the user: where it listens, where its clients go, and the way out. */
  readonly note: string;
}

export function misplacedListener(record: WorkloadRecord, pid: number): MisplacedListener | undefined {
  const named = loopbackNameAddress(record.host);
  if (named === undefined || process.platform !== "linux") return undefined;
  if (listenerHeldBy(pid, named, record.proxyPort)) return undefined;
  const other = named === "127.0.0.1" ? "::1" : "127.0.0.1";
  if (!listenerHeldBy(pid, other, record.proxyPort)) return undefined;
  const url = clientUrl(other, record.proxyPort, record.proxyPath);
  return {
    url,
    note: `${record.name}'s supervisor, started by an earlier mcpmgr, listens at ${url}, not at ${workloadUrl(record)} where its clients' entries point (hint: 'mcpmgr restart ${record.name}' moves it there)`,
  };
}
