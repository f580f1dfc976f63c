/**
 * Links planted by another workload's server (review: planted links across workloads): A runs
 * with `-v <dir>/shared:/d` and can replace `<dir>/shared/sub` by a link; B's mount of
 * `<dir>/shared/sub` is refused at its start. Real workload records in a temporary
 * MCPMGR_HOME, real directories and links, through the workload layer's start-up check.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolvePaths } from "../../src/state/paths.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";
import { overlaysFor } from "../../src/workload/overlays.ts";
import { rejection } from "../support/errors.ts";
import { testContext } from "../support/workload-context.ts";

let dir: string;
let env: { MCPMGR_HOME: string };

beforeEach(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), "mcpmgr-shared-mounts-")));
  env = { MCPMGR_HOME: join(dir, "mcpmgr") };
  mkdirSync(join(dir, "shared"), { recursive: true });
  mkdirSync(join(dir, "elsewhere/secret"), { recursive: true });
  // What A's server did through its writable mount: its folder `sub` is now a link out.
  symlinkSync(join(dir, "elsewhere"), join(dir, "shared/sub"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function recordWorkload(name: string, port: number, extra: object): Promise<void> {
  await new WorkloadStore(resolvePaths(env)).create({
    name,
    group: "default",
    source: { kind: "package", ref: "npx:@modelcontextprotocol/server-everything" },
    transport: "stdio",
    proxyPort: port,
    runtime: "process",
    workingDir: dir,
    ...extra,
  });
}

const startOfB = () =>
  overlaysFor(
    [{ hostPath: join(dir, "shared/sub"), containerPath: "/s", readOnly: true }],
    { ignoreGlobally: false, print: false },
    testContext(env).ctx,
  );

test("a mount source through a link inside another workload's writable volume is refused, naming that workload", async () => {
  await recordWorkload("a", 41501, { volumes: [{ hostPath: join(dir, "shared"), containerPath: "/d" }] });
  const err = await rejection(startOfB(), "UNSAFE_MOUNT");
  expect(err.message).toBe(
    `mount source ${join(dir, "shared/sub")} goes through the symbolic link ${join(dir, "shared/sub")}, inside the writable mount ${join(dir, "shared")} of workload a: that workload's server may have put it there to reach other host files`,
  );
});

test("another workload's permission profile write path counts too", async () => {
  const profile = join(dir, "profile.json");
  writeFileSync(profile, JSON.stringify({ read: [], write: [`${join(dir, "shared")}:/d`] }));
  await recordWorkload("a", 41502, { permissionProfile: "profile.json" });
  await rejection(startOfB(), "UNSAFE_MOUNT");
});

test("another workload's read-only volume, or no other workload, leaves the user's own link followed", async () => {
  expect((await startOfB()).overlays).toEqual([]);
  await recordWorkload("a", 41503, {
    volumes: [{ hostPath: join(dir, "shared"), containerPath: "/d", readOnly: true }],
  });
  expect((await startOfB()).overlays).toEqual([]);
});

test("another workload's broken record is named in a warning and stops neither this start nor the others' check", async () => {
  await recordWorkload("a", 41504, { volumes: [{ hostPath: join(dir, "shared"), containerPath: "/d" }] });
  mkdirSync(join(env.MCPMGR_HOME, "state/workloads/broken"), { recursive: true });
  writeFileSync(join(env.MCPMGR_HOME, "state/workloads/broken/workload.json"), "not json");
  const { ctx, logged } = testContext(env);
  const start = (hostPath: string) =>
    overlaysFor([{ hostPath, containerPath: "/s", readOnly: true }], { ignoreGlobally: false, print: false }, ctx);
  await rejection(start(join(dir, "shared/sub")), "UNSAFE_MOUNT");
  expect((await start(join(dir, "elsewhere"))).overlays).toEqual([]);
  expect(logged.filter((line) => line.startsWith("warn:"))).toEqual([
    "warn: workload broken's record cannot be read: links in its writable mounts are not checked for this start",
    "warn: workload broken's record cannot be read: links in its writable mounts are not checked for this start",
  ]);
});
