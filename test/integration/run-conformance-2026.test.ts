/**
 * The 2026-07-28 conformance requirement set against `mcpmgr run` of a stdio server (a local
 * project run as `npx://DIR -- stdio`: a sandboxed process behind the stdio bridge), for
 * both fixtures: the one that speaks 2026-07-28 itself must get the checks it gets over HTTP
 * directly, the 2025-11-25 one every check a translation can provide.
 */
import { afterAll, test, setDefaultTimeout } from "bun:test";
import {
  CONFORMANCE_FIXTURE,
  CONFORMANCE_FIXTURE_2026,
  expectSame2026Checks,
  expectTranslated2026Checks,
  runConformance,
  runStdioFixture,
  startConformanceServer,
} from "../support/conformance.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const stops: (() => Promise<void>)[] = [];
afterAll(async () => {
  await Promise.allSettled(stops.map((stop) => stop()));
});

/** The fixture as a stdio workload (runStdioFixture), stopped after the file's tests; its URL. */
async function runFixture(fixture: string): Promise<string> {
  const run = await runStdioFixture(fixture);
  stops.unshift(() => run.stop());
  return run.url;
}

test(
  "a 2026-07-28 stdio server under mcpmgr run passes the same checks as over HTTP directly",
  async () => {
    const fixture = await startConformanceServer({ fixture: CONFORMANCE_FIXTURE_2026 });
    stops.push(() => fixture.stop());
    const url = await runFixture(CONFORMANCE_FIXTURE_2026);
    const direct = await runConformance(fixture.url, { requirements: "2026-07-28" });
    expectSame2026Checks(await runConformance(url, { requirements: "2026-07-28" }), direct);
  },
  { timeout: 420_000 },
);

test(
  "a 2025-11-25 stdio server under mcpmgr run passes every 2026-07-28 check a translation can provide",
  async () => {
    const url = await runFixture(CONFORMANCE_FIXTURE);
    expectTranslated2026Checks(await runConformance(url, { requirements: "2026-07-28" }));
  },
  { timeout: 300_000 },
);
