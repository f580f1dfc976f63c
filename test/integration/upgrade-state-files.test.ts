/**
 * mcpmgr's files across versions, through the CLI in a temporary HOME (docs/upgrading.md).
 * Upgrade: the files an older mcpmgr wrote (test/fixtures/upgrade/a5df233: a workload whose
 * supervisor is gone, a group, Cline following the default group) are read as they are.
 * Downgrade: a file a newer mcpmgr wrote with a higher `schema_version` (test/fixtures/upgrade/newer)
 * is refused in one line naming it as newer, never called broken with advice to delete it, and is
 * left byte for byte as it was.
 */
import { afterEach, beforeEach, expect, setDefaultTimeout, test } from "bun:test";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { cliEnv, expectOneLineError, runCli, runCliOk } from "../support/cli-home.ts";

setDefaultTimeout(120_000);

const FIXTURES = resolve(import.meta.dir, "../fixtures/upgrade");

let home: string;
let env: Record<string, string>;
let state: string;

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-upgrade-"));
  env = cliEnv(home);
  state = join(home, ".mcpmgr", "state");
  mkdirSync(state, { recursive: true, mode: 0o700 });
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

test("upgrade: an older version's workload and group are listed as they are", () => {
  cpSync(join(FIXTURES, "a5df233/workloads"), join(state, "workloads"), { recursive: true });
  cpSync(join(FIXTURES, "a5df233/groups.json"), join(state, "groups.json"));
  const list = JSON.parse(runCliOk(env, ["list", "--format", "json"]).stdout);
  expect(list).toEqual([
    expect.objectContaining({ name: "cw", group: "default", url: "http://127.0.0.1:41001/mcp", status: "failed" }),
  ]);
  expect(runCliOk(env, ["group", "list"]).stdout).toMatch(/^team\s+0\b/m);
});

function expectRefusedAsNewer(args: readonly string[], file: string): void {
  const before = readFileSync(file, "utf8");
  const line = expectOneLineError(runCli(env, args), 1);
  expect(line).toContain(`${file} was written by a newer mcpmgr (schema_version 2; this one reads 1)`);
  expect(line).toContain("use the newer mcpmgr that wrote it");
  expect(line).not.toMatch(/delete|remove the workload|export one/);
  expect(readFileSync(file, "utf8")).toBe(before);
}

test("downgrade: a workload record from a newer version is refused as newer by list, start and stop", () => {
  const dir = join(state, "workloads", "cw");
  mkdirSync(dir, { recursive: true });
  cpSync(join(FIXTURES, "newer/workload.json"), join(dir, "workload.json"));
  for (const args of [["list"], ["start", "cw"], ["stop", "cw"]])
    expectRefusedAsNewer(args, join(dir, "workload.json"));
});

test("downgrade: another workload's newer record does not stop list, group list, start, run or client register", () => {
  expect(runCli(env, ["run", "http://127.0.0.1:9/mcp", "--name", "mine"]).code).toBe(0);
  expect(runCli(env, ["stop", "mine"]).code).toBe(0);
  const newer = join(state, "workloads", "cw", "workload.json");
  mkdirSync(join(state, "workloads", "cw"), { recursive: true });
  cpSync(join(FIXTURES, "newer/workload.json"), newer);
  const before = readFileSync(newer, "utf8");
  try {
    // list shows what it can read, then says in one line which record it could not, and exits 1.
    const listed = runCli(env, ["list", "--format", "json"]);
    expect(listed.code).toBe(1);
    expect((JSON.parse(listed.stdout) as { name: string }[]).map((row) => row.name)).toEqual(["mine"]);
    const errors = listed.stderr.split("\n").filter((line) => line.trim() !== "");
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain(`${newer} was written by a newer mcpmgr (schema_version 2; this one reads 1)`);
    expect(runCliOk(env, ["group", "list"]).stdout).toMatch(/^default\s+1\b/m);
    // The other workloads go on: started, run, followed by AI clients.
    expect(runCliOk(env, ["start", "mine"]).stdout.trim()).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(runCli(env, ["run", "http://127.0.0.1:9/mcp", "--name", "another"]).code).toBe(0);
    mkdirSync(join(home, ".cursor"));
    expect(runCli(env, ["client", "register", "cursor"]).code).toBe(0);
    const cursor = JSON.parse(readFileSync(join(home, ".cursor", "mcp.json"), "utf8")) as { mcpServers: object };
    expect(Object.keys(cursor.mcpServers).sort()).toEqual(["another", "mine"]);
    expect(readFileSync(newer, "utf8")).toBe(before);
  } finally {
    runCli(env, ["rm", "mine"]);
    runCli(env, ["rm", "another"]);
  }
});

test("downgrade: the port a newer record keeps is not given to another workload (it comes back readable after the upgrade)", () => {
  const newer = join(state, "workloads", "cw", "workload.json");
  mkdirSync(join(state, "workloads", "cw"), { recursive: true });
  cpSync(join(FIXTURES, "newer/workload.json"), newer);
  try {
    const taken = expectOneLineError(
      runCli(env, ["run", "http://127.0.0.1:9/mcp", "--name", "mine", "--proxy-port", "41001"]),
      1,
    );
    expect(taken).toContain("proxy port 41001 is already reserved by workload cw");
    // Nor through an export's runOptions.
    const file = join(home, "copy.json");
    expect(runCli(env, ["run", "http://127.0.0.1:9/mcp", "--name", "copy"]).code).toBe(0);
    expect(runCli(env, ["export", "copy", file]).code).toBe(0);
    expect(runCli(env, ["rm", "copy"]).code).toBe(0);
    const record = JSON.parse(readFileSync(file, "utf8")) as { runOptions: string[] };
    record.runOptions[record.runOptions.indexOf("--proxy-port") + 1] = "41001";
    writeFileSync(file, JSON.stringify({ ...record, proxyPort: 41001 }));
    const replayed = expectOneLineError(runCli(env, ["run", "--from-config", file]), 1);
    expect(replayed).toContain("proxy port 41001 (from");
    expect(replayed).toContain("is already reserved by workload cw");
  } finally {
    runCli(env, ["rm", "mine"]);
    runCli(env, ["rm", "copy"]);
  }
});

test("downgrade: a group that has a workload with a newer record is not removed from under it", () => {
  expect(runCli(env, ["group", "create", "team"]).code).toBe(0);
  expect(runCli(env, ["group", "create", "other"]).code).toBe(0);
  const newer = join(state, "workloads", "cw", "workload.json");
  mkdirSync(join(state, "workloads", "cw"), { recursive: true });
  const record = JSON.parse(readFileSync(join(FIXTURES, "newer/workload.json"), "utf8")) as Record<string, unknown>;
  writeFileSync(newer, JSON.stringify({ ...record, group: "team" }));
  for (const args of [
    ["group", "rm", "team"],
    ["group", "rm", "team", "--with-workloads"],
  ]) {
    const line = expectOneLineError(runCli(env, args), 1);
    expect(line).toContain("group team may still have cw, whose record cannot be read");
    expect(line).toContain("mcpmgr rm cw");
  }
  expect(runCliOk(env, ["group", "list"]).stdout).toMatch(/^team\b/m);
  // Another group goes as before.
  expect(runCli(env, ["group", "rm", "other"]).code).toBe(0);
  rmSync(join(state, "workloads", "cw"), { recursive: true });
  expect(runCli(env, ["group", "rm", "team"]).code).toBe(0);
});

test("downgrade: a newer version's groups and client registrations are refused as newer", () => {
  cpSync(join(FIXTURES, "newer/groups.json"), join(state, "groups.json"));
  expectRefusedAsNewer(["group", "list"], join(state, "groups.json"));
  rmSync(join(state, "groups.json"));
  cpSync(join(FIXTURES, "newer/client-registrations.json"), join(state, "client-registrations.json"));
  expectRefusedAsNewer(["client", "list-registered-clients"], join(state, "client-registrations.json"));
});

test("downgrade: a workload exported by a newer version is refused as newer by run --from-config", () => {
  const file = join(home, "cw.json");
  cpSync(join(FIXTURES, "newer/workload.json"), file);
  expectRefusedAsNewer(["run", "--from-config", file], file);
});

test("downgrade: rm with a newer version's client registrations warns once that AI clients cannot be kept in step", () => {
  cpSync(join(FIXTURES, "a5df233/workloads"), join(state, "workloads"), { recursive: true });
  const registrations = join(state, "client-registrations.json");
  cpSync(join(FIXTURES, "newer/client-registrations.json"), registrations);
  const before = readFileSync(registrations, "utf8");
  const rm = runCliOk(env, ["rm", "cw"]);
  const warnings = rm.stderr.split("\n").filter((line) => line.includes("AI clients cannot be kept in step"));
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toContain("was written by a newer mcpmgr");
  expect(readFileSync(registrations, "utf8")).toBe(before);
});
