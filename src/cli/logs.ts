/**
 * `mcpmgr logs NAME [-f] [--proxy]`: the server's output (or the proxy's with --proxy). A
 * background gateway has no server: its log is the one its supervisor writes.
 */
import { defineCommand } from "citty";
import { open } from "node:fs/promises";
import { booleanOption } from "../config/option-spec.ts";
import { isGatewayRecord } from "../state/workloads.ts";
import { toCittyArgs } from "./citty-args.ts";
import { log } from "./output.ts";
import { openStore, parseNamed } from "./workload-arg.ts";

const table = {
  follow: booleanOption({ short: "f", description: "Keep printing new output until Ctrl-C", default: false }),
  proxy: booleanOption({ description: "Show the proxy's log instead of the server's", default: false }),
} as const;

export default defineCommand({
  meta: { name: "logs", description: "Show a workload's logs" },
  args: toCittyArgs(table, { NAME: { description: "Workload name", required: true } }),
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
      offset = await copyFrom(path, offset);
    }
  },
});

/** Writes the file from `offset` to stdout; returns the new offset (0 if it does not exist). */
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
