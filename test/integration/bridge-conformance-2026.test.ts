/**
 * MCP 2026-07-28 through the stdio bridge, measured with the newest official suite
 * (0.2.0, `server --requirements 2026-07-28`):
 *   - a stdio server that speaks 2026-07-28 itself reaches exactly the checks the same
 *     fixture reaches over HTTP directly;
 *   - a stdio server that speaks only 2025-11-25 is served as a 2026-07-28 server by the
 *     bridge: every required check passes except the ones no translation can provide.
 * The same through `mcpmgr run`: run-conformance-2026.test.ts (process) and
 * docker-conformance.test.ts (container).
 */
import { afterAll, expect, test, setDefaultTimeout } from "bun:test";
import { startBridge } from "../support/bridge-server.ts";
import {
  CONFORMANCE_FIXTURE_2026,
  expectSame2026Checks,
  expectTranslated2026Checks,
  runConformance,
  startConformanceServer,
  type RunningFixture,
} from "../support/conformance.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const stops: (() => Promise<void>)[] = [];
afterAll(async () => {
  await Promise.allSettled(stops.map((stop) => stop()));
});

test(
  "a 2026-07-28 stdio server through the bridge passes the same checks as over HTTP directly",
  async () => {
    const fixture: RunningFixture = await startConformanceServer({ fixture: CONFORMANCE_FIXTURE_2026 });
    stops.push(() => fixture.stop());
    const bridged = await startBridge({ cmd: [process.execPath, CONFORMANCE_FIXTURE_2026, "stdio"] });
    stops.push(() => bridged.stop());
    expect(bridged.bridge.server?.era).toBe("modern");
    const direct = await runConformance(fixture.url, { requirements: "2026-07-28" });
    const viaBridge = await runConformance(bridged.url, { requirements: "2026-07-28" });
    expectSame2026Checks(viaBridge, direct);
  },
  { timeout: 420_000 },
);

test(
  "a 2025-11-25 stdio server through the bridge passes every 2026-07-28 check a translation can provide",
  async () => {
    const bridged = await startBridge();
    stops.push(() => bridged.stop());
    expect(bridged.bridge.server?.era).toBe("legacy");
    expectTranslated2026Checks(await runConformance(bridged.url, { requirements: "2026-07-28" }));
  },
  { timeout: 300_000 },
);
