/**
 * A resource read of a URI no member lists is answered at once, whatever the members that left: it looks
 * again only at the members that left having listed that URI (gateway/catalog.ts `mayServe`). It used to read
 * the record of every member that ever left the group, for every such read, so any client could keep the
 * gateway reading the workload store, and each of its reads waited for them (up to the gateway's timeout).
 * Here the record of the member that left cannot be read at all (a FIFO nobody writes): a read of it would
 * hold the answer for the whole bound.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { constants, openSync, closeSync, writeSync } from "node:fs";
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createTestGroup, PROBE_FIXTURE, type TestGroup, until } from "../support/gateway-group.ts";

setDefaultTimeout(60_000);

let group: TestGroup;
let gatewayUrl: string;

beforeAll(async () => {
  group = await createTestGroup();
  group.run(await group.packageOf(PROBE_FIXTURE), "left", "uris");
  gatewayUrl = (await group.gateway("uris")).url;
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
});

test("an unknown URI is answered at once, without reading the members that left", async () => {
  const client = new Client({ name: "unknown-uri-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(gatewayUrl)));
  const record = join(group.home, "state", "workloads", "left", "workload.json");
  const saved = await readFile(record, "utf8");
  let fifo = false;
  try {
    const read = (uri: string) =>
      client.readResource({ uri }).then(
        (result) => JSON.stringify(result),
        (err: Error) => `failed: ${err.message}`,
      );
    expect(await read("probe://r1")).toContain("contents of probe://r1");
    expect(group.mcpmgr("stop", "left").code).toBe(0);
    expect(await until(async () => (await read("probe://r1")).includes("not found"))).toBe(true);

    // The member's record can no longer be read: any read of it waits until someone writes the FIFO.
    await rm(record);
    expect(Bun.spawnSync(["mkfifo", record]).exitCode).toBe(0);
    fifo = true;
    const sent = performance.now();
    const answer = await read("probe://nobody-lists-this");
    expect(answer).toContain("not found");
    expect(performance.now() - sent).toBeLessThan(5_000);
  } finally {
    await client.close();
    if (fifo) {
      // Whoever waits on the FIFO (the membership's own poll) gets the record, then the file is back.
      try {
        const fd = openSync(record, constants.O_WRONLY | constants.O_NONBLOCK);
        writeSync(fd, saved);
        closeSync(fd);
      } catch {
        // Nobody was reading it.
      }
      await rm(record, { force: true });
      await writeFile(record, saved);
    }
  }
});
