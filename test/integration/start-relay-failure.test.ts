/**
 * The warnings a supervisor writes as it starts (cli/start-relay.ts) reach the terminal of `start`
 * also when the start then fails at once: the command reads the supervisor's log every 100 ms while
 * it waits, and a failure a moment after the warning (here: the next step of the same start) was
 * seen before that read and ended the command without it.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv, runCli, runCliOk } from "../support/cli-home.ts";

setDefaultTimeout(60_000);

let home: string;
let env: Record<string, string>;

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), "mcpmgr-relay-failure-"));
  env = { ...cliEnv(home), MCPMGR_SECRETS_PROVIDER: "environment" };
});

afterAll(async () => {
  runCli(env, ["rm", "warned"]);
  await rm(home, { recursive: true, force: true });
});

test("a start that fails right after its supervisor's warning shows the warning, before the error, every time", async () => {
  const endpoint = "http://127.0.0.1:9/v1/traces";
  runCliOk(env, [
    "run",
    "npx://./test/fixtures/sandbox-probe",
    "--name",
    "warned",
    "--otel-endpoint",
    endpoint,
    "--otel-insecure",
  ]);
  runCliOk(env, ["stop", "warned"]);
  // As an earlier version recorded it (a collector's key in the URL: warned about at each start), and
  // a secret the store does not hold: the supervisor warns, then fails a few milliseconds later.
  const file = join(home, ".mcpmgr", "state", "workloads", "warned", "workload.json");
  const record = JSON.parse(await readFile(file, "utf8")) as { runOptions: string[] };
  const runOptions = record.runOptions.map((word) => (word === endpoint ? `${endpoint}?api-key=k-4d2f` : word));
  const end = runOptions.indexOf("--");
  runOptions.splice(end === -1 ? runOptions.length : end, 0, "--secret", "absent-key,target=API_KEY");
  await writeFile(file, JSON.stringify({ ...record, runOptions }));
  const warning = "warned's recorded options hold a credential in plain text";
  // The loss depended on where the command's 100 ms look fell: several starts, each must show it.
  for (let round = 0; round < 4; round++) {
    const result = runCli(env, ["start", "warned"]);
    expect(result.code).toBe(1);
    const lines = result.stderr.split("\n").filter((line) => line.trim() !== "");
    const failed = lines.findIndex((line) => line.includes("warned failed to start: --secret absent-key"));
    const warned = lines.findIndex((line) => line.includes(warning));
    expect({ round, failed: failed !== -1, warned, said: result.stderr.split(warning).length - 1 }).toEqual({
      round,
      failed: true,
      warned: expect.any(Number),
      said: 1,
    });
    expect(warned).toBeLessThan(failed);
    expect(result.stderr).not.toContain("k-4d2f");
  }
});
