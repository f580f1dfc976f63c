/**
 * The conformance suite against `mcpmgr run` of the conformance fixture in stdio mode:
 * a local project whose bin (a shell script, run per its shebang) starts the fixture, run as
 * `npx://DIR -- stdio` (a sandboxed local process behind the stdio bridge), must pass
 * the same checks as the fixture over HTTP directly.
 */
import { afterAll, beforeAll, test, setDefaultTimeout } from "bun:test";
import {
  CONFORMANCE_FIXTURE,
  expectSameChecks,
  runConformance,
  runStdioFixture,
  startConformanceServer,
  type RunningFixture,
} from "../support/conformance.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let fixture: RunningFixture;
let run: Awaited<ReturnType<typeof runStdioFixture>>;

beforeAll(async () => {
  fixture = await startConformanceServer();
  run = await runStdioFixture(CONFORMANCE_FIXTURE);
}, 60_000);

afterAll(async () => {
  await run?.stop();
  await fixture?.stop();
});

test(
  "conformance server scenarios: mcpmgr run (stdio, sandboxed) matches the fixture over HTTP",
  async () => {
    const direct = await runConformance(fixture.url);
    const viaRun = await runConformance(run.url);
    expectSameChecks(viaRun, direct);
  },
  { timeout: 300_000 },
);
