/**
 * The official conformance suite passes through `mcpmgr proxy` exactly as it passes
 * against the fixture directly (which is full marks, see conformance-direct.test.ts).
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import {
  expectSameChecks,
  runConformance,
  startConformanceServer,
  type RunningFixture,
} from "../support/conformance.ts";
import { startProxy } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let fixture: RunningFixture;
let proxy: Awaited<ReturnType<typeof startProxy>>;

beforeAll(async () => {
  fixture = await startConformanceServer();
  proxy = await startProxy(fixture.url);
});

afterAll(async () => {
  await proxy?.stop();
  await fixture?.stop();
});

test(
  "conformance server scenarios: same checks pass through mcpmgr proxy as directly",
  async () => {
    const direct = await runConformance(fixture.url);
    const proxied = await runConformance(proxy.url);
    expectSameChecks(proxied, direct);
    expect(proxied.passed).toBe(direct.passed);
    expect(proxied.warnings).toBe(direct.warnings);
    expect(proxied.passed).toBeGreaterThanOrEqual(40);
  },
  { timeout: 300_000 },
);
