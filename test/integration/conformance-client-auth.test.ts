/**
 * The official conformance suite's client authorization scenarios (`conformance client
 * --suite auth`) with `mcpmgr proxy stdio` doing the authentication for a stdio MCP client
 * (test/fixtures/conformance-auth-driver.ts): metadata discovery variants, scopes from the
 * challenge or the metadata, step-up and its retry limit, the three token-endpoint auth
 * methods, dynamic and pre-registration.
 */
import { expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

test(
  "every check of the client auth suite passes through mcpmgr proxy stdio",
  async () => {
    const out = await mkdtemp(join(tmpdir(), "mcpmgr-conformance-auth-"));
    try {
      const driver = `${process.execPath} ${join(REPO_ROOT, "test/fixtures/conformance-auth-driver.ts")}`;
      const proc = Bun.spawn(
        [
          process.execPath,
          join(REPO_ROOT, "node_modules/@modelcontextprotocol/conformance/dist/index.js"),
          "client",
          "--suite",
          "auth",
          "--command",
          driver,
          "-o",
          out,
          "--timeout",
          "60000",
        ],
        {
          cwd: REPO_ROOT,
          env: { ...process.env, NO_COLOR: "1" },
          stdout: "pipe",
          stderr: "pipe",
        },
      );
      const [stdout, stderr] = await Promise.all([
        new Response(proc.stdout).text(),
        new Response(proc.stderr).text(),
        proc.exited,
      ]);
      const total = /Total: (\d+) passed, (\d+) failed/.exec(stdout + stderr);
      expect(total).not.toBeNull();
      const [, passed, failed] = total as RegExpExecArray;
      expect(Number(failed)).toBe(0);
      expect(Number(passed)).toBeGreaterThanOrEqual(200);
      // Scenario lines: "✓ auth/…" for each fully passing one.
      expect((stdout.match(/✓ auth\//g) ?? []).length).toBeGreaterThanOrEqual(13);
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  },
  { timeout: 300_000 },
);
