/**
 * `run`/`start` relay a remote's OAuth login URL from the supervisor's proxy log (cli/start-relay.ts),
 * with real files: only what was written since the wait began, also when the log was rotated
 * (state/log-files.ts) between the marker and the URL.
 */
import { afterEach, expect, test } from "bun:test";
import { appendFileSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startRelay } from "../../src/cli/start-relay.ts";
import { LOGIN_URL_MARKER } from "../../src/workload/oauth-callback.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Calls the relay every 10 ms until it writes a URL on stderr (or 5 s pass); returns what it wrote. */
async function relayed(relay: () => void): Promise<string> {
  let written = "";
  const original = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array) => {
    written += String(chunk);
    return true;
  }) as typeof process.stderr.write;
  try {
    const deadline = Date.now() + 5_000;
    while (!written.includes("https://") && Date.now() < deadline) {
      relay();
      await Bun.sleep(10);
    }
  } finally {
    process.stderr.write = original;
  }
  return written;
}

test("the URL written after the wait began is shown, across a rotation of the log; an earlier one is not", async () => {
  const dir = mkdtempSync(join(tmpdir(), "mcpmgr-login-relay-"));
  dirs.push(dir);
  const path = join(dir, "w.proxy.log");
  const rotated = `${path}.1`;
  writeFileSync(path, `[info] ${LOGIN_URL_MARKER}\nhttps://stale.example/login\n`);
  const relay = startRelay({ path, rotated }).whileWaiting;
  // The new supervisor writes the marker, the log is rotated at its cap, the URL starts the new log.
  appendFileSync(path, `[info] ${LOGIN_URL_MARKER}\n`);
  renameSync(path, rotated);
  writeFileSync(path, "https://fresh.example/login?state=1\n");
  const written = await relayed(relay);
  expect(written).toBe("https://fresh.example/login?state=1\n");
});
