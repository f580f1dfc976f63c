/**
 * `--env-file` and `--env-file-dir` refusals through the CLI: an env file holds secrets, so a line it
 * refuses is named by file and line and what is wrong with it, never by what it holds; and a value no
 * environment can carry (a NUL byte) is refused by name before the server starts, not in an unexpected
 * error quoting it. dotenv's forms (quotes, `export`, a BOM, CRLF) read as dotenv reads them.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdir, mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadEnvDir, loadEnvFile } from "../../src/config/env-files.ts";
import { cliEnv, expectOneLineError, runCli } from "../support/cli-home.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";
import { usageError } from "../support/errors.ts";
import { scratchFiles } from "../support/scratch-files.ts";

// The CLI as a process, more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

const file = scratchFiles("mcpmgr-env-files-");
const SECRET = "SECRETTOKEN123";
let root: string;
let count = 0;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "mcpmgr-env-errors-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});
/** A folder of the test's own (a HOME, an env-file directory). */
async function folder(): Promise<string> {
  const path = join(root, `folder-${count++}`);
  await mkdir(path);
  return path;
}

async function refused(content: string): Promise<string> {
  const path = await file(content, "env");
  const home = await folder();
  const line = expectOneLineError(
    runCli(cliEnv(home), ["run", "--foreground", "--env-file", path, "npx://not-started"]),
    2,
  );
  expect(line).toContain(path);
  expect(line).not.toContain(SECRET);
  return line;
}

describe("a name no environment can use is refused by its line, not quoted", () => {
  test("a token pasted as a name (dashes), after CRLF lines and an export", async () => {
    const line = await refused(`GOOD=1\r\n\r\nexport sk-proj-${SECRET}=x\r\n`);
    expect(line).toContain("line 3");
    expect(line).toContain('"-"');
  });
  test("a dot in the name, in the colon form dotenv also reads", async () => {
    const line = await refused(`A=1\n# a comment\nlive.${SECRET}: x\n`);
    expect(line).toContain("line 3");
    expect(line).toContain('"."');
  });
  test("a name starting with a digit, after a byte-order mark", async () => {
    const line = await refused(`\uFEFF1${SECRET}=1\n`);
    expect(line).toContain("line 1");
    expect(line).toContain("digit");
  });
  test("after a quoted multi-line value, the line of the name itself", async () => {
    const line = await refused(`A="one\ntwo"\nB='x'\n9${SECRET}=y\n`);
    expect(line).toContain("line 4");
  });
});

test("a NUL byte in a value is refused by its line, never quoted", async () => {
  const line = await refused(`A=1\nB="x\0${SECRET}"\n`);
  expect(line).toContain("line 2");
  expect(line).toContain("NUL");
});

test("dotenv's forms are read as dotenv reads them: quotes, export, a BOM, CRLF, a long line", async () => {
  const long = "v".repeat(1_000_000);
  const path = await file(
    `\uFEFFexport A="a # not a comment"\r\nB='single'\r\nC=\`tick\`\r\nD="two\nlines"\r\nE=${long}\r\n`,
    "env",
  );
  expect(loadEnvFile(path)).toEqual({ A: "a # not a comment", B: "single", C: "tick", D: "two\nlines", E: long });
});

test("--env-file-dir: a link to nothing is refused by its entry's name, not an unexpected error", async () => {
  const dir = await folder();
  await mkdir(join(dir, "sub"));
  await symlink(join(dir, "missing"), join(dir, "dangling"));
  const home = await folder();
  const line = expectOneLineError(
    runCli(cliEnv(home), ["run", "--foreground", "--env-file-dir", dir, "npx://not-started"]),
    2,
  );
  expect(line).toContain('"dangling"');
  expect(line).not.toContain("unexpected");
  usageError(() => loadEnvDir(dir), "INVALID_OPTION");
});

test("a stored secret holding a NUL byte is refused by its name before the server starts", async () => {
  const home = await folder();
  const env = { ...cliEnv(home), MCPMGR_SECRETS_PASSWORD: "a-long-random-password-for-this-test-only" };
  const set = Bun.spawnSync([process.execPath, CLI_ENTRY, "secret", "set", "nul-value"], {
    cwd: REPO_ROOT,
    env,
    stdin: new TextEncoder().encode(`x\0${SECRET}`),
  });
  expect(set.exitCode).toBe(0);
  const result = runCli(env, ["run", "--foreground", "--secret", "nul-value,target=TOKEN", "npx://not-started"]);
  expect(result.code).toBe(2);
  const errors = result.stderr.split("\n").filter((line) => line.startsWith("[error]"));
  expect(errors).toHaveLength(1);
  expect(errors[0]).toContain("'nul-value'");
  expect(errors[0]).toContain("NUL");
  expect(result.stderr).not.toContain(SECRET);
  expect(result.stderr).not.toContain("unexpected");
});
