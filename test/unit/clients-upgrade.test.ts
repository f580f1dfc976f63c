/**
 * AI-client entries an older mcpmgr wrote, read by this one after an upgrade, on real files in a
 * temporary HOME. test/fixtures/upgrade/a5df233 holds what mcpmgr wrote at commit a5df233 (before
 * entries named their workload's `createdAt`): the registrations, the workload's record and status,
 * and Cline's settings with keys the user added to mcpmgr's entry since.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { clientById } from "../../src/clients/catalog.ts";
import type { ClientConfigSync } from "../../src/clients/sync.ts";
import { ClientRegistrationStore } from "../../src/state/client-registrations.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";
import { endpointOf } from "../../src/workload/client-entries.ts";
import { type ClientHome, clientSyncPerTest } from "../support/client-home.ts";

setDefaultTimeout(60_000);

const OLD = resolve(import.meta.dir, "../fixtures/upgrade/a5df233");

let h: ClientHome;
let sync: ClientConfigSync;
clientSyncPerTest((fresh) => ({ h, sync } = fresh));

/** The older version's files where this HOME keeps them; returns Cline's settings path. */
function installOldFiles(): string {
  const settings = clientById("cline").configPath(h.ctx);
  mkdirSync(dirname(settings), { recursive: true });
  cpSync(join(OLD, "cline_mcp_settings.json"), settings);
  const { stateDir } = h.ctx.paths;
  mkdirSync(stateDir, { recursive: true });
  cpSync(join(OLD, "workloads"), join(stateDir, "workloads"), { recursive: true });
  const registrations = readFileSync(join(OLD, "client-registrations.json"), "utf8");
  writeFileSync(join(stateDir, "client-registrations.json"), registrations.replace("$CLINE_SETTINGS", settings));
  return settings;
}

async function restartedEndpoint() {
  const record = await new WorkloadStore(h.ctx.paths).getExisting("cw");
  return { ...endpointOf(record), url: "http://127.0.0.1:41001/mcp" };
}

const approved = { autoApprove: ["read_file", "search"], timeout: 120 };

test("keys added to an older version's entry come back after this version stops and starts its workload", async () => {
  installOldFiles();
  expect((await sync.onWorkloadStopped({ name: "cw" }))[0]?.action).toBe("removed");
  expect(JSON.parse(h.read("cline")).mcpServers.cw).toBeUndefined();
  expect((await sync.onWorkloadStarted(await restartedEndpoint()))[0]?.action).toBe("added");
  expect(JSON.parse(h.read("cline")).mcpServers.cw).toEqual({
    type: "streamableHttp",
    url: "http://127.0.0.1:41001/mcp",
    ...approved,
  });
  expect(h.warnings).toEqual([]);
});

test("keys added to an older version's entry survive a prune (its supervisor died: a reboot after the upgrade)", async () => {
  installOldFiles();
  expect((await sync.pruneEntries(async () => false))[0]?.action).toBe("removed");
  const kept = (await new ClientRegistrationStore(h.ctx.paths).read()).kept.cline;
  expect(Object.values(kept ?? {})[0]?.cw).toEqual({
    group: "default",
    createdAt: "2026-11-25T10:00:00.000Z",
    keys: approved,
  });
  await sync.onWorkloadStarted(await restartedEndpoint());
  expect(JSON.parse(h.read("cline")).mcpServers.cw).toMatchObject(approved);
});

test("client register again over an older version's entry updates it in place: one entry, the user's keys kept", async () => {
  installOldFiles();
  const reports = await sync.registerClient("cline", "default", [await restartedEndpoint()]);
  expect(reports.map((report) => report.action)).toEqual(["unchanged"]);
  const servers = JSON.parse(h.read("cline")).mcpServers;
  expect(Object.keys(servers)).toEqual(["cw"]);
  expect(servers.cw).toMatchObject(approved);
  const owned = (await new ClientRegistrationStore(h.ctx.paths).read()).owned.cline;
  expect(Object.values(owned ?? {})[0]?.cw?.createdAt).toBe("2026-11-25T10:00:00.000Z");
});
