/** The group store: `default` always there, created groups kept, groups named by workloads known, removal rules. */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { assertGroupExists, GroupStore } from "../../src/state/groups.ts";
import { type McpmgrPaths, resolvePaths } from "../../src/state/paths.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";
import { rejection } from "../support/errors.ts";

let root: string;
let paths: McpmgrPaths;
let groups: GroupStore;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "mcpmgr-groups-"));
  paths = resolvePaths({ MCPMGR_HOME: root });
  groups = new GroupStore(paths, { now: () => new Date("2026-01-02T03:04:05.000Z") });
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

async function addWorkload(name: string, group: string, port: number): Promise<void> {
  await new WorkloadStore(paths).create({
    name,
    group,
    source: { kind: "remote", ref: "https://example.com/mcp" },
    transport: "streamable-http",
    proxyPort: port,
    runtime: "remote",
  });
}

test("default always exists; created groups are listed after it, by name, with their creation time", async () => {
  expect(await groups.list()).toEqual([{ name: "default", workloads: [] }]);
  await groups.create("zeta");
  await groups.create("alpha");
  expect(await groups.list()).toEqual([
    { name: "default", workloads: [] },
    { name: "alpha", createdAt: "2026-01-02T03:04:05.000Z", workloads: [] },
    { name: "zeta", createdAt: "2026-01-02T03:04:05.000Z", workloads: [] },
  ]);
});

test("a taken, reserved or invalid name is refused", async () => {
  await groups.create("team");
  await rejection(groups.create("team"), "GROUP_EXISTS");
  await rejection(groups.create("default"), "GROUP_EXISTS");
  await rejection(groups.create("Not Valid"), "INVALID_ARGUMENT");
});

test("workloads are listed with their group, and a group only a workload names exists too", async () => {
  await groups.create("team");
  await addWorkload("one", "team", 40101);
  await addWorkload("two", "legacy", 40102);
  const listed = await groups.list();
  expect(listed.find((group) => group.name === "team")?.workloads).toEqual(["one"]);
  expect(listed.find((group) => group.name === "legacy")).toEqual({ name: "legacy", workloads: ["two"] });
  await assertGroupExists(paths, "legacy");
  await assertGroupExists(paths, "default");
  const missing = await rejection(assertGroupExists(paths, "nope"), "GROUP_NOT_FOUND");
  expect(missing.hint).toContain("mcpmgr group create nope");
  expect(missing.hint).not.toContain("did you mean");
  // A mistyped group gets the nearest one, and no offer to create the typo beside it.
  const typo = await rejection(assertGroupExists(paths, "taem"), "GROUP_NOT_FOUND");
  expect(typo.hint).toBe("did you mean team? ('mcpmgr group list' shows the groups)");
});

test("removal: default never, an unknown group is not found, a non-empty one only with its workloads", async () => {
  await rejection(groups.remove("default"), "INVALID_ARGUMENT");
  expect((await rejection(groups.remove("defualt"), "GROUP_NOT_FOUND")).hint).toBe(
    "did you mean default? ('mcpmgr group list' shows the groups)",
  );
  const ghost = await rejection(groups.remove("ghost"), "GROUP_NOT_FOUND");
  // Creating a group in order to remove it is no advice.
  expect(ghost.hint).not.toContain("group create");
  expect(ghost.hint).toContain("mcpmgr group list");
  await groups.create("team");
  await addWorkload("one", "team", 40103);
  const notEmpty = await rejection(groups.remove("team"), "GROUP_NOT_EMPTY");
  expect(notEmpty.hint).toContain("--with-workloads");
  expect((await groups.removable("team", { withWorkloads: true })).workloads).toEqual(["one"]);
  await new WorkloadStore(paths).remove("one");
  await groups.remove("team");
  expect((await groups.list()).map((group) => group.name)).toEqual(["default"]);
});

test("groups named constructor and prototype (valid names, keys of every object) are kept, and removed", async () => {
  await groups.create("constructor");
  await groups.create("prototype");
  expect((await groups.list()).map((group) => [group.name, group.createdAt])).toEqual([
    ["default", undefined],
    ["constructor", "2026-01-02T03:04:05.000Z"],
    ["prototype", "2026-01-02T03:04:05.000Z"],
  ]);
  await rejection(groups.create("constructor"), "GROUP_EXISTS");
  await groups.remove("constructor");
  expect((await groups.list()).map((group) => group.name)).toEqual(["default", "prototype"]);
});
