/**
 * The conformance suite against `mcpmgr run` of the conformance fixture in stdio mode:
 * a local project whose bin (a shell script, run per its shebang) starts the fixture, run as
 * `npx://DIR -- stdio` (a sandboxed local process behind the stdio bridge), must pass
 * the same checks as the fixture over HTTP directly.
 */
import { afterAll, beforeAll, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CONFORMANCE_FIXTURE,
  expectSameChecks,
  runConformance,
  startConformanceServer,
  type RunningFixture,
} from "../support/conformance.ts";
import { CLI_ENTRY, spawnUntil, type Running } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let fixture: RunningFixture;
let packageDir: string;
let run: Running & { match: RegExpExecArray };

beforeAll(async () => {
  fixture = await startConformanceServer();
  packageDir = await mkdtemp(join(tmpdir(), "mcpmgr-conformance-pkg-"));
  await writeFile(join(packageDir, "server.sh"), `#!/bin/sh\nexec ${process.execPath} ${CONFORMANCE_FIXTURE} "$@"\n`);
  await writeFile(
    join(packageDir, "package.json"),
    JSON.stringify({ name: "conformance-fixture", version: "1.0.0", bin: { "conformance-fixture": "server.sh" } }),
  );
  run = await spawnUntil(
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
    {
      timeoutMs: 30_000,
    },
  );
}, 60_000);

afterAll(async () => {
  await run?.stop();
  await fixture?.stop();
  if (packageDir) await rm(packageDir, { recursive: true, force: true });
});

test(
  "conformance server scenarios: mcpmgr run (stdio, sandboxed) matches the fixture over HTTP",
  async () => {
    const direct = await runConformance(fixture.url);
    const viaRun = await runConformance(run.match[1] as string);
    expectSameChecks(viaRun, direct);
  },
  { timeout: 300_000 },
);
