/**
 * `mcpmgr __complete KIND` (hidden): the names shell completion offers at the moment, one per line
 * (src/completion/ writes the scripts that call it): `workloads`, `live-workloads` (for `stop`),
 * `stopped-workloads` (for `start`), `groups`, `removable-groups` (for `group rm`: not `default`),
 * `secrets` and `secret-references` (`NAME,target=`, for `--secret`), or `servers` (the registry's). The states cost one
 * small status file and a /proc look-up per workload, as `list` reads them. A tab press must never print an error into the user's command line: anything that
 * goes wrong prints nothing.
 */
import { defineCommand } from "citty";
import { DEFAULT_GROUP, GroupStore } from "../state/groups.ts";
import { resolvePaths } from "../state/paths.ts";
import { isSupervisorOf } from "../state/supervisor-identity.ts";
import { reconcileStatus, type WorkloadState } from "../state/workload-record.ts";
import { WorkloadStore } from "../state/workloads.ts";
import { printResult } from "./output.ts";

/** Workloads whose state (as `list` would show it; undefined: never started) passes `wanted`. */
async function workloadsIn(wanted: (state: WorkloadState | undefined) => boolean): Promise<string[]> {
  const store = new WorkloadStore(resolvePaths());
  const names: string[] = [];
  for (const { name } of (await store.listReadable()).records) {
    const status = await store.readStatus(name).catch(() => undefined);
    const state = status && reconcileStatus(status, (pid) => isSupervisorOf(pid, name, store.paths)).state;
    if (wanted(state)) names.push(name);
  }
  return names;
}

const listers: Readonly<Record<string, () => Promise<readonly string[]>>> = {
  async workloads() {
    return (await new WorkloadStore(resolvePaths()).listReadable()).records.map((record) => record.name);
  },
  "live-workloads": () => workloadsIn((state) => state === "starting" || state === "running" || state === "restarting"),
  "stopped-workloads": () => workloadsIn((state) => state === undefined || state === "stopped" || state === "failed"),
  async groups() {
    return (await new GroupStore(resolvePaths()).list()).map((group) => group.name);
  },
  async "removable-groups"() {
    return (await new GroupStore(resolvePaths()).list())
      .map((group) => group.name)
      .filter((name) => name !== DEFAULT_GROUP);
  },
  secrets: storedSecretNames,
  async "secret-references"() {
    return (await storedSecretNames()).map((name) => `${name},target=`);
  },
  async servers() {
    const { embeddedEntries, loadRegistry } = await import("../registry/loader.ts");
    // A custom registry behind a URL gets a short time: a completion that hangs is worse than a shorter list.
    const registry = await loadRegistry({
      env: process.env,
      configDir: resolvePaths().configDir,
      fetch,
      timeoutMs: 2000,
    }).catch(() => undefined);
    return (registry?.list() ?? embeddedEntries()).map((entry) => entry.name);
  },
};

/**
 * The stored secrets' names (never a value), only where listing them asks for nothing: the environment
 * provider, or the encrypted file with its password in MCPMGR_SECRETS_PASSWORD. The names are inside
 * the encrypted file, and the keychain, the other place its password comes from, may show an unlock or
 * "allow access" dialog: a tab press must not, so it offers no names then.
 */
async function storedSecretNames(): Promise<readonly string[]> {
  const { createSecretManager, providerKindFrom } = await import("../secrets/manager.ts");
  const env = process.env;
  if (providerKindFrom(env) === "encrypted" && !env.MCPMGR_SECRETS_PASSWORD) return [];
  return createSecretManager({ dir: resolvePaths().dataDir, env, keychain: null }).provider.list();
}

export default defineCommand({
  meta: { name: "__complete", description: "internal: names for shell completion", hidden: true },
  async run({ rawArgs }) {
    const kind = rawArgs[0] ?? "";
    const lister = Object.hasOwn(listers, kind) ? listers[kind] : undefined;
    if (lister === undefined) return;
    const names = await lister().catch(() => []);
    if (names.length > 0) printResult(names.join("\n"));
  },
});
