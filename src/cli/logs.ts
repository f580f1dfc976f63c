/**
 * `mcpmgr logs NAME [-f] [--proxy]`: the server's output (or the proxy's with --proxy). A
 * background gateway has no server: its log is the one its supervisor writes. The server's log
 * is rotated at a size cap (`<log>.1`, workload/supervisor.ts): both parts are shown, and `-f`
 * follows across a rotation.
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
    const proxy = values.proxy || isGatewayRecord(record);
    // The server's log is rotated at a size cap (workload/supervisor.ts): its older part is shown first.
    const files = proxy
      ? { path: store.proxyLogPath(name), rotated: undefined }
      : { path: store.logPath(name), rotated: store.rotatedLogPath(name) };
    const first = await copyWhole(files);
    // The reader went away (`mcpmgr logs NAME | head`): done, nothing to report.
    if (first === READER_GONE) return;
    if (!values.follow) {
      if (first.copied === 0) log.info(`no ${values.proxy ? "proxy " : ""}output from ${name} yet`);
      return;
    }
    let at: Position = first;
    for (;;) {
      await Bun.sleep(250);
      const next = await copyNew(files, at);
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

async function sameWorkload(store: WorkloadStore, followed: WorkloadRecord): Promise<boolean> {
  const current = await store.get(followed.name).catch(() => followed);
  return current !== undefined && current.createdAt === followed.createdAt;
}

/** How much of a log is held at once: a log may be as large as its cap (10 MiB unless set higher). */
const CHUNK_BYTES = 1 << 20;

const READER_GONE = "reader gone";

interface LogFiles {
  readonly path: string;
  /** Where a rotation moves the log (`<log>.1`); none for the proxy's log. */
  readonly rotated: string | undefined;
}

/**
 * How far the log was copied: the file (by inode, which a rotation or a new file changes, the
 * path staying the same) and how many of its bytes.
 */
interface Position {
  readonly ino: number | undefined;
  readonly offset: number;
}

type FileHandle = Awaited<ReturnType<typeof open>>;

async function openIfThere(path: string): Promise<FileHandle | undefined> {
  try {
    return await open(path, "r");
  } catch {
    return undefined;
  }
}

/** The rotated part, then the log: everything kept, in the order it was written. */
async function copyWhole(files: LogFiles): Promise<(Position & { copied: number }) | typeof READER_GONE> {
  // The log is opened first: rotated between the two opens, it is the rotated file too, and still read whole.
  const current = await openIfThere(files.path);
  try {
    const ino = current === undefined ? undefined : (await current.stat()).ino;
    let copied = 0;
    const older = files.rotated === undefined ? undefined : await openIfThere(files.rotated);
    if (older !== undefined) {
      try {
        if ((await older.stat()).ino !== ino) {
          const end = await copyFrom(older, 0);
          if (end === READER_GONE) return READER_GONE;
          copied += end;
        }
      } finally {
        await older.close();
      }
    }
    if (current === undefined) return { ino, offset: 0, copied };
    const end = await copyFrom(current, 0);
    if (end === READER_GONE) return READER_GONE;
    return { ino, offset: end, copied: copied + end };
  } finally {
    await current?.close();
  }
}

/**
 * What was written since `at`. When the log followed was rotated, the rest of it is read from
 * the rotated file first, then the new log from its start: nothing is lost or shown twice (unless
 * the log was rotated twice within one poll). A log truncated in place is read again from its start.
 */
async function copyNew(files: LogFiles, at: Position): Promise<Position | typeof READER_GONE> {
  const current = await openIfThere(files.path);
  try {
    const stat = current === undefined ? undefined : await current.stat();
    let position = at;
    if (at.ino !== undefined && stat?.ino !== at.ino) {
      const rest = await copyRestOfRotated(files.rotated, at);
      if (rest === READER_GONE) return READER_GONE;
      // The new log has not been written yet: keep following the rotated one's inode until it is.
      if (current === undefined || stat === undefined) return rest;
      position = { ino: stat.ino, offset: 0 };
    }
    if (current === undefined || stat === undefined) return position;
    const from = position.ino === stat.ino && position.offset <= stat.size ? position.offset : 0;
    const end = await copyFrom(current, from);
    return end === READER_GONE ? READER_GONE : { ino: stat.ino, offset: end };
  } finally {
    await current?.close();
  }
}

/** The rest of the log followed, if the rotated file is it; else (removed, replaced) nothing. */
async function copyRestOfRotated(rotated: string | undefined, at: Position): Promise<Position | typeof READER_GONE> {
  const older = rotated === undefined ? undefined : await openIfThere(rotated);
  if (older === undefined) return at;
  try {
    if ((await older.stat()).ino !== at.ino) return at;
    const end = await copyFrom(older, at.offset);
    return end === READER_GONE ? READER_GONE : { ino: at.ino, offset: end };
  } finally {
    await older.close();
  }
}

/** Writes the file from `offset` to its current end to stdout; returns the new offset, or READER_GONE. */
async function copyFrom(handle: FileHandle, offset: number): Promise<number | typeof READER_GONE> {
  const { size } = await handle.stat();
  if (size <= offset) return offset;
  const buffer = Buffer.alloc(Math.min(CHUNK_BYTES, size - offset));
  while (offset < size) {
    const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, size - offset), offset);
    if (bytesRead === 0) break;
    // Copied (the buffer is reused), and waited for when the reader is slower than the disk (`| less`).
    if (!(await writeOut(Buffer.from(buffer.subarray(0, bytesRead))))) return READER_GONE;
    offset += bytesRead;
  }
  return offset;
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
