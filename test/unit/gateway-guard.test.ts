import { afterEach, describe, expect, test } from "bun:test";
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { McpmgrError } from "../../src/errors.ts";
import {
  gatewayKey,
  groupGuard,
  guardGroup,
  isGroupGuarded,
  pruneGuards,
  readGatewayKey,
} from "../../src/state/gateway-guard.ts";
import { resolvePaths } from "../../src/state/paths.ts";

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function paths() {
  const home = await mkdtemp(join(tmpdir(), "mcpmgr-guard-"));
  dirs.push(home);
  return resolvePaths({ MCPMGR_HOME: home });
}

describe("the gateway key", () => {
  test("is made once, private to the user, and two starters at once agree on it", async () => {
    const p = await paths();
    expect(readGatewayKey(p)).toBeUndefined();
    const [a, b] = await Promise.all([gatewayKey(p), gatewayKey(p)]);
    expect(a).toBe(b);
    expect(a).toStartWith("mcpmgr-gateway-");
    expect(a.length).toBeGreaterThan(50);
    expect(readGatewayKey(p)).toBe(a);
    expect((await stat(join(p.stateDir, "gateway.key"))).mode & 0o777).toBe(0o600);
  });

  test("a corrupt key file is a typed error that says how to replace it", async () => {
    const p = await paths();
    await mkdir(p.stateDir, { recursive: true });
    await writeFile(join(p.stateDir, "gateway.key"), "garbage");
    const err = await gatewayKey(p).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(McpmgrError);
    expect((err as McpmgrError).code).toBe("GATEWAY_KEY_CORRUPT");
    expect((err as McpmgrError).hint).toContain(`delete ${join(p.stateDir, "gateway.key")}`);
  });
});

describe("guard markers", () => {
  test("a live gateway guards its group only, until it releases it", async () => {
    const p = await paths();
    const release = await guardGroup(p, "team", { authenticates: false });
    expect(isGroupGuarded(p, "team")).toBe(true);
    expect(isGroupGuarded(p, "other")).toBe(false);
    await release();
    expect(isGroupGuarded(p, "team")).toBe(false);
  });

  test("the group's folder goes with its last marker, and stays while another gateway guards it", async () => {
    const p = await paths();
    const guards = join(p.runtimeDir, "gateway-guards");
    const first = await guardGroup(p, "team", { authenticates: false });
    // A second gateway of the group (another process): its marker keeps the folder.
    const other = join(guards, "team", "999999999");
    await writeFile(other, "1");
    await first();
    expect(await readdir(join(guards, "team"))).toEqual(["999999999"]);
    await rm(other);
    const again = await guardGroup(p, "team", { authenticates: true });
    await again();
    expect(await readdir(guards)).toEqual([]);
  });

  test("say whether a live gateway guarding the group authenticates its callers", async () => {
    const p = await paths();
    const plain = await guardGroup(p, "team", { authenticates: false });
    expect(groupGuard(p, "team")).toEqual({ guarded: true, authenticated: false });
    await plain();
    const authenticating = await guardGroup(p, "team", { authenticates: true });
    expect(groupGuard(p, "team")).toEqual({ guarded: true, authenticated: true });
    await authenticating();
    expect(groupGuard(p, "team")).toEqual({ guarded: false, authenticated: false });
  });

  test("a marker left by a process that is gone, or by a reused pid, does not guard and is pruned", async () => {
    const p = await paths();
    await guardGroup(p, "team", { authenticates: true });
    const dir = join(p.runtimeDir, "gateway-guards", "team");
    const [own] = await readdir(dir);
    // Our own pid with another start time: a pid reused by another process.
    await writeFile(join(dir, own as string), "1");
    // A pid that does not exist.
    const exited = Bun.spawn(["true"]);
    await exited.exited;
    await writeFile(join(dir, String(exited.pid)), "1");
    expect(isGroupGuarded(p, "team")).toBe(false);
    await pruneGuards(p, "team");
    expect(await readdir(join(p.runtimeDir, "gateway-guards"))).toEqual([]);
  });
});
