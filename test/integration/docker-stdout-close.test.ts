/**
 * A stdio server in a container that closes its stdout and goes on running: the engine keeps
 * the attach connection open (its stdin is attached) and sends nothing for it, so before, the
 * workload looked alive and every request waited for its timeout. Now it is stopped like a
 * process that does the same, so a foreground run ends saying why (and a supervisor restarts it).
 */
import { beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { fixtureImages, leftovers, type FixtureImages } from "../support/docker-fixtures.ts";
import { CLI_ENTRY, spawnUntil } from "../support/processes.ts";

setDefaultTimeout(60_000);

let images: FixtureImages;

beforeAll(async () => {
  images = await fixtureImages();
}, 300_000);

function runUnruly(name: string, mode: string) {
  return spawnUntil(
    [process.execPath, CLI_ENTRY, "run", "--foreground", images.unruly, "--name", name, "--", mode],
    /^(http:\/\/\S+)$/m,
    { env: { MCPMGR_RUNTIME: "docker" }, timeoutMs: 60_000 },
  );
}

test("a container whose server closes its stdout but goes on running is stopped, and the foreground run ends saying why", async () => {
  const run = await runUnruly("unruly-closes-stdout", "closes-stdout");
  try {
    const ended = await Promise.race([run.proc.exited.then(() => true), Bun.sleep(20_000).then(() => false)]);
    expect(ended).toBe(true);
    expect(run.output()).toContain("the MCP server closed its stdout but kept running: stopping it");
    expect(leftovers("unruly-closes-stdout").containers).toEqual([]);
  } finally {
    await run.stop();
  }
});

test("a container whose server closes its stdout as it is stopped is stopped as usual, with no warning", async () => {
  const run = await runUnruly("unruly-slow-to-stop", "slow-to-stop");
  try {
    expect(await run.stop("SIGINT")).toBe(0);
    expect(run.output()).not.toContain("closed its stdout but kept running");
  } finally {
    await run.stop();
  }
});
