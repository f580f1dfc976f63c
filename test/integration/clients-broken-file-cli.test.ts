/**
 * A client file mcpmgr cannot parse is left exactly as it is (never written), and was warned about at
 * every run, start and stop, for every workload: the same lines over and over. It is warned about once
 * per state of the file (size, modification time, reason: remembered in the state folder), again when
 * the file changes, and every time by `client status`, which also gives the problem in its JSON.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv, runCli, runCliOk } from "../support/cli-home.ts";
import { installClients } from "../support/client-home.ts";

setDefaultTimeout(60_000);

const PROBE = "npx://./test/fixtures/sandbox-probe";
let home: string;
let env: Record<string, string>;
let cursorFile: string;

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-broken-client-file-"));
  env = cliEnv(home);
  installClients(home, env, ["cursor"]);
  cursorFile = join(home, ".cursor", "mcp.json");
  runCliOk(env, ["client", "register", "cursor"]);
});

afterAll(() => {
  for (const name of ["first", "second"]) runCli(env, ["rm", name]);
  rmSync(home, { recursive: true, force: true });
});

/** The warnings a command gave about Cursor's file. */
const cursorWarnings = (stderr: string) =>
  stderr.split("\n").filter((line) => line.includes("[warn") && line.includes(cursorFile));

test("a broken file is warned about once, again when it changes, and by client status every time", () => {
  const broken = '{\n  "mcpServers": {\n    "mine": { "url": "http://localhost:1/mcp" }\n';
  writeFileSync(cursorFile, broken);

  const first = runCliOk(env, ["run", PROBE, "--name", "first"]);
  expect(cursorWarnings(first.stderr)).toHaveLength(1);
  expect(cursorWarnings(first.stderr)[0]).toContain("mcpmgr left it unchanged");

  // The memo names the broken file; one for a file that no longer exists is forgotten when it is written.
  const memo = join(home, ".mcpmgr", "state", "client-file-warnings.json");
  expect(Object.keys(JSON.parse(readFileSync(memo, "utf8")))).toEqual([realpathSync(cursorFile)]);
  writeFileSync(memo, JSON.stringify({ [join(home, "gone", "mcp.json")]: "1:2:old" }));
  runCliOk(env, ["stop", "first"]);
  runCliOk(env, ["start", "first"]);
  expect(Object.keys(JSON.parse(readFileSync(memo, "utf8")))).toEqual([realpathSync(cursorFile)]);

  // The same file, unchanged: nothing more at run, stop or start.
  for (const args of [
    ["run", PROBE, "--name", "second"],
    ["stop", "first"],
    ["start", "first"],
  ]) {
    expect(cursorWarnings(runCliOk(env, args).stderr)).toEqual([]);
  }
  // client register asked about this client: it says it every time, and leaves the memo as it was.
  const memoBefore = readFileSync(memo, "utf8");
  for (let i = 0; i < 2; i++)
    expect(cursorWarnings(runCliOk(env, ["client", "register", "cursor"]).stderr)).toHaveLength(1);
  expect(readFileSync(memo, "utf8")).toBe(memoBefore);
  // client status says it every time, in the table's warning and in the JSON.
  for (let i = 0; i < 2; i++) expect(cursorWarnings(runCliOk(env, ["client", "status"]).stderr)).toHaveLength(1);
  const rows = JSON.parse(runCliOk(env, ["client", "status", "--format", "json"]).stdout) as {
    id: string;
    problem?: string;
  }[];
  expect(rows.find((row) => row.id === "cursor")?.problem).toContain("mcpmgr leaves it unchanged until it is fixed");

  // The file is still exactly what the user left; an edit that leaves it broken is warned about again.
  expect(readFileSync(cursorFile, "utf8")).toBe(broken);
  writeFileSync(cursorFile, `${broken}  }\n`);
  runCliOk(env, ["stop", "second"]);
  expect(cursorWarnings(runCliOk(env, ["start", "second"]).stderr)).toHaveLength(1);
  runCliOk(env, ["stop", "first"]);
  expect(cursorWarnings(runCliOk(env, ["start", "first"]).stderr)).toEqual([]);

  // Fixed: the next change is written, and client status has nothing to say.
  writeFileSync(cursorFile, `${broken}  }\n}\n`);
  runCliOk(env, ["stop", "second"]);
  runCliOk(env, ["start", "second"]);
  expect(JSON.parse(readFileSync(cursorFile, "utf8")).mcpServers.second).toBeDefined();
  expect(cursorWarnings(runCliOk(env, ["client", "status"]).stderr)).toEqual([]);
});
