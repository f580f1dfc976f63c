/**
 * The conformance suite against `mcpmgr run IMAGE` of the conformance fixture (bundled,
 * run by Bun) in a container with profile none, behind the stdio bridge: it must pass the same
 * checks as the fixture over HTTP directly, as it does under the process runtime. The
 * 2026-07-28 requirement set too: the 2025-11-25 fixture's container gets every check a
 * translation can provide, and a container of the fixture that speaks 2026-07-28 itself gets
 * the checks that fixture gets over HTTP directly.
 */
import { afterAll, beforeAll, test, setDefaultTimeout } from "bun:test";
import {
  CONFORMANCE_FIXTURE_2026,
  expectSame2026Checks,
  expectSameChecks,
  expectTranslated2026Checks,
  runConformance,
  startConformanceServer,
  type RunningFixture,
} from "../support/conformance.ts";
import { fixtureImages } from "../support/docker-fixtures.ts";
import { CLI_ENTRY, spawnUntil, type Running } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let fixture: RunningFixture;
let run: Running & { match: RegExpExecArray };
let run2026: Running & { match: RegExpExecArray };

const runImage = (image: string, name: string) =>
  spawnUntil(
    [process.execPath, CLI_ENTRY, "run", "--foreground", image, "--name", name, "--permission-profile", "none"],
    /^(http:\/\/\S+)$/m,
    {
      env: { MCPMGR_RUNTIME: "docker" },
      timeoutMs: 60_000,
    },
  );

beforeAll(async () => {
  const images = await fixtureImages();
  fixture = await startConformanceServer();
  run = await runImage(images.conformance, "docker-conformance");
  run2026 = await runImage(images.conformance2026, "docker-conformance-2026");
}, 300_000);

afterAll(async () => {
  await run?.stop();
  await run2026?.stop();
  await fixture?.stop();
});

test(
  "conformance server scenarios: mcpmgr run (containerised stdio) matches the fixture over HTTP",
  async () => {
    const direct = await runConformance(fixture.url);
    const viaContainer = await runConformance(run.match[1] as string);
    expectSameChecks(viaContainer, direct);
  },
  { timeout: 300_000 },
);

test(
  "2026-07-28 requirements: a containerised 2025-11-25 stdio server gets every check a translation can provide",
  async () => {
    expectTranslated2026Checks(await runConformance(run.match[1] as string, { requirements: "2026-07-28" }));
  },
  { timeout: 300_000 },
);

test(
  "2026-07-28 requirements: a containerised 2026-07-28 stdio server matches the fixture over HTTP",
  async () => {
    const direct2026 = await startConformanceServer({ fixture: CONFORMANCE_FIXTURE_2026 });
    try {
      const direct = await runConformance(direct2026.url, { requirements: "2026-07-28" });
      expectSame2026Checks(await runConformance(run2026.match[1] as string, { requirements: "2026-07-28" }), direct);
    } finally {
      await direct2026.stop();
    }
  },
  { timeout: 420_000 },
);
