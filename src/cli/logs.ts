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
    let offset = await copyFrom(path, 0);
    if (!values.follow) {
      if (offset === 0) log.info(`no ${values.proxy ? "proxy " : ""}output from ${name} yet`);
      return;
    }
    for (;;) {
      await Bun.sleep(250);
      const next = await copyFrom(path, offset);
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

/** Writes the file from `offset` to stdout; returns the new offset (unchanged if it does not exist). */
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
    if (size === offset) return offset;
    const buffer = Buffer.alloc(size - offset);
    await handle.read(buffer, 0, buffer.length, offset);
    process.stdout.write(buffer);
    return size;
  } finally {
    await handle.close();
  }
}
