/**
 * The conformance suite against `mcpmgr run IMAGE` of the conformance fixture (bundled,
 * run by Bun) in a container with profile none, behind the stdio bridge: it must pass the same
 * checks as the fixture over HTTP directly, as it does under the process runtime.
 */
import { afterAll, beforeAll, test, setDefaultTimeout } from "bun:test";
import {
  expectSameChecks,
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

beforeAll(async () => {
  const images = await fixtureImages();
  fixture = await startConformanceServer();
  run = await spawnUntil(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      "--foreground",
      images.conformance,
      "--name",
      "docker-conformance",
      "--permission-profile",
      "none",
    ],
    /^(http:\/\/\S+)$/m,
    {
      env: { MCPMGR_RUNTIME: "docker" },
      timeoutMs: 60_000,
    },
  );
}, 300_000);

afterAll(async () => {
  await run?.stop();
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
