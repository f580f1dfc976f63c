/**
 * Lists with nothing in them say so in a sentence, on stderr (stdout carries data only), and
 * their JSON stays an empty array.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let home: string;

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), "mcpmgr-empty-"));
});

afterAll(async () => {
  await rm(home, { recursive: true, force: true });
});

function mcpmgr(...args: string[]) {
  const result = Bun.spawnSync([process.execPath, "src/main.ts", ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
    stdout: "pipe",
    stderr: "pipe",
  });
  return { exitCode: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

test("list with no workloads says how to start one; nothing on stdout", () => {
  const result = mcpmgr("list");
  expect(result.exitCode).toBe(0);
  expect(result.stdout).toBe("");
  expect(result.stderr).toContain("no workloads yet");
  expect(result.stderr).toContain("mcpmgr run fetch");
});

test("list with something else in the workloads folder's place reports it: only a missing folder is taken for none", async () => {
  // list does not load the store when the folder is not there (start-up); a file there still goes to the store.
  const other = await mkdtemp(join(tmpdir(), "mcpmgr-notdir-"));
  try {
    await mkdir(join(other, "state"), { recursive: true, mode: 0o700 });
    await writeFile(join(other, "state", "workloads"), "not a folder\n");
    const result = Bun.spawnSync([process.execPath, "src/main.ts", "list"], {
      cwd: REPO_ROOT,
      env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: other },
    });
    expect(result.exitCode).not.toBe(0);
    expect(result.stdout.toString()).toBe("");
    expect(result.stderr.toString()).toContain(`cannot list ${join(other, "state", "workloads")}`);
    expect(result.stderr.toString()).not.toContain("no workloads yet");
  } finally {
    await rm(other, { recursive: true, force: true });
  }
});

test("list --group with no workloads in it names the group; one that does not exist is said to be missing", () => {
  const missing = mcpmgr("list", "--group", "team");
  expect(missing.exitCode).toBe(0);
  expect(missing.stdout).toBe("");
  // Not "start one with 'mcpmgr run fetch --group team'": run refuses a group that does not exist.
  expect(missing.stderr).toContain("no group named team; create it with 'mcpmgr group create team'");
  expect(missing.stderr).not.toContain("--group team'");
  expect(mcpmgr("group", "create", "team").exitCode).toBe(0);
  const empty = mcpmgr("list", "--group", "team");
  expect(empty.exitCode).toBe(0);
  expect(empty.stdout).toBe("");
  expect(empty.stderr).toContain("no workloads in group team; start one with 'mcpmgr run fetch --group team'");
  expect(mcpmgr("list", "--group", "default").stderr).toContain("no workloads in group default");
});

test("list --group with a mistyped name offers the nearest group, like the group commands", () => {
  expect(mcpmgr("group", "create", "research").exitCode).toBe(0);
  const typo = mcpmgr("list", "--group", "reserch");
  expect(typo.exitCode).toBe(0);
  expect(typo.stdout).toBe("");
  expect(typo.stderr).toContain("no group named reserch; did you mean research?");
  expect(typo.stderr).toContain(
    "no group named reserch; did you mean research? ('mcpmgr group list' shows the groups)",
  );
  expect(typo.stderr).not.toContain("group create");
  expect(mcpmgr("list", "--group", "zzzzzz").stderr).not.toContain("did you mean");
});

test("list never offers a name no group can have as a command (review 9, F12)", () => {
  const invalid = mcpmgr("list", "--group", "Bad Name;rm -rf ~");
  expect(invalid.exitCode).toBe(2);
  expect(invalid.stdout).toBe("");
  expect(invalid.stderr.trim()).toStartWith('[error] "Bad Name;rm -rf ~" is not a valid group name (hint:');
  expect(invalid.stderr).not.toContain("group create");
  const positional = mcpmgr("list", "a;b");
  expect(positional.exitCode).toBe(2);
  expect(positional.stderr).toContain("to list one group's workloads: mcpmgr list --group GROUP");
  expect(mcpmgr("list", "team").stderr).toContain("mcpmgr list --group team");
});

test("list --format json stays []", () => {
  const result = mcpmgr("list", "--format", "json");
  expect(result.exitCode).toBe(0);
  expect(JSON.parse(result.stdout)).toEqual([]);
  expect(result.stderr).toBe("");
});

test("client list-registered-clients with none says so; its JSON stays []", () => {
  const text = mcpmgr("client", "list-registered-clients");
  expect(text.exitCode).toBe(0);
  expect(text.stdout).toBe("");
  expect(text.stderr).toContain("no AI client is registered");
  expect(JSON.parse(mcpmgr("client", "list-registered-clients", "--format", "json").stdout)).toEqual([]);
});
