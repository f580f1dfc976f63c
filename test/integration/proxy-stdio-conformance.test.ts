/**
 * The official suite's 2025-era server scenarios (0.1.x) with `mcpmgr proxy stdio` in front of
 * a remote that speaks only MCP 2026-07-28: a 2025-era client, end to end.
 *
 * The suite is a 2025-era client over streamable HTTP; proxy stdio serves stdio. supergateway
 * (a stdio→streamable-HTTP gateway that relays each HTTP session's messages, unchanged, to a
 * stdio process of its own) turns the suite into a 2025-era stdio client of proxy stdio.
 * Behind proxy stdio: the 2026-07-28 conformance fixture with 2025-era traffic refused (so
 * mcpmgr translates), and, as the baseline through the same front, our 2025-only fixture
 * (relayed as it is). The same checks pass both ways; the one that fails both ways is the
 * front's own (supergateway does not check Host headers).
 *
 * `mcpmgr run` of proxy stdio puts the stdio bridge in front instead, and the bridge opens with
 * server/discover: proxy stdio then relays 2026-07-28 requests and the bridge does the
 * translating for its 2025-era sessions. That chain is measured too, against the 2025-only
 * fixture over HTTP directly: every check passes, as it does there.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import type { Subprocess } from "bun";
import { join } from "node:path";
import { startBridge } from "../support/bridge-server.ts";
import {
  CONFORMANCE_FIXTURE_2026,
  expectSameChecks,
  runConformance,
  startConformanceServer,
  type RunningFixture,
} from "../support/conformance.ts";
import { CLI_ENTRY, freePort, REPO_ROOT } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const SUPERGATEWAY = join(REPO_ROOT, "node_modules/supergateway/dist/index.js");
/** The suite's check that the server refuses a foreign Host: supergateway's to pass, not mcpmgr's. */
const FRONT_ONLY = "dns-rebinding-protection/localhost-host-rebinding-rejected";

let modernOnly: RunningFixture;
let legacyOnly: RunningFixture;
const stops: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  modernOnly = await startConformanceServer({ fixture: CONFORMANCE_FIXTURE_2026, args: ["--modern-only"] });
  stops.push(() => modernOnly.stop());
  legacyOnly = await startConformanceServer();
  stops.push(() => legacyOnly.stop());
});
afterAll(async () => {
  await Promise.allSettled(stops.map((stop) => stop()));
});

/** supergateway on a free port, one `mcpmgr proxy stdio REMOTE` per HTTP session; its URL. */
async function supergateway(remote: string): Promise<string> {
  const port = await freePort();
  const proc: Subprocess<"pipe", "pipe", "pipe"> = Bun.spawn(
    [
      process.execPath,
      SUPERGATEWAY,
      ...["--stdio", `${process.execPath} ${CLI_ENTRY} proxy stdio ${remote}`],
      ...["--outputTransport", "streamableHttp", "--stateful", "--port", String(port)],
      ...["--healthEndpoint", "/healthz"],
    ],
    // supergateway ends when its own stdin does: it stays open, unused.
    { cwd: REPO_ROOT, stdin: "pipe", stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" } },
  );
  let output = "";
  for (const stream of [proc.stdout, proc.stderr])
    void (async () => {
      for await (const chunk of stream) output += new TextDecoder().decode(chunk);
    })();
  stops.push(async () => {
    proc.kill("SIGTERM");
    await Promise.race([proc.exited, Bun.sleep(3_000).then(() => proc.kill("SIGKILL"))]);
  });
  const deadline = performance.now() + 20_000;
  for (;;) {
    const up = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (res) => res.ok,
      () => false,
    );
    if (up) return `http://127.0.0.1:${port}/mcp`;
    if (proc.exitCode !== null || performance.now() > deadline)
      throw new Error(`supergateway did not start:\n${output}`);
    await Bun.sleep(50);
  }
}

test(
  "a 2025-era client through proxy stdio: a 2026-only remote passes the same checks as a 2025 one",
  async () => {
    const [toModern, toLegacy] = await Promise.all([supergateway(modernOnly.url), supergateway(legacyOnly.url)]);
    const translated = await runConformance(toModern);
    const relayed = await runConformance(toLegacy);
    const failedChecks = (result: typeof relayed) => result.failures.map((failure) => failure.split(":")[0]);
    expect(failedChecks(relayed)).toEqual([FRONT_ONLY]);
    expect(failedChecks(translated)).toEqual([FRONT_ONLY]);
    expect(translated.passedChecks).toEqual(relayed.passedChecks);
    // The scenarios only a translation can give a 2026-only remote, by their checks.
    for (const check of [
      "tools-call-sampling/tools-call-sampling",
      "tools-call-elicitation/tools-call-elicitation",
      "tools-call-with-progress/tools-call-with-progress",
      "tools-call-with-logging/tools-call-with-logging",
      "resources-subscribe/resources-subscribe",
      "logging-set-level/logging-set-level",
      "ping/ping",
    ])
      expect(translated.passedChecks).toContain(check);
    expect(translated.passed).toBeGreaterThanOrEqual(39);
  },
  { timeout: 240_000 },
);

test(
  "the stdio bridge in front of proxy stdio in front of a 2026-only remote passes what the 2025 fixture passes directly",
  async () => {
    const bridged = await startBridge({ cmd: [process.execPath, CLI_ENTRY, "proxy", "stdio", modernOnly.url] });
    stops.push(() => bridged.stop());
    // proxy stdio answered the bridge's probe with the remote's DiscoverResult.
    expect(bridged.bridge.server?.era).toBe("modern");
    const direct = await runConformance(legacyOnly.url);
    const viaBridge = await runConformance(bridged.url);
    expectSameChecks(viaBridge, direct);
  },
  { timeout: 240_000 },
);
