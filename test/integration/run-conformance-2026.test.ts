/**
 * The 2026-07-28 conformance requirement set against `mcpmgr run` of a stdio server (a local
 * project run as `npx://DIR -- stdio`: a sandboxed process behind the stdio bridge), for
 * both fixtures: the one that speaks 2026-07-28 itself must get the checks it gets over HTTP
 * directly, the 2025-11-25 one every check a translation can provide.
 */
import { afterAll, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CONFORMANCE_FIXTURE,
  CONFORMANCE_FIXTURE_2026,
  expectSame2026Checks,
  expectTranslated2026Checks,
  runConformance,
  startConformanceServer,
} from "../support/conformance.ts";
import { CLI_ENTRY, spawnUntil } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const stops: (() => Promise<void>)[] = [];
afterAll(async () => {
  await Promise.allSettled(stops.map((stop) => stop()));
});

/** `mcpmgr run --foreground npx://DIR -- stdio` of a project whose bin starts `fixture`; its URL. */
async function runFixture(fixture: string): Promise<string> {
  const packageDir = await mkdtemp(join(tmpdir(), "mcpmgr-conformance-pkg-"));
  stops.push(async () => {
    await rm(packageDir, { recursive: true, force: true });
  });
  await writeFile(join(packageDir, "server.sh"), `#!/bin/sh\nexec ${process.execPath} ${fixture} "$@"\n`);
  await writeFile(
    join(packageDir, "package.json"),
    JSON.stringify({ name: "conformance-fixture", version: "1.0.0", bin: { "conformance-fixture": "server.sh" } }),
  );
  const run = await spawnUntil(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      "--foreground",
      `npx://${packageDir}`,
      "--permission-profile",
      "none",
      "--",
      "stdio",
    ],
    /^(http:\/\/\S+)$/m,
    { timeoutMs: 30_000 },
  );
  stops.unshift(async () => {
    await run.stop();
  });
  return run.match[1] as string;
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
