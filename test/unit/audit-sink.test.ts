/**
 * The audit log file under a running proxy: rotated (moved away) or deleted, it is opened
 * again at its path, so lines go where operators look for them; lines written before the
 * move stay in the moved file.
 */
import { afterAll, expect, test, setDefaultTimeout } from "bun:test";
import {
  appendFileSync,
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AuditConfig } from "../../src/config/audit-config.ts";
import { assertAuditLogWritable, auditSink } from "../../src/workload/audit-sink.ts";
import { usageError } from "../support/errors.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const dir = mkdtempSync(join(tmpdir(), "mcpmgr-audit-sink-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const configFor = (logFile: string): AuditConfig => ({
  component: "t",
  eventTypes: undefined,
  excludeEventTypes: new Set(),
  includeRequestData: false,
  includeResponseData: false,
  maxDataSize: 1024,
  logFile,
});

async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("not in time");
    await Bun.sleep(20);
  }
}

const read = (path: string) => (existsSync(path) ? readFileSync(path, "utf8") : "");

/** A sink writing to `path`, and the errors it reports. */
function collectingSink(path: string) {
  const errors: string[] = [];
  const sink = auditSink(
    configFor(path),
    () => {},
    (message) => errors.push(message),
  );
  return { sink, errors };
}

/** Writes "one" through the sink, waits for it at `path`, then moves the file to `path.1` as logrotate does. */
async function writeOneThenRotate(sink: ReturnType<typeof auditSink>, path: string): Promise<void> {
  sink.write("one\n");
  await until(() => read(path) === "one\n");
  renameSync(path, `${path}.1`);
}

test("a rotated log is opened again at its path; a deleted one is created again", async () => {
  const path = join(dir, "audit.jsonl");
  const { sink, errors } = collectingSink(path);
  try {
    await writeOneThenRotate(sink, path);
    // Until the move is noticed, lines may still go to the moved file; then they go to the path.
    let n = 0;
    await until(() => {
      sink.write(`line ${++n}\n`);
      return read(path).includes("line");
    });
    expect(read(`${path}.1`).startsWith("one\n")).toBe(true);
    const all = `${read(`${path}.1`)}${read(path)}`;
    for (let i = 1; i < n; i++) expect(all).toContain(`line ${i}\n`);
    // Deleted: lines go to the deleted file until the path is created again, then there.
    unlinkSync(path);
    await until(() => existsSync(path));
    sink.write("after delete\n");
    await until(() => read(path).includes("after delete\n"));
  } finally {
    await sink.close();
  }
  expect(errors).toEqual([]);
});

test("a log that was a file is not followed into a symbolic link put in its place", async () => {
  const path = join(dir, "plain.jsonl");
  const elsewhere = join(dir, "elsewhere.txt");
  writeFileSync(elsewhere, "");
  const { sink, errors } = collectingSink(path);
  try {
    await writeOneThenRotate(sink, path);
    symlinkSync(elsewhere, path);
    await until(() => errors.length > 0);
    sink.write("two\n");
    await Bun.sleep(300);
    expect(read(elsewhere)).toBe("");
    expect(errors[0]).toContain("was moved away and cannot be opened again");
  } finally {
    await sink.close();
  }
});

// Review 7: in a shared folder another user can make the log's file first, or after a rotation.
test("a log file of another user is refused at start, and not taken after a rotation", async () => {
  const planted = join(dir, "planted.jsonl");
  writeFileSync(planted, "", { mode: 0o666 });
  chownSync(planted, 61234, 61234);
  const refusal = usageError(() => assertAuditLogWritable(configFor(planted)), "INVALID_OPTION");
  expect(refusal.message).toContain("belongs to uid 61234");
  usageError(
    () =>
      auditSink(
        configFor(planted),
        () => {},
        () => {},
      ),
    "INVALID_OPTION",
  );

  const path = join(dir, "rotated-then-planted.jsonl");
  const { sink, errors } = collectingSink(path);
  try {
    await writeOneThenRotate(sink, path);
    writeFileSync(path, "", { mode: 0o666 });
    chownSync(path, 61234, 61234);
    await until(() => errors.length > 0);
    sink.write("two\n");
    await Bun.sleep(600);
    expect(read(path)).toBe("");
    expect(read(`${path}.1`)).toBe("one\ntwo\n");
    // Said once, not every 200 ms.
    expect(errors).toEqual([expect.stringContaining("another user's file")]);
  } finally {
    await sink.close();
  }
});

// Review 8: the owner check refused root's files to every other user, /dev/null included.
test("a log file of root is taken by another user: /dev/null", () => {
  const script = `import { assertAuditLogWritable } from ${JSON.stringify(join(import.meta.dir, "../../src/workload/audit-sink.ts"))};
assertAuditLogWritable({ logFile: "/dev/null" });
console.log("accepted");`;
  const file = join(dir, "as-nobody.ts");
  writeFileSync(file, script, { mode: 0o644 });
  chmodSync(dir, 0o755);
  const run = spawnSync(process.execPath, [file], { uid: 65534, gid: 65534, encoding: "utf8", cwd: "/" });
  expect({ out: run.stdout.trim(), err: run.stderr.trim() }).toEqual({ out: "accepted", err: "" });
});

test("root with a user's HOME (sudo -E) takes that user's log file, as it takes their folders", () => {
  const userHome = join(dir, "user-home");
  mkdirSync(userHome);
  chownSync(userHome, 61234, 61234);
  const theirs = join(userHome, "audit.jsonl");
  writeFileSync(theirs, "", { mode: 0o600 });
  chownSync(theirs, 61234, 61234);
  const saved = process.env.HOME;
  process.env.HOME = userHome;
  try {
    assertAuditLogWritable(configFor(theirs));
  } finally {
    process.env.HOME = saved;
  }
  // With root's own HOME, it stays another user's file.
  expect(usageError(() => assertAuditLogWritable(configFor(theirs)), "INVALID_OPTION").message).toContain(
    "belongs to uid 61234",
  );
});

test("a flush that fails cuts off only its own bytes, never lines another process appended meanwhile", async () => {
  // Two workloads may share one logFile. The one whose flushes fail (here past its file size limit,
  // as a full disk would) must not cut the file back to a size it saw before writing: the other's
  // lines written since would go with it.
  const path = join(dir, "shared.log");
  writeFileSync(path, `${"x".repeat(100_000)}\n`);
  const [started, done] = [join(dir, "failing.started"), join(dir, "failing.done")];
  const script = join(dir, "failing-writer.ts");
  writeFileSync(
    script,
    `import { writeFileSync } from "node:fs";
import { auditSink } from ${JSON.stringify(join(import.meta.dir, "../../src/workload/audit-sink.ts"))};
const errors = [];
const sink = auditSink(${JSON.stringify(configFor(path))}, () => {}, (message) => errors.push(message));
writeFileSync(${JSON.stringify(started)}, "");
const until = Date.now() + 1_500;
while (Date.now() < until) for (let i = 0; i < 400; i++) sink.write("${"a".repeat(200)}\\n");
await sink.close();
writeFileSync(${JSON.stringify(done)}, errors.join("\\n"));
`,
  );
  // 50 KiB: every write of the failing writer fails (EFBIG, its SIGXFSZ ignored); the file is larger already.
  const failing = Bun.spawn(["sh", "-c", `trap '' XFSZ; ulimit -f 50; exec "$0" "$1"`, process.execPath, script], {
    stdout: "ignore",
    stderr: "inherit",
  });
  await until(() => existsSync(started) || failing.exitCode !== null);
  let appended = 0;
  while (!existsSync(done) && failing.exitCode === null) appendFileSync(path, `b${appended++}\n`);
  expect(await failing.exited).toBe(0);
  expect(readFileSync(done, "utf8")).toContain("audit lines are dropped");
  const lines = readFileSync(path, "utf8").split("\n");
  expect(lines.filter((line) => line.startsWith("b")).length).toBe(appended);
  expect(lines.some((line) => line.startsWith("a"))).toBe(false);
});

test("a pipe whose reader falls behind does not hold up the proxy; its lines arrive whole and in order", async () => {
  const fifo = join(dir, "audit.fifo");
  expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
  const [go, out, how] = [join(dir, "fifo.go"), join(dir, "fifo.out"), join(dir, "fifo.how")];
  // The reader opens the pipe at once but reads only once told to (or after 5 s, so a blocked write ends).
  const reader = Bun.spawn([
    "sh",
    "-c",
    `exec 3<"$0"; i=0; while [ ! -e "$1" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
     if [ -e "$1" ]; then echo told > "$3"; else echo late > "$3"; fi; cat <&3 > "$2"`,
    fifo,
    go,
    out,
    how,
  ]);
  const { sink, errors } = collectingSink(fifo);
  // Far more than a pipe holds (64 KiB): a blocking write would wait here for the reader.
  const lines = Array.from({ length: 3000 }, (_, i) => `${JSON.stringify({ n: i, pad: "p".repeat(100) })}\n`);
  for (const line of lines) sink.write(line);
  writeFileSync(go, "");
  await until(() => read(out).length === lines.join("").length);
  await sink.close();
  await reader.exited;
  expect(read(how).trim()).toBe("told");
  expect(read(out)).toBe(lines.join(""));
  expect(errors).toEqual([]);
});

/** A reader of `fifo` that opens it at once but reads (into `out`) only once `go` exists (or after 10 s: a failed test leaves none behind). */
function lateReader(fifo: string, go: string, out: string) {
  return Bun.spawn([
    "sh",
    "-c",
    `exec 3<"$0"; i=0; while [ ! -e "$1" ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i+1)); done; cat <&3 > "$2"`,
    fifo,
    go,
    out,
  ]);
}

const auditLines = (count: number) =>
  Array.from({ length: count }, (_, i) => `${JSON.stringify({ n: i, pad: "p".repeat(100) })}\n`);

test("at the stop, lines a pipe's reader has not taken yet are given time to drain", async () => {
  const fifo = join(dir, "drain.fifo");
  expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
  const [go, out] = [join(dir, "drain.go"), join(dir, "drain.out")];
  const reader = lateReader(fifo, go, out);
  const { sink, errors } = collectingSink(fifo);
  // More than the pipe holds (64 KiB): most of it is still waiting in the sink when the workload stops.
  const lines = auditLines(3000);
  for (const line of lines) sink.write(line);
  const closing = sink.close();
  // The reader catches up only after the stop began.
  writeFileSync(go, "");
  await closing;
  await reader.exited;
  expect(read(out)).toBe(lines.join(""));
  expect(errors).toEqual([]);
});

test("at the stop, a pipe's reader that takes nothing holds it up at most 2 s; the lines dropped are counted in the log", async () => {
  const fifo = join(dir, "stuck.fifo");
  expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
  const [go, out] = [join(dir, "stuck.go"), join(dir, "stuck.out")];
  const reader = lateReader(fifo, go, out);
  const { sink, errors } = collectingSink(fifo);
  const lines = auditLines(3000);
  for (const line of lines) sink.write(line);
  const startedAt = performance.now();
  await sink.close();
  const took = performance.now() - startedAt;
  expect(took).toBeGreaterThanOrEqual(1_900);
  expect(took).toBeLessThan(3_500);
  // What the pipe held is read now; the rest was dropped, and said so with its number of lines.
  writeFileSync(go, "");
  await reader.exited;
  const taken = read(out);
  const whole = taken.split("\n").length - 1;
  expect(whole).toBeLessThan(lines.length);
  expect(errors).toHaveLength(1);
  const dropped = Number(/did not take the last (\d+) audit lines within 2 s of the stop/.exec(errors[0] ?? "")?.[1]);
  // A line begun in the pipe counts as dropped (its end is): taken whole + dropped = all.
  expect(whole + dropped).toBe(lines.length);
  expect(taken).toBe(lines.join("").slice(0, taken.length));
});
