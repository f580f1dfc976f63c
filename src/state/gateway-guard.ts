/**
 * What lets a group's gateway be the only way into its workloads while it enforces policies
 * (docs/gateway.md, "Members are reached only through the gateway"):
 *  - the gateway key: a random secret of this installation (`<stateDir>/gateway.key`, 0600, made on
 *    first use), which a gateway presents to its members and members accept in place of a client's
 *    credentials. Only mcpmgr's user can read it;
 *  - guard markers: a running gateway with policies writes `<runtimeDir>/gateway-guards/<group>/<pid>`
 *    (holding its process start time, so a reused pid does not count, and `authn` when it authenticates
 *    its callers) and removes it when it stops; a member of that group without authentication of its own
 *    refuses every other caller while one is there, and a member with its own `--oidc-*` takes the key in
 *    place of a token only while a gateway that authenticates its callers guards the group.
 */
import { link, mkdir, open, readdir, readFile, rm, rmdir, writeFile } from "node:fs/promises";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { McpmgrError } from "../errors.ts";
import type { McpmgrPaths } from "./paths.ts";
import { isGatewayRecord, type WorkloadRecord } from "./workload-record.ts";
import { isSameProcess, processStartTime } from "./process-start.ts";
import { isSupervisorOf } from "./supervisor-identity.ts";
import type { WorkloadStore } from "./workloads.ts";

const KEY_FILE = "gateway.key";
/** The key's shape, also how a member tells it from a client's bearer token at a glance. */
export const GATEWAY_KEY_PREFIX = "mcpmgr-gateway-";
const KEY_PREFIX = GATEWAY_KEY_PREFIX;
/** A guard marker's second line when its gateway authenticates its callers. */
const AUTHN = "authn";

function keyPath(paths: McpmgrPaths): string {
  return join(paths.stateDir, KEY_FILE);
}

function guardDir(paths: McpmgrPaths, group: string): string {
  return join(paths.runtimeDir, "gateway-guards", group);
}

/** The installation's gateway key, made now when there is none (two starters at once agree on one). */
export async function gatewayKey(paths: McpmgrPaths): Promise<string> {
  const existing = readGatewayKey(paths);
  if (existing !== undefined) return existing;
  await mkdir(paths.stateDir, { recursive: true, mode: 0o700 });
  const key = `${KEY_PREFIX}${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url")}`;
  // Written whole under a private name, then linked into place: link() fails if the key exists, so
  // whoever links first wins, and nobody ever reads a half-written key.
  const temp = `${keyPath(paths)}.${process.pid}.${crypto.randomUUID()}.tmp`;
  const handle = await open(temp, "wx", 0o600);
  try {
    await handle.writeFile(key);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await link(temp, keyPath(paths));
    return key;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    const winner = readGatewayKey(paths);
    if (winner === undefined)
      throw new McpmgrError("GATEWAY_KEY_CORRUPT", `${keyPath(paths)} holds no gateway key`, {
        hint: `delete ${keyPath(paths)}; the next gateway makes a new key (restart the group's workloads, or wait a second, for them to take it)`,
      });
    return winner;
  } finally {
    await rm(temp, { force: true });
  }
}

/** The key, or undefined while no gateway has made one (a member then has nothing to accept). */
export function readGatewayKey(paths: McpmgrPaths): string | undefined {
  try {
    const text = readFileSync(keyPath(paths), "utf8").trim();
    return text.startsWith(KEY_PREFIX) && text.length > KEY_PREFIX.length + 20 ? text : undefined;
  } catch {
    return undefined;
  }
}

/** Marks the group as guarded by this process until the returned function is called. */
export async function guardGroup(
  paths: McpmgrPaths,
  group: string,
  options: { readonly authenticates: boolean },
): Promise<() => Promise<void>> {
  const dir = guardDir(paths, group);
  const marker = join(dir, String(process.pid));
  const content = `${processStartTime(process.pid) ?? ""}${options.authenticates ? `\n${AUTHN}` : ""}`;
  for (let attempt = 0; ; attempt++) {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    try {
      await writeFile(marker, content, { mode: 0o600 });
      break;
    } catch (err) {
      // Another gateway of the group removed the folder it left empty, between our mkdir and this write.
      if ((err as NodeJS.ErrnoException).code !== "ENOENT" || attempt >= 5) throw err;
    }
  }
  return async () => {
    await rm(marker, { force: true });
    await removeIfEmpty(dir);
  };
}

/** A group's folder goes with its last marker: a group removed since leaves nothing behind. */
async function removeIfEmpty(dir: string): Promise<void> {
  // rmdir removes only an empty folder: one another gateway of the group has marked stays (ENOTEMPTY).
  await rmdir(dir).catch(() => {});
}

export interface GroupGuard {
  /** A live gateway with policies guards the group. */
  readonly guarded: boolean;
  /** One of them authenticates its own callers (`--oidc-*`). */
  readonly authenticated: boolean;
}

/** The live gateways that guard the group now, by pid (a marker of a process that is gone does not count). */
function liveGuards(paths: McpmgrPaths, group: string): { pid: number; authenticates: boolean }[] {
  const dir = guardDir(paths, group);
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  const live: { pid: number; authenticates: boolean }[] = [];
  for (const entry of entries) {
    let recorded: string;
    try {
      recorded = readFileSync(join(dir, entry), "utf8");
    } catch {
      continue;
    }
    const [startTime, flag] = recorded.split("\n");
    if (!isSameProcess(Number(entry), startTime ?? "")) continue;
    live.push({ pid: Number(entry), authenticates: flag === AUTHN });
  }
  return live;
}

/** Which live gateways guard the group now. */
export function groupGuard(paths: McpmgrPaths, group: string): GroupGuard {
  const live = liveGuards(paths, group);
  return { guarded: live.length > 0, authenticated: live.some((guard) => guard.authenticates) };
}

/** The pids of the live gateways with policies that guard the group (a background one's is its supervisor's). */
function guardingPids(paths: McpmgrPaths, group: string): Set<number> {
  return new Set(liveGuards(paths, group).map((guard) => guard.pid));
}

/** Whether a live gateway with policies guards the group now. */
export function isGroupGuarded(paths: McpmgrPaths, group: string): boolean {
  return groupGuard(paths, group).guarded;
}

/** Removes the markers of gateways that are gone (a gateway that was killed leaves its marker behind). */
export async function pruneGuards(paths: McpmgrPaths, group: string): Promise<void> {
  const dir = guardDir(paths, group);
  for (const entry of await readdir(dir).catch(() => [] as string[])) {
    const recorded = await readFile(join(dir, entry), "utf8").catch(() => undefined);
    const alive = recorded !== undefined && isSameProcess(Number(entry), recorded.split("\n")[0] ?? "");
    if (!alive) await rm(join(dir, entry), { force: true });
  }
  await removeIfEmpty(dir);
}

/** Whether the workload's recorded `run` options give it incoming authentication (`--oidc-issuer`). */
export function hasOwnAuthentication(record: WorkloadRecord): boolean {
  const end = record.runOptions.indexOf("--");
  const own = end === -1 ? record.runOptions : record.runOptions.slice(0, end);
  return own.some((arg) => arg === "--oidc-issuer" || arg.startsWith("--oidc-issuer="));
}

/**
 * Whether the workload refuses direct callers now: a member without authentication of its own whose group a
 * live gateway with policies guards (a gateway itself is never a member).
 */
export function refusesDirectCallers(paths: McpmgrPaths, record: WorkloadRecord): boolean {
  return !isGatewayRecord(record) && !hasOwnAuthentication(record) && isGroupGuarded(paths, record.group);
}

/** The group's running background gateways: those that guard it (with policies), and the others. */
export interface GroupGateways {
  readonly guarding: readonly string[];
  readonly others: readonly string[];
}

export async function groupGateways(store: WorkloadStore, group: string): Promise<GroupGateways> {
  const guards = guardingPids(store.paths, group);
  const guarding: string[] = [];
  const others: string[] = [];
  for (const record of (await store.listReadable()).records) {
    if (!isGatewayRecord(record) || record.group !== group) continue;
    const pid = (await store.readStatus(record.name).catch(() => undefined))?.pid;
    if (pid === undefined) continue;
    if (guards.has(pid)) guarding.push(record.name);
    else if (isSupervisorOf(pid, record.name, store.paths)) others.push(record.name);
  }
  return { guarding: guarding.sort(), others: others.sort() };
}

/**
 * The command (or commands) that moves `client` onto a gateway of `group` that serves it with the group's
 * policies. `client register --gateway` gives a client the group's one running background gateway
 * (clients/gateway-rules.ts refuses none or several), so it alone is the advice only when that one is a
 * guarding gateway: with only a foreground gateway guarding, it would give the client no entry, or the
 * entry of a background gateway without policies, which serves the members past them.
 */
export function gatewayRegisterAdvice(client: string, group: string, gateways: GroupGateways): string {
  const register = `'mcpmgr client register ${client} --group ${group} --gateway'`;
  const [kept, ...moreGuarding] = gateways.guarding;
  const extra = [...moreGuarding, ...gateways.others].sort();
  const stop =
    extra.length === 0
      ? ""
      : `stop the group's other background gateways (${extra.map((name) => `'mcpmgr stop ${name}'`).join(", ")}: a client gets one), then `;
  if (kept !== undefined) return `${stop}${register}`;
  // Only a foreground gateway guards: a registration follows background gateways alone.
  return `run the gateway with policies in the background ('mcpmgr gateway ${group} --detach' with its options; a foreground one gets no client entry), ${stop || "then "}${register}`;
}

/**
 * WORKLOAD_GUARDED when the workload refuses direct callers now (above). `gateways` are the group's
 * background gateways that guard it (guardingPids), for the hint: never one without policies, which
 * would serve the members past the policies the guarding gateway enforces.
 */
export function assertAnswersDirectCallers(paths: McpmgrPaths, record: WorkloadRecord, gateways: GroupGateways): void {
  if (!refusesDirectCallers(paths, record)) return;
  const relay =
    gateways.guarding.length > 0
      ? gateways.guarding.map((name) => `'mcpmgr proxy stdio ${name}'`).join(" or ")
      : "'mcpmgr proxy stdio URL' with the gateway's URL (a foreground gateway's is in its terminal)";
  throw new McpmgrError(
    "WORKLOAD_GUARDED",
    `workload ${record.name} answers only its group's gateway while a gateway with policies serves group ${record.group}`,
    {
      hint: `relay to the gateway instead: ${relay}; for Claude Desktop: ${gatewayRegisterAdvice("claude-desktop", record.group, gateways)}`,
    },
  );
}
