/**
 * Atomic writes and validated reads. The "no partial file" test runs the writer in a real
 * child process so reads and writes truly overlap.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import * as v from "valibot";
import { readJsonFile, writeFileAtomic, writeJsonFile } from "../../src/state/atomic-file.ts";
import { rejection } from "../support/errors.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const ATOMIC_FILE = resolve(import.meta.dir, "../../src/state/atomic-file.ts");
const posixOnly = process.platform === "win32" ? test.skip : test;
let home: string;

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), "mcpmgr-state-atomic-"));
});
afterAll(async () => {
  await rm(home, { recursive: true, force: true });
});

describe("writeFileAtomic", () => {
  posixOnly("creates private parent folders and a 0600 file", async () => {
    const file = join(home, "a", "b", "file.json");
    await writeFileAtomic(file, "hello");
    expect(await readFile(file, "utf8")).toBe("hello");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(join(home, "a"))).mode & 0o777).toBe(0o700);
    expect((await stat(join(home, "a", "b"))).mode & 0o777).toBe(0o700);
  });

  posixOnly("honours an explicit mode", async () => {
    const file = join(home, "mode", "public.txt");
    await writeFileAtomic(file, "x", { mode: 0o644 });
    expect((await stat(file)).mode & 0o777).toBe(0o644);
  });

  posixOnly("the mode is exact whatever the umask (set on the handle, before the rename)", async () => {
    const file = join(home, "umask", "shared.txt");
    const previous = process.umask(0o077);
    try {
      await writeFileAtomic(file, "x", { mode: 0o640 });
    } finally {
      process.umask(previous);
    }
    expect((await stat(file)).mode & 0o777).toBe(0o640);
  });

  test("replaces the old content and leaves no temporary files", async () => {
    const dir = join(home, "replace");
    const file = join(dir, "state.json");
    await writeJsonFile(file, { n: 1 });
    await writeJsonFile(file, { n: 2 });
    expect(JSON.parse(await readFile(file, "utf8"))).toEqual({ n: 2 });
    expect(await readdir(dir)).toEqual(["state.json"]);
  });

  test("a failed write keeps nothing half-done and says STATE_IO", async () => {
    const dir = join(home, "fail");
    const target = join(dir, "target");
    await mkdir(target, { recursive: true }); // renaming a file over a folder fails
    const err = await rejection(writeFileAtomic(target, "data"), "STATE_IO");
    expect(err.message).toContain(target);
    expect(await readdir(dir)).toEqual(["target"]);
  });

  test("a reader never sees a partial file while another process rewrites it", async () => {
    const file = join(home, "race", "big.txt");
    const size = 512 * 1024;
    await writeFileAtomic(file, "A".repeat(size));
    const writer = join(home, "race-writer.ts");
    await writeFile(
      writer,
      `import { writeFileAtomic } from ${JSON.stringify(ATOMIC_FILE)};
       for (let i = 0; i < 40; i++) await writeFileAtomic(${JSON.stringify(file)}, (i % 2 ? "A" : "B").repeat(${size}));`,
    );
    const child = Bun.spawn([process.execPath, writer], { stdout: "inherit", stderr: "inherit" });
    let reads = 0;
    let done = false;
    void child.exited.then(() => (done = true));
    while (!done) {
      const text = await readFile(file, "utf8");
      expect(text.length).toBe(size);
      expect(text === "A".repeat(size) || text === "B".repeat(size)).toBe(true);
      reads++;
    }
    expect(await child.exited).toBe(0);
    expect(reads).toBeGreaterThan(0);
    expect((await readdir(join(home, "race"))).filter((name) => name.endsWith(".tmp"))).toEqual([]);
  });
});

describe("readJsonFile", () => {
  const schema = v.object({ server: v.object({ port: v.pipe(v.number(), v.integer()) }), name: v.string() });

  test("a missing file is undefined", async () => {
    expect(await readJsonFile(join(home, "nope", "missing.json"), schema)).toBeUndefined();
  });

  test("a valid file is parsed and typed", async () => {
    const file = join(home, "read", "ok.json");
    await writeJsonFile(file, { server: { port: 8080 }, name: "x", extra: true });
    const value = await readJsonFile(file, schema);
    expect(value).toEqual({ server: { port: 8080 }, name: "x" });
  });

  test("invalid JSON is STATE_CORRUPT naming the file", async () => {
    const file = join(home, "read", "broken.json");
    await writeFileAtomic(file, '{"server": {');
    const err = await rejection(readJsonFile(file, schema), "STATE_CORRUPT");
    expect(err.message).toContain(file);
    expect(err.hint).toContain(file);
  });

  test("an empty file is STATE_CORRUPT and says so", async () => {
    const file = join(home, "read", "empty.json");
    await writeFileAtomic(file, "");
    const err = await rejection(readJsonFile(file, schema), "STATE_CORRUPT");
    expect(err.message).toContain("empty");
  });

  test("a schema mismatch is STATE_CORRUPT with the field path", async () => {
    const file = join(home, "read", "wrong.json");
    await writeJsonFile(file, { server: { port: "8080" }, name: "x" });
    const err = await rejection(readJsonFile(file, schema, { hint: "custom hint" }), "STATE_CORRUPT");
    expect(err.message).toContain(file);
    expect(err.message).toContain("server.port:");
    expect(err.hint).toBe("custom hint");
  });
});

test("a JSON file a user names (--from-config) that is broken never quotes its text: a token pasted unquoted or one line off", async () => {
  const { workloadRecordSchema } = await import("../../src/state/workload-record.ts");
  const token = "ghp_polish33SecretToken0123456789";
  const unquoted = join(home, "unquoted.json");
  await writeFile(unquoted, `{"schema_version": 1,\n "name": "x", "runOptions": [${token}]}`);
  const parseErr = await rejection(readJsonFile(unquoted, workloadRecordSchema), "STATE_CORRUPT");
  expect(parseErr.message).toContain("is not valid JSON: line 2, column 30: invalid symbol");
  expect(parseErr.message).not.toContain("ghp_");
  const misplaced = join(home, "misplaced.json");
  await writeFile(misplaced, JSON.stringify({ schema_version: 1, name: "x", source: token, runOptions: [] }));
  const shapeErr = await rejection(readJsonFile(misplaced, workloadRecordSchema), "STATE_CORRUPT");
  expect(shapeErr.message).toContain("source: Invalid type: Expected Object but received a string");
  expect(shapeErr.message).not.toContain("ghp_");
});

test("--from-config's file with a key given twice (a second runOptions) is refused by name and line", async () => {
  const { readExported } = await import("../../src/workload/exported-config.ts");
  const twice = join(home, "twice.json");
  await writeFile(
    twice,
    '{"schema_version": 1, "name": "x", "source": {"kind": "remote", "ref": "http://127.0.0.1:9/mcp"},\n' +
      ' "transport": "streamable-http", "proxyPort": 4567, "runtime": "remote",\n' +
      ' "runOptions": ["http://127.0.0.1:9/mcp", "--authz-config", "policies.yaml"],\n' +
      ' "runOptions": ["http://127.0.0.1:9/mcp"]}',
  );
  const err = await rejection(readExported(twice), "STATE_CORRUPT");
  expect(err.message).toBe(
    `${twice}: the key "runOptions" is given twice in one object (line 4); the later would silently replace the earlier`,
  );
  // Any key may be given twice (one of the labels, pasted): named as the option files name theirs,
  // printable and cut at 60 characters.
  const pasted = `ghp_${"x".repeat(200)}`;
  const labels = join(home, "labels-twice.json");
  await writeFile(labels, `{"schema_version": 1, "labels": {"${pasted}": "a",\n "${pasted}": "b"}}`);
  const labelErr = await rejection(readExported(labels), "STATE_CORRUPT");
  expect(labelErr.message).toContain(`the key "ghp_${"x".repeat(56)}…" is given twice in one object (line 2)`);
  expect(labelErr.message.length).toBeLessThan(labels.length + 160);
  const reversing = join(home, "reversing-twice.json");
  await writeFile(reversing, '{"labels": {"team\\u202eeman": "a", "team\\u202eeman": "b"}}');
  const reversingErr = await rejection(readExported(reversing), "STATE_CORRUPT");
  expect(reversingErr.message).toContain("is given twice in one object (line 1)");
  expect(reversingErr.message).not.toContain("\u202e");
});
