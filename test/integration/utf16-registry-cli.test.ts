/**
 * A custom registry file or mcpmgr's config.json saved as UTF-16 (Windows PowerShell 5's > and Out-File,
 * Notepad's "Unicode") was refused as "not valid JSON" at its first character, a reason no editor shows:
 * it is named by its encoding, with how to save it as UTF-8, as the option files are (bounded-file.ts).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv, expectOneLineError, runCli } from "../support/cli-home.ts";
import { REPO_ROOT } from "../support/processes.ts";

setDefaultTimeout(60_000);

let home: string;
let env: Record<string, string>;

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-utf16-registry-"));
  env = cliEnv(home);
  mkdirSync(join(env.MCPMGR_HOME as string, "config"), { recursive: true });
});

afterAll(() => {
  rmSync(home, { recursive: true, force: true });
});

/** UTF-16 little-endian with its byte order mark, as PowerShell 5 and Notepad write it. */
const utf16le = (text: string) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, "utf16le")]);
/** Big-endian without a mark. */
const utf16be = (text: string) => Buffer.from(text, "utf16le").swap16();

const registryText = readFileSync(join(REPO_ROOT, "test/fixtures/registry/compact.json"), "utf8");

test.each([
  ["UTF-16 LE with a byte order mark", utf16le],
  ["UTF-16 BE without one", utf16be],
])("a custom registry file in %s is named as UTF-16", (_, encode) => {
  const file = join(home, "registry.json");
  writeFileSync(file, encode(registryText));
  const line = expectOneLineError(runCli({ ...env, MCPMGR_REGISTRY: file }, ["registry", "list"]), 2);
  expect(line).toContain("the file is UTF-16 text, not UTF-8");
  expect(line).toContain("save it as UTF-8");
  expect(line).not.toContain("not valid JSON");
});

test.each([
  ["UTF-16 LE with a byte order mark", utf16le],
  ["UTF-16 BE without one", utf16be],
])("mcpmgr's config.json in %s is named as UTF-16", (_, encode) => {
  const config = join(env.MCPMGR_HOME as string, "config", "config.json");
  writeFileSync(config, encode(JSON.stringify({ registry: join(REPO_ROOT, "test/fixtures/registry/compact.json") })));
  const line = expectOneLineError(runCli(env, ["registry", "list"]), 2);
  expect(line).toContain(`${config}: the file is UTF-16 text, not UTF-8`);
  expect(line).toContain("save it as UTF-8");
  rmSync(config);
});
