/**
 * Claude Desktop's entry names mcpmgr's executable: run from a Homebrew-style Cellar (here the
 * bun that runs mcpmgr from source, hard-linked into a fake prefix laid out as Homebrew lays it
 * out), the entry names PREFIX/opt/FORMULA/bin, which survives `brew upgrade`, and still starts.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv, runCli } from "../support/cli-home.ts";
import { installClients } from "../support/client-home.ts";
import { CLI_ENTRY } from "../support/processes.ts";

// Real processes: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

let home: string;
let prefix: string;

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-stable-entry-"));
  prefix = join(home, "homebrew");
  mkdirSync(join(prefix, "Cellar", "bun", "1.0.0", "bin"), { recursive: true });
  linkSync(process.execPath, join(prefix, "Cellar", "bun", "1.0.0", "bin", "bun"));
  mkdirSync(join(prefix, "opt"));
  symlinkSync("../Cellar/bun/1.0.0", join(prefix, "opt", "bun"));
  installClients(home, cliEnv(home), ["claude-desktop"]);
});

afterAll(() => {
  for (const name of ["brew-entry", "moved-a", "moved-b", "runner-entry"]) runCli(cliEnv(home), ["rm", name]);
  rmSync(home, { recursive: true, force: true });
});

test("an entry written by an executable in a Cellar names Homebrew's opt link to it", () => {
  const env = cliEnv(home);
  expect(runCli(env, ["run", "http://127.0.0.1:9/mcp", "--name", "brew-entry"]).code).toBe(0);
  const cellarBun = join(prefix, "Cellar", "bun", "1.0.0", "bin", "bun");
  const register = Bun.spawnSync([cellarBun, CLI_ENTRY, "client", "register", "claude-desktop"], { env });
  expect(register.exitCode).toBe(0);
  const config = JSON.parse(readFileSync(join(home, ".config", "Claude", "claude_desktop_config.json"), "utf8")) as {
    mcpServers: Record<string, { command: string; args: string[] }>;
  };
  const entry = config.mcpServers["brew-entry"];
  expect(entry?.command).toBe(join(prefix, "opt", "bun", "bin", "bun"));
  expect(entry?.args).toEqual([CLI_ENTRY, "proxy", "stdio", "brew-entry"]);
  const version = Bun.spawnSync([entry?.command as string, "--version"]);
  expect(version.exitCode).toBe(0);
});

test("registering Claude Desktop again from a moved executable rewrites its entries in every group it follows", () => {
  const env = cliEnv(home);
  expect(runCli(env, ["group", "create", "moved-team"]).code).toBe(0);
  expect(runCli(env, ["run", "http://127.0.0.1:9/mcp", "--name", "moved-a", "--group", "moved-team"]).code).toBe(0);
  expect(runCli(env, ["run", "http://127.0.0.1:9/mcp", "--name", "moved-b"]).code).toBe(0);
  expect(runCli(env, ["client", "register", "claude-desktop", "--group", "moved-team"]).code).toBe(0);
  expect(runCli(env, ["client", "register", "claude-desktop"]).code).toBe(0);
  const entries = () =>
    (
      JSON.parse(readFileSync(join(home, ".config", "Claude", "claude_desktop_config.json"), "utf8")) as {
        mcpServers: Record<string, { command: string; args: string[] }>;
      }
    ).mcpServers;
  expect(entries()["moved-a"]?.command).toBe(process.execPath);
  // The upgrade: the executable now lives elsewhere, and the user registers again as docs/clients.md says.
  mkdirSync(join(home, "moved", "bin"), { recursive: true });
  const moved = join(home, "moved", "bin", "bun");
  linkSync(process.execPath, moved);
  const again = Bun.spawnSync([moved, CLI_ENTRY, "client", "register", "claude-desktop"], { env });
  expect(again.exitCode).toBe(0);
  // Its last line counts the default group's workloads only; the other group's entry is named as updated.
  expect(again.stderr.toString()).toContain("updated moved-a in Claude Desktop");
  expect(again.stderr.toString()).toContain("follows group default (2 running workload(s)");
  for (const name of ["moved-a", "moved-b", "brew-entry"]) {
    expect(entries()[name]?.command).toBe(moved);
    expect(entries()[name]?.args).toEqual([CLI_ENTRY, "proxy", "stdio", name]);
  }
  const status = JSON.parse(runCli(env, ["client", "status", "--format", "json"]).stdout) as {
    id: string;
    groups: string[];
  }[];
  expect(status.find((row) => row.id === "claude-desktop")?.groups).toEqual(["default", "moved-team"]);
});

test("an entry written by an executable in npx's cache or bunx's temporary folder comes with a warning that it will not last", () => {
  const env = cliEnv(home);
  expect(runCli(env, ["run", "http://127.0.0.1:9/mcp", "--name", "runner-entry"]).code).toBe(0);
  // Where `npx mcpmgr` and `bunx mcpmgr` run the platform package's executable from.
  const runners = [
    join(home, ".npm", "_npx", "0123456789abcdef", "node_modules", "mcpmgr-linux-x64", "bin"),
    join(home, "tmp", "bunx-0-mcpmgr@latest", "node_modules", "mcpmgr-linux-x64", "bin"),
  ];
  for (const dir of runners) {
    mkdirSync(dir, { recursive: true });
    linkSync(process.execPath, join(dir, "bun"));
    const register = Bun.spawnSync([join(dir, "bun"), CLI_ENTRY, "client", "register", "claude-desktop"], { env });
    expect(register.exitCode).toBe(0);
    const warnings = register.stderr
      .toString()
      .split("\n")
      .filter((line) => line.startsWith("[warn]"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`name ${join(dir, "bun")}`);
    expect(warnings[0]).toContain("npm install -g mcpmgr");
  }
  // Installed anywhere else (here: bun where it is), the entry is written without one.
  const plain = runCli(env, ["client", "register", "claude-desktop"]);
  expect(plain.code).toBe(0);
  expect(plain.stderr).not.toContain("[warn]");
});
