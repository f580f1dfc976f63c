/**
 * writeWhole on a non-blocking pipe whose reader starts late and reads slowly: the writer waits
 * (EAGAIN) instead of failing or dropping bytes, and every byte arrives in order.
 */
import { afterEach, expect, test } from "bun:test";
import { closeSync, constants, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeWhole } from "../../src/cli/output.ts";

const scratch: string[] = [];
afterEach(() => {
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
});

test("a full non-blocking pipe is waited for: 1 MiB arrives whole and in order", async () => {
  const dir = mkdtempSync(join(tmpdir(), "mcpmgr-nonblocking-"));
  scratch.push(dir);
  const fifo = join(dir, "pipe");
  const out = join(dir, "out");
  expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
  // The reader opens the pipe at once (so the writer may open it), then lets it fill before reading
  // it through a small buffer.
  const reader = Bun.spawn(["sh", "-c", 'exec 3<"$1"; sleep 0.3; dd bs=4096 <&3 >"$2" 2>/dev/null', "sh", fifo, out]);
  let fd = -1;
  for (let tries = 0; fd < 0 && tries < 500; tries++) {
    try {
      fd = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
    } catch {
      await Bun.sleep(10); // ENXIO until the reader has it open
    }
  }
  expect(fd).toBeGreaterThanOrEqual(0);
  const data = Buffer.alloc(1024 * 1024);
  for (let i = 0; i < data.length; i++) data[i] = (i * 7 + (i >> 12)) & 0xff;
  try {
    expect(writeWhole(fd, data)).toBe(true);
  } finally {
    closeSync(fd);
  }
  expect(await reader.exited).toBe(0);
  expect(Buffer.compare(readFileSync(out), data)).toBe(0);
});
