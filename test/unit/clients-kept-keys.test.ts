/**
 * Keys the user or the client added to mcpmgr's entry (review 9 F5) survive a stop and a start
 * of the same workload, on real files in a temporary HOME: Cline's approvals and timeout, Goose's
 * `enabled: false` (a server switched off stays off). A workload removed and run again under the
 * same name is another server: it gets a fresh entry. A client that stops following the group
 * forgets them.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import type { ClientConfigSync } from "../../src/clients/sync.ts";
import type { WorkloadEndpoint } from "../../src/clients/types.ts";
import { ClientRegistrationStore } from "../../src/state/client-registrations.ts";
import { type ClientHome, clientSyncPerTest, localEndpoint } from "../support/client-home.ts";

setDefaultTimeout(60_000);

const cw = localEndpoint("cw", 41001, { createdAt: "2026-11-25T10:00:00.000Z" });
/** The same workload started again, on another port. */
const cwAgain: WorkloadEndpoint = { ...cw, url: "http://127.0.0.1:41002/mcp" };
/** Removed and run again under its name: another workload. */
const cwNew: WorkloadEndpoint = { ...cwAgain, createdAt: "2026-11-25T11:00:00.000Z" };

let h: ClientHome;
let sync: ClientConfigSync;
clientSyncPerTest((fresh) => ({ h, sync } = fresh));

/** The user edits Cline's entry for cw in Cline's settings (as Cline's UI does). */
function approveInCline(path: string): void {
  const settings = JSON.parse(readFileSync(path, "utf8"));
  Object.assign(settings.mcpServers.cw, { autoApprove: ["read_file", "search"], disabled: false, timeout: 120 });
  writeFileSync(path, `${JSON.stringify(settings, null, 2)}\n`);
}

test("Cline: approvals and a timeout added to mcpmgr's entry come back after stop and start, with the new URL", async () => {
  const path = h.seed("cline");
  await sync.registerClient("cline", "default", [cw]);
  approveInCline(path);

  expect((await sync.onWorkloadStopped({ name: "cw" }))[0]?.action).toBe("removed");
  expect(JSON.parse(h.read("cline")).mcpServers.cw).toBeUndefined();
  expect((await sync.onWorkloadStarted(cwAgain))[0]?.action).toBe("added");
  expect(JSON.parse(h.read("cline")).mcpServers.cw).toEqual({
    type: "streamableHttp",
    url: cwAgain.url,
    autoApprove: ["read_file", "search"],
    disabled: false,
    timeout: 120,
  });
  // Kept once: they are in the entry now, not in mcpmgr's record.
  expect((await new ClientRegistrationStore(h.ctx.paths).read()).kept).toEqual({});
  expect(h.warnings).toEqual([]);
});

test("Goose: an extension the user switched off stays off after stop and start", async () => {
  h.seed("goose");
  await sync.registerClient("goose", "default", [cw]);
  const path = (await sync.status()).find((status) => status.id === "goose")?.configPath as string;
  const text = readFileSync(path, "utf8");
  const at = text.indexOf("  cw:");
  writeFileSync(path, text.slice(0, at) + text.slice(at).replace("enabled: true", "enabled: false"));

  await sync.onWorkloadStopped({ name: "cw" });
  expect(parseYaml(h.read("goose")).extensions.cw).toBeUndefined();
  await sync.onWorkloadStarted(cwAgain);
  const entry = parseYaml(h.read("goose")).extensions.cw;
  expect(entry.enabled).toBe(false);
  expect(entry.uri).toBe(cwAgain.url);
});

test("a workload removed and run again under the same name gets a fresh entry: another server's approvals are not carried over", async () => {
  const path = h.seed("cline");
  await sync.registerClient("cline", "default", [cw]);
  approveInCline(path);
  await sync.onWorkloadStopped({ name: "cw" });
  await sync.onWorkloadStarted(cwNew);
  expect(JSON.parse(h.read("cline")).mcpServers.cw).toEqual({ type: "streamableHttp", url: cwNew.url });
});

test("a client that stops following the group forgets what was added to its entries", async () => {
  const path = h.seed("cline");
  await sync.registerClient("cline", "default", [cw]);
  approveInCline(path);
  await sync.onWorkloadStopped({ name: "cw" });
  await sync.removeClient("cline");
  await sync.registerClient("cline", "default", [cwAgain]);
  expect(JSON.parse(h.read("cline")).mcpServers.cw).toEqual({ type: "streamableHttp", url: cwAgain.url });
});

test("a foreground run (no workload record) keeps nothing: its next run is another process", async () => {
  const path = h.seed("cline");
  const foreground: WorkloadEndpoint = {
    name: "cw",
    group: "default",
    url: cw.url,
    transport: "streamable-http",
    pid: 4242,
  };
  await sync.registerClient("cline", "default", []);
  await sync.onWorkloadStarted(foreground);
  approveInCline(path);
  await sync.onWorkloadStopped({ name: "cw", pid: 4242 });
  expect((await new ClientRegistrationStore(h.ctx.paths).read()).kept).toEqual({});
});
