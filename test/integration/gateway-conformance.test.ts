/**
 * The conformance suite's server scenarios through `mcpmgr gateway` in front of one fixture
 * workload must pass the same checks as the fixture over HTTP directly. The suite calls
 * fixed tool and prompt names (`test_simple_text`, ...), so the gateway runs with
 * `--name-prefix when-needed`: with one workload no name is shared, so none is prefixed
 * and everything else (routing, sessions, progress, sampling, elicitation, logging,
 * subscriptions, completion) goes through the gateway as it always does.
 *
 * The gateway's front end also speaks 2026-07-28 (stateless requests), which the fixture
 * (a 2025-era server) does not: the newest suite (`conformance-next`, `--requirements
 * 2026-07-28`) cannot be compared with the fixture direct, so the second test asks that
 * every 2026 scenario exercising what the fixture offers passes through the gateway (the
 * fixture's test_mirrored_arguments declares x-mcp-header arguments: the gateway itself checks
 * their Mcp-Param headers, which the 2025-era fixture never sees). The
 * scenarios left out call diagnostic tools only a 2026 server has (`test_input_required_*`,
 * `test_missing_capability`, ...) or test the tasks extension.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import {
  expectSameChecks,
  runConformance,
  startConformanceServer,
  type RunningFixture,
} from "../support/conformance.ts";
import { CONFORMANCE_FIXTURE, createTestGroup, type TestGroup } from "../support/gateway-group.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

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

/** 2026-07-28 scenarios whose tools, prompts and resources the conformance fixture has. */
const MODERN_SCENARIOS = [
  "tools-list",
  "tools-call-simple-text",
  "tools-call-image",
  "tools-call-audio",
  "tools-call-embedded-resource",
  "tools-call-mixed-content",
  "tools-call-error",
  "tools-call-with-progress",
  "resources-list",
  "resources-read-text",
  "resources-read-binary",
  "resources-templates-read",
  "sep-2164-resource-not-found",
  "prompts-list",
  "prompts-get-simple",
  "prompts-get-with-args",
  "prompts-get-embedded-resource",
  "prompts-get-with-image",
  "completion-complete",
  "caching",
  "dns-rebinding-protection",
  "http-header-validation",
  // Mcp-Param-* headers against test_mirrored_arguments' x-mcp-header declarations, checked by the gateway.
  "http-custom-header-server-validation",
];

test(
  "conformance-next (2026-07-28 requirements): every scenario the fixture can serve passes through the gateway",
  async () => {
    const result = await runConformance(gatewayUrl, { requirements: "2026-07-28", timeoutMs: 280_000 });
    const inScope = (line: string) => MODERN_SCENARIOS.includes(line.split("/")[0] as string);
    expect(result.failures.filter(inScope)).toEqual([]);
    for (const scenario of MODERN_SCENARIOS) {
      expect(result.passedChecks.some((check) => check.startsWith(`${scenario}/`))).toBe(true);
    }
  },
  { timeout: 300_000 },
);
