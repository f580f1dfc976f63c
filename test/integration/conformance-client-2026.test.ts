/**
 * The newest official conformance suite (conformance-next, @modelcontextprotocol/conformance
 * 0.2.0) with the client scenarios MCP 2026-07-28 requires (`client --requirements
 * 2026-07-28`), each run through `mcpmgr proxy stdio` for the SDK v2 client of
 * test/fixtures/conformance-client-driver.ts: every authorization scenario of the revision
 * (discovery variants, scopes and step-up, token-endpoint auth, registration with
 * application_type, re-registration when the authorization server changes, the `iss` checks,
 * offline_access, metadata that does not match), the request headers and per-request `_meta`,
 * x-mcp-header mirroring and the tools left out for invalid declarations, multi-round-trip
 * requests and a plain tool call.
 *
 * The suite also runs what the revision does not score (extensions: client credentials,
 * enterprise-managed authorization, DPoP, workload identity; and a scenario added after the
 * release); those are reported but not asserted here — see docs/authentication.md.
 */
import { expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

interface Check {
  id: string;
  status: string;
  errorMessage?: string;
}

/** Scenarios run but not scored for 2026-07-28 (the suite's own `not_scored` list). */
const NOT_SCORED = new Set([
  "auth/client-credentials-jwt",
  "auth/client-credentials-basic",
  "auth/enterprise-managed-authorization",
  "auth/dpop",
  "auth/dpop-nonce",
  "auth/wif-jwt-bearer",
  "json-schema-2020-12-preservation",
]);

test(
  "every scenario the 2026-07-28 requirement set scores passes through mcpmgr proxy stdio",
  async () => {
    const out = await mkdtemp(join(tmpdir(), "mcpmgr-conformance-2026-"));
    try {
      const driver = `${process.execPath} ${join(REPO_ROOT, "test/fixtures/conformance-client-driver.ts")}`;
      const proc = Bun.spawn(
        [
          process.execPath,
          join(REPO_ROOT, "node_modules/conformance-next/dist/index.js"),
          "client",
          "--requirements",
          "2026-07-28",
          "--command",
          driver,
          "-o",
          out,
          "--timeout",
          "60000",
        ],
        { cwd: REPO_ROOT, env: { ...process.env, NO_COLOR: "1" }, stdout: "pipe", stderr: "pipe" },
      );
      const [stdout, stderr] = await Promise.all([
        new Response(proc.stdout).text(),
        new Response(proc.stderr).text(),
        proc.exited,
      ]);
      const output = stdout + stderr;

      // Per scenario, from the checks the suite wrote (<out>/<scenario>-<timestamp>/checks.json).
      const failures: string[] = [];
      const scored = new Map<string, number>();
      for await (const file of new Bun.Glob("**/checks.json").scan({ cwd: out })) {
        const scenario = file.replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z\/checks\.json$/, "");
        if (NOT_SCORED.has(scenario)) continue;
        const checks = (await Bun.file(join(out, file)).json()) as Check[];
        scored.set(scenario, checks.filter((c) => c.status === "SUCCESS").length);
        for (const check of checks)
          if (check.status === "FAILURE") failures.push(`${scenario}/${check.id}: ${check.errorMessage ?? ""}`);
      }
      expect(failures).toEqual([]);
      // The whole requirement set ran (32 client scenarios), each with passing checks.
      expect(scored.size).toBe(32);
      for (const [scenario, passed] of scored)
        expect({ scenario, passed: passed > 0 }).toEqual({ scenario, passed: true });
      for (const name of ["auth/authorization-server-migration", "auth/iss-wrong-issuer", "http-custom-headers"])
        expect(scored.has(name)).toBe(true);
      // The runner ran and summed up (its ✗ also marks warnings, e.g. basic-cimd's: mcpmgr has no
      // client metadata document to offer, so it registers instead — a SHOULD, not a failure).
      expect(output).toMatch(/Total: \d+ passed/);
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  },
  { timeout: 400_000 },
);
