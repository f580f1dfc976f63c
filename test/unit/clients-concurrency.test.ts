/**
 * Two mcpmgr processes (with different MCPMGR_HOMEs, so only the lock next to the client's
 * file orders them) add entries to the same Cursor configuration at the same time: every
 * entry of both lands, and the file stays valid JSON.
 */
import { afterAll, expect, test, setDefaultTimeout } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const WRITER = resolve(import.meta.dir, "../fixtures/clients-writer/write-entries.ts");
const home = mkdtempSync(join(tmpdir(), "mcpmgr-clients-concurrent-"));
afterAll(() => rmSync(home, { recursive: true, force: true }));

test("two processes editing one client file both land all their entries", async () => {
  mkdirSync(join(home, ".cursor"));
  const count = 12;
  const writers = ["alpha", "beta"].map((prefix) =>
    Bun.spawn([process.execPath, WRITER, home, join(home, `mcpmgr-${prefix}`), prefix, String(count)], {
      stdout: "pipe",
      stderr: "pipe",
    }),
  );
  const codes = await Promise.all(writers.map((writer) => writer.exited));
  const errors = await Promise.all(writers.map((writer) => new Response(writer.stderr).text()));
  expect(errors).toEqual(["", ""]);
  expect(codes).toEqual([0, 0]);
  const servers = JSON.parse(readFileSync(join(home, ".cursor", "mcp.json"), "utf8")).mcpServers;
  const names = Object.keys(servers).sort();
  const wanted = ["alpha", "beta"]
    .flatMap((prefix) => Array.from({ length: count }, (_, i) => `${prefix}-${i}`))
    .sort();
  expect(names).toEqual(wanted);
  expect(servers["beta-3"]).toEqual({ url: "http://127.0.0.1:42003/mcp" });
}, 60_000);
