/**
 * `mcpmgr logs NAME [-f] [--proxy]`: the server's output (or the proxy's with --proxy). A
 * background gateway and a remote have no server process: their log is the one the supervisor writes. Both logs are
 * rotated at a size cap (`<log>.1`, state/log-files.ts): both parts are shown, and `-f` follows
 * across a rotation.
 */
import { defineCommand } from "citty";
import { logsOptions as table } from "../config/command-options.ts";
import { isGatewayRecord, type WorkloadRecord, type WorkloadStore } from "../state/workloads.ts";
import { copyNew, copyWhole, type LogPosition, READER_GONE } from "../state/log-files.ts";
import { toCittyArgs, withExamples } from "./citty-args.ts";
import { log, writeStdout } from "./output.ts";
import { openStore, parseNamed } from "./workload-arg.ts";

const logsCommand = defineCommand({
  meta: {
    name: "logs",
    description:
      "Show a workload's logs: the server's output, each run opened by a timed 'mcpmgr: ---- NAME starts' line (a gateway's or a remote's: its proxy log)",
  },
  args: toCittyArgs(table, { NAME: { description: "Workload name", required: true, completes: "workloads" } }),
  async run({ rawArgs }) {
    const { name, values } = parseNamed(rawArgs, table, "logs");
    const store = openStore();
    const record = await store.getExisting(name);
    // A remote has no server here either: what there is to read (its login URL, its errors) is the proxy's log.
    const proxy = values.proxy || isGatewayRecord(record) || record.runtime === "remote";
    // Both logs are rotated at a size cap (state/log-files.ts): the older part is shown first.
    const files = store.logFiles(name, proxy ? "proxy" : "server");
    const first = await copyWhole(files, writeOut);
    // The reader went away (`mcpmgr logs NAME | head`): done, nothing to report.
    if (first === READER_GONE) return;
    // Said when following too: a follow of an empty log otherwise shows nothing at all until a line comes.
    if (first.copied === 0) log.info(emptyLogNote(record, values.proxy));
    if (!values.follow) return;
    let at: LogPosition = first;
    for (;;) {
      await Bun.sleep(250);
      const next = await copyNew(files, at, writeOut);
      if (next === READER_GONE) return;
      // Nothing new: the workload may be gone (`rm` deletes its logs), or replaced by a new one of the same name.
      if (next.ino === at.ino && next.offset === at.offset && !(await sameWorkload(store, record))) {
        log.info(`${name} was removed; no more output to follow`);
        return;
      }
      at = next;
    }
  },
});

export default withExamples(logsCommand, [
  { description: "Show what the server 'fetch' has written so far", command: "mcpmgr logs fetch" },
  { description: "Follow it as it goes (Ctrl-C stops)", command: "mcpmgr logs fetch -f" },
  { description: "Show the proxy's log: requests, logins, restarts", command: "mcpmgr logs fetch --proxy" },
]);

/**
 * What an empty log means, by what the log holds: a server's output (each run opened by a timed line), or the
 * supervisor's own lines, which are all a gateway or a remote logs here (no server of theirs runs on this machine).
 */
function emptyLogNote(record: WorkloadRecord, proxyAsked: boolean): string {
  const { name } = record;
  if (isGatewayRecord(record))
    return `${name}'s log is empty so far: a gateway runs no server of its own, so its log holds its supervisor's lines (each start and stop, warnings, errors)`;
  if (record.runtime === "remote")
    return `${name}'s log is empty so far: a remote workload's server runs elsewhere, so its log holds its supervisor's lines (each start and stop, login URLs, errors)`;
  if (proxyAsked)
    return `${name}'s proxy log is empty so far: it holds its supervisor's lines (each start, restart and stop, errors)`;
  return `${name}'s log is empty so far: it holds what its server writes, each run opened by a timed 'mcpmgr: ---- ${name} starts' line (its supervisor's lines: 'mcpmgr logs ${name} --proxy')`;
}

async function sameWorkload(store: WorkloadStore, followed: WorkloadRecord): Promise<boolean> {
  const current = await store.get(followed.name).catch(() => followed);
  return current !== undefined && current.createdAt === followed.createdAt;
}

/**
 * False once the reader of stdout is gone (EPIPE): there is nobody to write to, and nothing went wrong.
 * Any other failure (ENOSPC, EIO) is an OUTPUT_FAILED error: the log was not shown.
 */
async function writeOut(chunk: Buffer): Promise<boolean> {
  return writeStdout(chunk);
}
