/**
 * `mcpmgr logs NAME [-f] [--proxy]`: the server's output (or the proxy's with --proxy). A
 * background gateway has no server: its log is the one its supervisor writes.
 */
import { defineCommand } from "citty";
import { open } from "node:fs/promises";
import { logsOptions as table } from "../config/command-options.ts";
import { isGatewayRecord, type WorkloadRecord, type WorkloadStore } from "../state/workloads.ts";
import { toCittyArgs, withExamples } from "./citty-args.ts";
import { log } from "./output.ts";
import { openStore, parseNamed } from "./workload-arg.ts";

const logsCommand = defineCommand({
  meta: { name: "logs", description: "Show a workload's logs" },
  args: toCittyArgs(table, { NAME: { description: "Workload name", required: true, completes: "workloads" } }),
  async run({ rawArgs }) {
    const { name, values } = parseNamed(rawArgs, table, "logs");
    const store = openStore();
    const record = await store.getExisting(name);
    const path = values.proxy || isGatewayRecord(record) ? store.proxyLogPath(name) : store.logPath(name);
    const first = await copyFrom(path, 0);
    // The reader went away (`mcpmgr logs NAME | head`): done, nothing to report.
    if (first === READER_GONE) return;
    let offset = first;
    if (!values.follow) {
      if (offset === 0) log.info(`no ${values.proxy ? "proxy " : ""}output from ${name} yet`);
      return;
    }
    for (;;) {
      await Bun.sleep(250);
      const next = await copyFrom(path, offset);
      if (next === READER_GONE) return;
      // Nothing new: the workload may be gone (`rm` deletes its logs), or replaced by a new one of the same name.
      if (next === offset && !(await sameWorkload(store, record))) {
        log.info(`${name} was removed; no more output to follow`);
        return;
      }
      offset = next;
    }
  },
});

export default withExamples(logsCommand, [
  { description: "Show what the server 'fetch' has written so far", command: "mcpmgr logs fetch" },
  { description: "Follow it as it goes (Ctrl-C stops)", command: "mcpmgr logs fetch -f" },
  { description: "Show the proxy's log: requests, logins, restarts", command: "mcpmgr logs fetch --proxy" },
]);

async function sameWorkload(store: WorkloadStore, followed: WorkloadRecord): Promise<boolean> {
  const current = await store.get(followed.name).catch(() => followed);
  return current !== undefined && current.createdAt === followed.createdAt;
}

/** How much of a log is held at once: logs are never rotated, and may have grown for weeks. */
const CHUNK_BYTES = 1 << 20;

const READER_GONE = -1;

/** Writes the file from `offset` to stdout; returns the new offset (unchanged if it does not exist), or READER_GONE. */
async function copyFrom(path: string, offset: number): Promise<number> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, "r");
  } catch {
    return offset;
  }
  try {
    const { size } = await handle.stat();
    if (size < offset) offset = 0; // truncated or replaced
    const buffer = Buffer.alloc(Math.min(CHUNK_BYTES, size - offset));
    while (offset < size) {
      const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, size - offset), offset);
      if (bytesRead === 0) break;
      // Copied (the buffer is reused), and waited for when the reader is slower than the disk (`| less`).
      if (!(await writeOut(Buffer.from(buffer.subarray(0, bytesRead))))) return READER_GONE;
      offset += bytesRead;
    }
    return offset;
  } finally {
    await handle.close();
  }
}

/** False once the reader of stdout is gone (EPIPE): there is nobody to write to, and nothing went wrong. */
async function writeOut(chunk: Buffer): Promise<boolean> {
  try {
    if (process.stdout.write(chunk)) return true;
  } catch (err) {
    if ((err as { code?: unknown }).code === "EPIPE") return false;
    throw err;
  }
  return new Promise<boolean>((resolve) => {
    const settle = (ok: boolean) => {
      process.stdout.off("drain", drained);
      process.stdout.off("error", failed);
      resolve(ok);
    };
    const drained = () => settle(true);
    const failed = () => settle(false);
    process.stdout.once("drain", drained);
    process.stdout.once("error", failed);
  });
}
