/**
 * Workloads named `constructor` and `prototype`: valid workload names that are also keys of every
 * JavaScript object. The registrations' schema left such keys out when it read the file, so mcpmgr
 * forgot the entry it had just written: a stop left it in the client's file for good, and the next
 * start refused it as the user's. Real files in a temporary HOME; each change reads the file anew.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import type { ClientConfigSync } from "../../src/clients/sync.ts";
import { ClientRegistrationStore } from "../../src/state/client-registrations.ts";
import { type ClientHome, clientSyncPerTest, localEndpoint } from "../support/client-home.ts";

setDefaultTimeout(60_000);

let h: ClientHome;
let sync: ClientConfigSync;
clientSyncPerTest((fresh) => ({ h, sync } = fresh));

test.each([["constructor"], ["prototype"]])(
  "a workload named %s: its entry follows it to another port and goes when it stops, with the keys added to it",
  async (name) => {
    const path = h.seed("cline");
    const seed = readFileSync(path, "utf8");
    const first = localEndpoint(name, 41001, { createdAt: "2026-11-27T08:00:00.000Z" });
    await sync.registerClient("cline", "default", [first]);
    expect(Object.keys((await new ClientRegistrationStore(h.ctx.paths).read()).owned.cline ?? {})).toHaveLength(1);
    expect((await sync.onWorkloadStarted({ ...first, url: "http://127.0.0.1:41002/mcp" }))[0]?.action).toBe("updated");
    const settings = JSON.parse(readFileSync(path, "utf8"));
    settings.mcpServers[name].autoApprove = ["search"];
    writeFileSync(path, `${JSON.stringify(settings, null, 2)}\n`);
    expect((await sync.onWorkloadStopped({ name }))[0]?.action).toBe("removed");
    expect(Object.hasOwn(JSON.parse(readFileSync(path, "utf8")).mcpServers, name)).toBe(false);
    await sync.onWorkloadStarted(first);
    expect(JSON.parse(readFileSync(path, "utf8")).mcpServers[name]).toEqual({
      type: "streamableHttp",
      url: first.url,
      autoApprove: ["search"],
    });
    await sync.removeClient("cline");
    expect(JSON.parse(readFileSync(path, "utf8"))).toEqual(JSON.parse(seed));
    expect(h.warnings).toEqual([]);
  },
);

test("keys named constructor and prototype that the user added to mcpmgr's entry come back with it after a stop", async () => {
  const path = h.seed("cline");
  const fetch = localEndpoint("fetch", 41001, { createdAt: "2026-11-27T08:00:00.000Z" });
  await sync.registerClient("cline", "default", [fetch]);
  const settings = JSON.parse(readFileSync(path, "utf8"));
  Object.assign(settings.mcpServers.fetch, { constructor: "mine", prototype: ["a"] });
  writeFileSync(path, `${JSON.stringify(settings, null, 2)}\n`);
  await sync.onWorkloadStopped({ name: "fetch" });
  await sync.onWorkloadStarted(fetch);
  expect(JSON.parse(readFileSync(path, "utf8")).mcpServers.fetch).toEqual({
    type: "streamableHttp",
    url: fetch.url,
    constructor: "mine",
    prototype: ["a"],
  });
});
