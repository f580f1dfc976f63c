/**
 * `gateway G --detach` takes the name gateway-G by default: when a plain workload already has that name,
 * the refusal says so, and does not offer `mcpmgr start gateway-G` (which would start that workload, not a
 * gateway).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv, expectOneLineError, runCli, runCliOk } from "../support/cli-home.ts";

// CLI processes and a background workload.
setDefaultTimeout(60_000);

let home: string;
let env: Record<string, string>;

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-gateway-detach-name-"));
  env = cliEnv(home);
  runCliOk(env, ["group", "create", "gd"]);
  // A remote counts as running without being reached: a plain workload that happens to hold the name.
  runCliOk(env, ["run", "http://127.0.0.1:9/mcp", "--name", "gateway-gd", "--group", "gd"]);
});

afterAll(() => {
  runCli(env, ["rm", "gateway-gd"]);
  rmSync(home, { recursive: true, force: true });
});

test("a plain workload named gateway-G: the refusal says it is not a gateway and offers --name, not 'start'", () => {
  const line = expectOneLineError(runCli(env, ["gateway", "gd", "--detach"]), 1);
  expect(line).toContain("a workload named gateway-gd already exists, and it is not a gateway");
  expect(line).toContain("--name");
  expect(line).not.toContain("mcpmgr start");
  // The way out it gives works.
  const named = runCliOk(env, ["gateway", "gd", "--detach", "--name", "gd-front"]);
  expect(named.stdout).toContain("http://127.0.0.1:");
  runCliOk(env, ["rm", "gd-front"]);
});
