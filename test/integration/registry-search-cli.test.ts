/**
 * `mcpmgr registry search` as users meet it, in a subprocess through runMain: the table and JSON of
 * `registry list`, best match first; custom registry entries searched too; no match is not an error.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expectOneLineError } from "../support/cli-home.ts";
import { REPO_ROOT } from "../support/processes.ts";

// Real processes: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

const COMPACT = join(REPO_ROOT, "test/fixtures/registry/compact.json");

let home: string;
beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), "mcpmgr-registry-search-"));
});
afterAll(async () => {
  await rm(home, { recursive: true, force: true });
});

function mcpmgr(args: readonly string[], registry?: string) {
  const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home };
  delete env.FORCE_COLOR;
  delete env.MCPMGR_REGISTRY;
  if (registry !== undefined) env.MCPMGR_REGISTRY = registry;
  const result = Bun.spawnSync([process.execPath, "src/main.ts", "registry", "search", ...args], {
    cwd: REPO_ROOT,
    env,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    timeout: 20_000,
  });
  return { exitCode: result.exitCode ?? -1, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

const names = (stdout: string) =>
  stdout
    .trimEnd()
    .split("\n")
    .slice(1)
    .map((line) => line.split(/\s+/)[0]);

describe("mcpmgr registry search", () => {
  test("prints the table of registry list, best match first, the query in several words", () => {
    const result = mcpmgr(["github", "pull", "requests"]);
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toBe("");
    const lines = result.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^NAME\s+TRANSPORT\s+SOURCE\s+DESCRIPTION$/);
    expect(lines[1]).toMatch(/^github\s+stdio\s+ghcr\.io\/github\/github-mcp-server:\S+\s+GitHub/);
  });

  test("--limit caps the rows; --format json is a registry document, best first", () => {
    const all = mcpmgr(["documentation", "--format", "json"]);
    expect(all.exitCode).toBe(0);
    const servers = (JSON.parse(all.stdout) as { servers: { name: string; transport: string }[] }).servers;
    expect(servers.length).toBeGreaterThanOrEqual(3);
    expect(servers[0]).toMatchObject({ transport: expect.any(String) });
    const two = mcpmgr(["documentation", "--limit", "2"]);
    expect(two.exitCode).toBe(0);
    expect(names(two.stdout)).toEqual(servers.slice(0, 2).map((server) => server.name));
  });

  test("entries of the custom registry are searched and marked", () => {
    const result = mcpmgr(["weather", "alerts"], COMPACT);
    expect(result.exitCode).toBe(0);
    expect(result.stdout.split("\n")[1]).toMatch(/^weather \*\s+stdio\s+npx:\/\/@example\/weather-mcp@1\.4\.0/);
    expect(result.stderr).toBe("");
    const json = mcpmgr(["company", "wiki", "--format", "json"], COMPACT);
    expect((JSON.parse(json.stdout) as { servers: { name: string; transport: string }[] }).servers[0]).toMatchObject({
      name: "fetch",
      transport: "streamable-http",
    });
    // Without the custom registry nothing is about the weather.
    expect(mcpmgr(["weather", "alerts"]).stdout).toBe("");
  });

  test("no match exits 0 with a sentence pointing to registry list, and nothing on stdout", () => {
    const result = mcpmgr(["xyzzy", "quux"]);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("no server in the registry matches 'xyzzy quux'");
    expect(result.stderr).toContain("mcpmgr registry list");
    const json = mcpmgr(["xyzzy", "--format", "json"]);
    expect(json.exitCode).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ servers: [] });
  });

  test("no match: a long or multi-line query is echoed as its start, on one line", () => {
    const result = mcpmgr([`zzqq${"x".repeat(5_000)}`, "fake\nline"]);
    expect(result.exitCode).toBe(0);
    const lines = result.stderr.trimEnd().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`no server in the registry matches 'zzqq${"x".repeat(76)}…'`);
    expect(lines[0]?.length).toBeLessThan(300);
    const twoLines = mcpmgr(["zzqq\nfake"]);
    expect(twoLines.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(twoLines.stderr).toContain("matches 'zzqq\\nfake'");
  });

  test("a mistyped server name gets a did-you-mean", () => {
    const result = mcpmgr(["tme"]);
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toContain("did you mean time?");
  });

  test("a missing query and a bad --limit are one-line usage errors", () => {
    expect(expectOneLineError(mcpmgr([]), 2)).toContain("needs words to look for");
    expect(expectOneLineError(mcpmgr(["git", "--limit", "0"]), 2)).toContain("--limit");
    expect(expectOneLineError(mcpmgr(["git", "--limit", "many"]), 2)).toContain("whole number");
  });
});
