/**
 * Baseline: the conformance fixture, tested directly (no proxy in between),
 * must get full marks on the active server suite of
 * @modelcontextprotocol/conformance. Proxy conformance tests compare against
 * this; if this test fails, the fixture (or a suite upgrade) is the problem,
 * not the proxy.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import {
  CONFORMANCE_FIXTURE,
  REPO_ROOT,
  runConformance,
  startConformanceServer,
  type RunningFixture,
} from "../support/conformance.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

/**
 * Passing checks observed with @modelcontextprotocol/conformance 0.1.16:
 * 32 active scenarios, 40 SUCCESS checks, no failures, no warnings. A newer
 * suite may add checks, hence "at least".
 */
const MIN_PASSED_CHECKS = 40;

describe("conformance fixture over streamable HTTP (direct)", () => {
  let fixture: RunningFixture | undefined;

  beforeAll(async () => {
    fixture = await startConformanceServer();
  });

  afterAll(async () => {
    await fixture?.stop();
  });

  test(
    "passes the whole active server suite",
    async () => {
      if (!fixture) throw new Error("fixture did not start");
      const result = await runConformance(fixture.url, { timeoutMs: 240_000 });
      // Comparing the failure list first makes a failing run print its reasons.
      expect(result.failures).toEqual([]);
      expect(result.failed).toBe(0);
      expect(result.warnings).toBe(0);
      expect(result.passed).toBeGreaterThanOrEqual(MIN_PASSED_CHECKS);
    },
    { timeout: 300_000 },
  );
});

describe("conformance fixture over stdio", () => {
  test(
    "answers initialize and tools/list with nothing but JSON-RPC on stdout",
    async () => {
      const proc = Bun.spawn([process.execPath, CONFORMANCE_FIXTURE, "stdio"], {
        cwd: REPO_ROOT,
        stdin: "pipe",
        stdout: "pipe",
        stderr: "ignore",
      });
      const send = (message: object) => proc.stdin.write(`${JSON.stringify(message)}\n`);
      send({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "stdio-smoke", version: "1" } },
      });
      send({ jsonrpc: "2.0", method: "notifications/initialized" });
      send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
      await proc.stdin.flush();
      // Closing stdin makes the fixture exit after answering, so stdout ends.
      await proc.stdin.end();

      const timer = setTimeout(() => proc.kill("SIGKILL"), 15_000);
      const stdout = await new Response(proc.stdout).text();
      clearTimeout(timer);
      await proc.exited;

      const lines = stdout.split("\n").filter((line) => line.length > 0);
      const messages = lines.map((line) => JSON.parse(line) as { jsonrpc?: string; id?: number; result?: any });
      expect(messages.every((m) => m.jsonrpc === "2.0")).toBe(true);
      expect(messages.map((m) => m.id)).toEqual([1, 2]);
      expect(messages[0]?.result?.protocolVersion).toBe("2025-11-25");
      expect(messages[0]?.result?.capabilities).toMatchObject({ tools: {}, prompts: {}, resources: {}, logging: {} });
      const toolNames = ((messages[1]?.result?.tools ?? []) as { name: string }[]).map((t) => t.name);
      expect(toolNames).toContain("test_simple_text");
      expect(toolNames).toContain("test_sampling");
    },
    { timeout: 30_000 },
  );
});
