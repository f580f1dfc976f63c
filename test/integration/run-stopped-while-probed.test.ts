/**
 * A `stop` (or `rm`) elsewhere while `run` waits on its readiness probe, the last step of its wait: the
 * supervisor gives the requests in progress time to finish as it stops, so the probe was answered and
 * `run` said the workload runs, while `list` said stopped. Real HTTP MCP server (the conformance fixture,
 * answering initialize late), real supervisor and CLI.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { CONFORMANCE_FIXTURE, createTestGroup, type TestGroup, until } from "../support/gateway-group.ts";
import { CLI_ENTRY, freePort, REPO_ROOT } from "../support/processes.ts";

setDefaultTimeout(60_000);

let group: TestGroup;

beforeAll(async () => {
  group = await createTestGroup();
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
});

function status(name: string): string | undefined {
  const rows = JSON.parse(group.mcpmgr("list", "--format", "json").stdout) as { name: string; status: string }[];
  return rows.find((row) => row.name === name)?.status;
}

/** `run NAME` of an HTTP server that answers initialize 4 s late, started in the background; `stopWith` meanwhile. */
async function runStoppedWhileProbed(name: string, stopWith: string): Promise<{ code: number; stderr: string }> {
  const port = String(await freePort());
  const run = Bun.spawn(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      await group.packageOf(CONFORMANCE_FIXTURE),
      "--name",
      name,
      "--permission-profile",
      "network",
      "--transport",
      "streamable-http",
      "--target-port",
      port,
      "--",
      "http",
      "--port",
      port,
      "--slow-initialize",
      "4000",
    ],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: group.home, MCPMGR_RUNTIME: "process" },
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  // The supervisor says running once the server listens; run's probe then waits on the late initialize.
  expect(await until(() => status(name) === "running")).toBe(true);
  expect(group.mcpmgr(stopWith, name).code).toBe(0);
  const code = await run.exited;
  return { code, stderr: await new Response(run.stderr).text() };
}

test("a stop while run's readiness probe waits is what was asked for: run says so, and not that it runs", async () => {
  const { code, stderr } = await runStoppedWhileProbed("probed-stop", "stop");
  expect(stderr).not.toContain("is running in the background");
  expect(stderr).toContain("probed-stop was stopped while it was starting");
  expect(code).not.toBe(0);
  expect(status("probed-stop")).toBe("stopped");
});

test("an rm while run's readiness probe waits: run says it was removed (or stopped), in one line", async () => {
  const { code, stderr } = await runStoppedWhileProbed("probed-rm", "rm");
  expect(stderr).not.toContain("is running in the background");
  // rm stops it first: either is what was asked for.
  expect(stderr).toMatch(/probed-rm was (removed|stopped) while it was starting/);
  expect(stderr).not.toContain("does not answer MCP");
  expect(code).not.toBe(0);
  expect(status("probed-rm")).toBeUndefined();
});
