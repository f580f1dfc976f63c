/**
 * The conformance suite through the stdio bridge (the fixture in stdio mode) passes as
 * many checks as the fixture over HTTP directly — full marks, including sampling,
 * elicitation, logging and progress.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { startBridge } from "../support/bridge-server.ts";
import {
  expectSameChecks,
  runConformance,
  startConformanceServer,
  type RunningFixture,
} from "../support/conformance.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let fixture: RunningFixture;
let bridged: Awaited<ReturnType<typeof startBridge>>;

beforeAll(async () => {
  fixture = await startConformanceServer();
  bridged = await startBridge();
});

afterAll(async () => {
  await bridged?.stop();
  await fixture?.stop();
});

test(
  "conformance server scenarios: the stdio bridge matches the fixture over HTTP",
  async () => {
    const direct = await runConformance(fixture.url);
    const viaBridge = await runConformance(bridged.url);
    expectSameChecks(viaBridge, direct);
    expect(viaBridge.passed).toBe(direct.passed);
    expect(viaBridge.warnings).toBe(direct.warnings);
  },
  { timeout: 300_000 },
);
