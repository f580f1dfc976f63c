/**
 * A file an option names that is far larger than any such file (a device, a wrong path) is refused
 * in one line once 16 MiB are read, instead of being read whole into memory first (/dev/zero took
 * gigabytes within seconds). The 20 MiB file here stands for it.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv, expectOneLineError, runCli } from "../support/cli-home.ts";

setDefaultTimeout(60_000);

let home: string;
let huge: string;

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), "mcpmgr-option-files-"));
  huge = join(home, "huge.json");
  await writeFile(huge, `{"a":"${"x".repeat(20 * 1024 * 1024)}"}`);
});

afterAll(async () => {
  await rm(home, { recursive: true, force: true });
});

test.each([
  [["run", "--from-config"], 1],
  [["run", "fetch", "--audit-config"], 2],
  [["run", "fetch", "--env-file"], 2],
  [["run", "fetch", "--permission-profile"], 2],
])("%p names a 20 MiB file: one line naming the cap", (args, code) => {
  const result = runCli(cliEnv(home), [...args, huge]);
  const line = expectOneLineError(result, code);
  expect(line).toContain("the file is larger than 16 MiB");
});

test("--ca-cert names a 20 MiB file: one line naming the cap", () => {
  // Read where a container build is planned: /dev/zero took 5.9 GB within 20 s before.
  const env = { ...cliEnv(home), MCPMGR_RUNTIME: "docker" };
  const result = runCli(env, ["run", "npx://./test/fixtures/unruly-stdio", "--ca-cert", huge]);
  const line = expectOneLineError(result, 2);
  expect(line).toContain("--ca-cert");
  expect(line).toContain("the file is larger than 16 MiB");
});
