/**
 * `--help` as an operator reads it: in an 80-column terminal each option is one row (its description
 * wrapped under it), never some 300 characters of padding the terminal folds into blank rows; piped,
 * each option and its description share a line (for grep), with no trailing spaces.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CLI_ENTRY } from "../support/processes.ts";

// Subprocesses of the CLI: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

function withHome<T>(use: (home: string) => T): T {
  const home = mkdtempSync(join(tmpdir(), "mcpmgr-help-layout-"));
  try {
    return use(home);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

const optionsOf = (help: string) => help.slice(help.indexOf("\nOPTIONS\n")).split("\n\n")[1]?.split("\n") ?? [];

test("piped: options at the left margin, each with its description on its line, no trailing spaces", () => {
  const help = withHome((home) =>
    Bun.spawnSync([process.execPath, CLI_ENTRY, "proxy", "--help"], {
      env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
      stdin: "ignore",
    }).stdout.toString(),
  );
  const lines = help.split("\n");
  expect(lines.filter((line) => /\s$/.test(line))).toEqual([]);
  const rows = optionsOf(help);
  expect(rows.length).toBeGreaterThan(20);
  for (const row of rows) expect(row).toMatch(/^ {2}-\S.* {2,}\S/);
  expect(rows).toContain("  -h, --help                      Show this help");
  const longest = rows.find((row) => row.includes("--token-exchange-subject-token-type"));
  expect(longest).toMatch(
    /^ {2}--token-exchange-subject-token-type=<access_token\|id_token> {2}Type of the subject token/,
  );
});

test("in an 80-column terminal no option row is wider than the terminal", () => {
  const typed = withHome((home) =>
    Bun.spawnSync(["script", "-qec", `stty cols 80; '${process.execPath}' '${CLI_ENTRY}' run --help`, "/dev/null"], {
      env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
      stdin: "ignore",
    }).stdout.toString(),
  );
  const plain = typed.replace(/\r/g, "").replace(/\x1b\[[0-9;]*m/g, "");
  const rows = optionsOf(plain);
  expect(rows.length).toBeGreaterThan(50);
  expect(rows.filter((row) => row.length > 80)).toEqual([]);
  // Wrapped descriptions go on under their option, at the description column.
  expect(rows.some((row) => /^ {34}\S/.test(row))).toBe(true);
});

test("in a narrow terminal (40 columns) descriptions go under their option and stay within it", () => {
  const typed = withHome((home) =>
    Bun.spawnSync(["script", "-qec", `stty cols 40; '${process.execPath}' '${CLI_ENTRY}' proxy --help`, "/dev/null"], {
      env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
      stdin: "ignore",
    }).stdout.toString(),
  );
  const plain = typed.replace(/\r/g, "").replace(/\x1b\[[0-9;]*m/g, "");
  const rows = optionsOf(plain);
  expect(rows.length).toBeGreaterThan(20);
  // Only an option name (or a single long word) may be wider than the terminal, never an indented description row.
  expect(rows.filter((row) => row.length > 40 && / {2}\S+ \S/.test(row))).toEqual([]);
  expect(rows).toContain("      Show this help");
});
