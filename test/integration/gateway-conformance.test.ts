/**
 * The conformance suite's server scenarios through `mcpmgr gateway` in front of one fixture
 * workload must pass the same checks as the fixture over HTTP directly. The suite calls
 * fixed tool and prompt names (`test_simple_text`, ...), so the gateway runs with
 * `--name-prefix when-needed`: with one workload no name is shared, so none is prefixed
 * and everything else (routing, sessions, progress, sampling, elicitation, logging,
 * subscriptions, completion) goes through the gateway as it always does.
 */
import { afterAll, beforeAll, test } from "bun:test";
import {
  expectSameChecks,
  runConformance,
  startConformanceServer,
  type RunningFixture,
} from "../support/conformance.ts";
import { CONFORMANCE_FIXTURE, createTestGroup, type TestGroup } from "../support/gateway-group.ts";

let fixture: RunningFixture;
let group: TestGroup;
let gatewayUrl: string;

beforeAll(async () => {
  fixture = await startConformanceServer();
  group = await createTestGroup();
  group.run(await group.packageOf(CONFORMANCE_FIXTURE), "conf", "conformance", "stdio");
  gatewayUrl = (await group.gateway("conformance", "--name-prefix", "when-needed")).url;
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  await fixture?.stop();
});

test(
  "conformance server scenarios: a gateway in front of one workload matches the fixture over HTTP",
  async () => {
    const direct = await runConformance(fixture.url);
    const viaGateway = await runConformance(gatewayUrl);
    expectSameChecks(viaGateway, direct);
  },
  { timeout: 300_000 },
);
