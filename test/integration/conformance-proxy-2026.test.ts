/**
 * The 2026-07-28 conformance requirement set (conformance-next, `server --requirements
 * 2026-07-28`) through the transparent forwarder, in both of its modes: `mcpmgr proxy` and
 * `mcpmgr run URL`, each in front of the fixture that speaks 2026-07-28 over HTTP. Bodies and
 * headers pass through, so each must get exactly the checks the fixture gets directly (its
 * header validation, input rounds, caching hints, listen streams and DNS-rebinding answers
 * included): what the forwarder adds (its Origin check, keep-alives, the Mcp-Session-Id it
 * drops from a 2026-07-28 request) must cost none of them.
 */
import { afterAll, beforeAll, test, setDefaultTimeout } from "bun:test";
import {
  CONFORMANCE_FIXTURE_2026,
  expectSame2026Checks,
  runConformance,
  startConformanceServer,
  type ConformanceResult,
  type RunningFixture,
} from "../support/conformance.ts";
import { startProxy, startRun } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let fixture: RunningFixture;
let direct: ConformanceResult;
const stops: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  fixture = await startConformanceServer({ fixture: CONFORMANCE_FIXTURE_2026 });
  direct = await runConformance(fixture.url, { requirements: "2026-07-28" });
}, 300_000);

afterAll(async () => {
  await Promise.allSettled(stops.map((stop) => stop()));
  await fixture?.stop();
});

test(
  "mcpmgr proxy in front of a 2026-07-28 server passes the same checks as the server directly",
  async () => {
    const proxy = await startProxy(fixture.url);
    stops.push(() => proxy.stop());
    expectSame2026Checks(await runConformance(proxy.url, { requirements: "2026-07-28" }), direct);
  },
  { timeout: 300_000 },
);

test(
  "mcpmgr run URL of a 2026-07-28 server passes the same checks as the server directly",
  async () => {
    const run = await startRun([fixture.url, "--name", "conformance-remote-2026"]);
    stops.push(() => run.stop());
    expectSame2026Checks(await runConformance(run.url, { requirements: "2026-07-28" }), direct);
  },
  { timeout: 300_000 },
);
