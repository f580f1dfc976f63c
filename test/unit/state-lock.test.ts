/**
 * The inter-process lock: real contention between two child processes, stale locks of dead,
 * old or unreadable holders, and refusals that carry STATE_LOCKED.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdir, mkdtemp, readFile, rm, utimes, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { McpmgrError } from "../../src/errors.ts";
import { acquireLock, withLock } from "../../src/state/lock.ts";
import { isProcessAlive } from "../../src/state/process-start.ts";
import { zombie } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const LOCK = resolve(import.meta.dir, "../../src/state/lock.ts");
let home: string;
let counter = 0;

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), "mcpmgr-state-lock-"));
});
afterAll(async () => {
  await rm(home, { recursive: true, force: true });
});

/** A fresh lock path per test, so one test's leftovers never block another. */
function lockPath(): string {
  return join(home, `case-${++counter}`, ".lock");
}

async function writeHolder(
  path: string,
  holder: { pid: number; host?: string; token?: string; createdAt?: string },
): Promise<void> {
  await mkdir(join(path, ".."), { recursive: true });
  await writeFile(
    path,
    JSON.stringify({ host: hostname(), token: "someone-else", createdAt: new Date().toISOString(), ...holder }),
  );
}

async function deadPid(): Promise<number> {
  const child = Bun.spawn([process.execPath, "-e", ""]);
  await child.exited;
  return child.pid;
}

async function lockedError(promise: Promise<unknown>): Promise<McpmgrError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(McpmgrError);
    expect((err as McpmgrError).code).toBe("STATE_LOCKED");
    return err as McpmgrError;
  }
  throw new Error("expected STATE_LOCKED");
}

test("two processes incrementing a counter 50 times each under the lock end at 100", async () => {
  const dir = join(home, "contention");
  const lock = join(dir, ".lock");
  const count = join(dir, "count");
  const script = join(home, "incrementer.ts");
  await Bun.write(count, "0");
  // The sleep inside the critical section makes lost updates near-certain without the lock.
  await writeFile(
    script,
    `import { readFile, writeFile } from "node:fs/promises";
     import { withLock } from ${JSON.stringify(LOCK)};
     const [lock, count] = process.argv.slice(2);
     for (let i = 0; i < 50; i++) {
       await withLock(lock, async () => {
         const n = Number(await readFile(count, "utf8"));
         await Bun.sleep(1);
         await writeFile(count, String(n + 1));
       }, { timeoutMs: 30_000 });
     }`,
  );
  const children = [0, 1].map(() =>
    Bun.spawn([process.execPath, script, lock, count], { stdout: "inherit", stderr: "inherit" }),
  );
  expect(await Promise.all(children.map((child) => child.exited))).toEqual([0, 0]);
  expect(await readFile(count, "utf8")).toBe("100");
  expect(await Bun.file(lock).exists()).toBe(false);
}, 60_000);

test("callers in one process are serialised too", async () => {
  const path = lockPath();
  let inside = 0;
  let maxInside = 0;
  let total = 0;
  await Promise.all(
    Array.from({ length: 20 }, () =>
      withLock(path, async () => {
        maxInside = Math.max(maxInside, ++inside);
        const seen = total;
        await Bun.sleep(1);
        total = seen + 1;
        inside--;
      }),
    ),
  );
  expect(total).toBe(20);
  expect(maxInside).toBe(1);
});

test("returns the callback's value and releases even when it throws", async () => {
  const path = lockPath();
  expect(await withLock(path, () => 42)).toBe(42);
  await expect(withLock(path, () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
  expect(await Bun.file(path).exists()).toBe(false);
  expect(await withLock(path, () => "again", { timeoutMs: 100 })).toBe("again");
});

describe("stale locks", () => {
  test("a dead holder's lock is broken at once", async () => {
    const path = lockPath();
    await writeHolder(path, { pid: await deadPid() });
    const started = Date.now();
    expect(await withLock(path, () => "got it", { timeoutMs: 5_000 })).toBe("got it");
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(await Bun.file(path).exists()).toBe(false);
  });

  test("a holder that ended as a zombie (its parent never collected it) is dead: its lock is broken at once", async () => {
    const { pid, parent } = await zombie();
    try {
      const path = lockPath();
      await writeHolder(path, { pid });
      const started = Date.now();
      expect(await withLock(path, () => "got it", { timeoutMs: 3_000 })).toBe("got it");
      expect(Date.now() - started).toBeLessThan(1_000);
    } finally {
      parent.kill("SIGKILL");
    }
  });

  test("a lock carrying our own pid but a token we do not hold is a dead predecessor's", async () => {
    const path = lockPath();
    await writeHolder(path, { pid: process.pid });
    expect(await withLock(path, () => true, { timeoutMs: 1_000 })).toBe(true);
  });

  test("an old lock is broken even if its pid looks alive (pid reuse)", async () => {
    const path = lockPath();
    await writeHolder(path, { pid: 1, createdAt: new Date(Date.now() - 120_000).toISOString() });
    expect(await withLock(path, () => true, { timeoutMs: 1_000, isAlive: () => true })).toBe(true);
  });

  test("an unreadable lock is broken once it is old, not while it may still be being written", async () => {
    const path = lockPath();
    await writeHolder(path, { pid: 1 });
    await writeFile(path, "");
    await lockedError(withLock(path, () => true, { timeoutMs: 150 }));
    const old = new Date(Date.now() - 60_000);
    await utimes(path, old, old);
    expect(await withLock(path, () => true, { timeoutMs: 1_000 })).toBe(true);
  });
});

describe("held locks", () => {
  test("a live holder makes us wait, then STATE_LOCKED with the lock path in the hint", async () => {
    const path = lockPath();
    const sleeper = Bun.spawn([process.execPath, "-e", "await Bun.sleep(30_000)"]);
    try {
      await writeHolder(path, { pid: sleeper.pid });
      const started = Date.now();
      const err = await lockedError(withLock(path, () => true, { timeoutMs: 300 }));
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
      expect(err.message).toContain(String(sleeper.pid));
      expect(err.hint).toContain(path);
      expect(await Bun.file(path).exists()).toBe(true);
    } finally {
      sleeper.kill();
      await sleeper.exited;
    }
  });

  test("a holder on another host is only broken by age", async () => {
    const path = lockPath();
    let asked = false;
    await writeHolder(path, { pid: 999_999, host: "elsewhere.example" });
    await lockedError(withLock(path, () => true, { timeoutMs: 100, isAlive: () => ((asked = true), false) }));
    expect(asked).toBe(false);
  });

  test("the waiter gets the lock as soon as it is released", async () => {
    const path = lockPath();
    const first = await acquireLock(path);
    setTimeout(() => void first.release(), 100);
    expect(await withLock(path, () => "second", { timeoutMs: 5_000 })).toBe("second");
  });

  test("release leaves alone a lock that is no longer ours", async () => {
    const path = lockPath();
    const handle = await acquireLock(path);
    await writeHolder(path, { pid: 1, token: "the-new-owner" });
    await handle.release();
    expect(JSON.parse(await readFile(path, "utf8")).token).toBe("the-new-owner");
  });

  test("handles are async-disposable", async () => {
    const path = lockPath();
    {
      await using _lock = await acquireLock(path);
      expect(await Bun.file(path).exists()).toBe(true);
    }
    expect(await Bun.file(path).exists()).toBe(false);
  });
});

test("isProcessAlive", async () => {
  expect(isProcessAlive(process.pid)).toBe(true);
  expect(isProcessAlive(await deadPid())).toBe(false);
  expect(isProcessAlive(0)).toBe(false);
  expect(isProcessAlive(-1)).toBe(false);
});
