/**
 * `mcpmgr registry list|info` as users meet it, in a subprocess through runMain
 *
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { embeddedEntries } from "../../src/registry/loader.ts";
import { expectOneLineError } from "../support/cli-home.ts";
import { INJECTED_REGISTRY, networkAddress } from "../support/plain-http-registry.ts";
import { makeTestCa } from "../support/test-ca.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const REPO_ROOT = resolve(import.meta.dir, "../..");
const ENTRY = join(REPO_ROOT, "src/main.ts");
const COMPACT = join(REPO_ROOT, "test/fixtures/registry/compact.json");

let home: string;
beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), "mcpmgr-registry-cli-"));
});
afterAll(async () => {
  await rm(home, { recursive: true, force: true });
});

interface CliResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

function mcpmgr(args: readonly string[], extraEnv: Record<string, string> = {}): CliResult {
  const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home, ...extraEnv };
  delete env.FORCE_COLOR;
  if (extraEnv.MCPMGR_REGISTRY === undefined) delete env.MCPMGR_REGISTRY;
  const result = Bun.spawnSync([process.execPath, ENTRY, ...args], {
    cwd: REPO_ROOT,
    env,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    timeout: 20_000,
  });
  return { exitCode: result.exitCode ?? -1, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

const usageError = (result: CliResult): string => expectOneLineError(result, 2);

describe("mcpmgr registry list", () => {
  test("prints a table of every embedded server", () => {
    const result = mcpmgr(["registry", "list"]);
    expect(result.exitCode).toBe(0);
    const lines = result.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^NAME\s+TRANSPORT\s+SOURCE\s+DESCRIPTION$/);
    expect(lines).toHaveLength(embeddedEntries().length + 1);
    expect(result.stdout).toMatch(/^fetch\s+stdio\s+uvx:\/\/mcp-server-fetch\s+Fetch/m);
    expect(result.stdout).toMatch(/^github\s+stdio\s+ghcr\.io\/github\/github-mcp-server:\S+\s+GitHub/m);
  });

  test("--format json prints a registry document that loads back", async () => {
    const result = mcpmgr(["registry", "list", "--format", "json"]);
    expect(result.exitCode).toBe(0);
    const doc = JSON.parse(result.stdout) as { servers: { name: string }[] };
    expect(doc.servers.map((entry) => entry.name)).toEqual(
      embeddedEntries()
        .map((entry) => entry.name)
        .sort((a, b) => a.localeCompare(b)),
    );
    const file = join(home, "roundtrip.json");
    await Bun.write(file, result.stdout);
    const again = mcpmgr(["registry", "list", "--format", "json"], { MCPMGR_REGISTRY: file });
    expect(JSON.parse(again.stdout)).toEqual(doc);
  });

  test("a custom registry adds and overrides servers, marked in the table", () => {
    const result = mcpmgr(["registry", "list"], { MCPMGR_REGISTRY: COMPACT });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/^fetch \*\s+streamable-http\s+registry\.example\.com\/tools\/fetch:2\.0\.0/m);
    expect(result.stdout).toMatch(/^weather \*\s+stdio\s+npx:\/\/@example\/weather-mcp@1\.4\.0/m);
    expect(result.stderr).toContain("2 of");
  });

  test("a bad custom registry fails with one line naming the field", () => {
    const line = usageError(
      mcpmgr(["registry", "list"], { MCPMGR_REGISTRY: join(REPO_ROOT, "test/fixtures/registry/invalid-entry.json") }),
    );
    expect(line).toContain("servers[3].transport");
    const missing = usageError(mcpmgr(["registry", "list"], { MCPMGR_REGISTRY: join(home, "absent.json") }));
    expect(missing).toContain("absent.json");
  });

  test("a reader that stops after the first line ends nothing with a trace: the rest of the one write is dropped", async () => {
    // The table goes out in one write (printLines): with more than a pipe holds, that write is cut short
    // when `head -1` exits, and the command still ends quietly, with code 0, as `... | head -1` expects.
    const [fetchEntry] = embeddedEntries().filter((entry) => entry.name === "fetch");
    const servers = Array.from({ length: 2000 }, (_, i) => ({
      ...fetchEntry,
      name: `big-${i}`,
      description: "x".repeat(80),
    }));
    const file = join(home, "big-registry.json");
    await Bun.write(file, JSON.stringify({ servers }));
    const result = Bun.spawnSync(
      ["bash", "-c", 'set -o pipefail; "$0" "$1" registry list | head -1', process.execPath, ENTRY],
      {
        cwd: REPO_ROOT,
        env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home, MCPMGR_REGISTRY: file },
        timeout: 20_000,
      },
    );
    expect(result.stdout.toString()).toMatch(/^NAME\s+TRANSPORT\s+SOURCE\s+DESCRIPTION\n$/);
    expect(result.stderr.toString()).toBe(
      `[info] 2000 of ${embeddedEntries().length + 2000} servers (marked *) come from the custom registry ${file}\n`,
    );
    expect(result.exitCode).toBe(0);
  });

  test("bad options and arguments are usage errors", () => {
    expect(usageError(mcpmgr(["registry", "list", "--format", "xml"]))).toContain("--format");
    expect(usageError(mcpmgr(["registry", "list", "--bogus"]))).toContain("--bogus");
    expect(usageError(mcpmgr(["registry", "list", "github"]))).toContain("registry info github");
    // A word that is no registry name is not offered back as a command to paste.
    expect(usageError(mcpmgr(["registry", "list", "x;curl y|sh"]))).toContain("'mcpmgr registry info NAME'");
    expect(usageError(mcpmgr(["registry"]))).toContain("list, search or info");
  });
});

describe("mcpmgr registry info", () => {
  test("shows every field, env marks, tools and the permission profile", () => {
    const result = mcpmgr(["registry", "info", "github"]);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/^github$/m);
    expect(result.stdout).toMatch(/transport\s+stdio/);
    expect(result.stdout).toMatch(/source\s+image ghcr\.io\/github\/github-mcp-server:/);
    expect(result.stdout).toMatch(/permissions\s+outbound to \.github\.com, \.githubusercontent\.com on port 443/);
    expect(result.stdout).toMatch(/GITHUB_PERSONAL_ACCESS_TOKEN\s+required\s+secret/);
    expect(result.stdout).toMatch(/GITHUB_HOST\s+optional\s+GitHub Enterprise/);
    expect(result.stdout).toMatch(/^tools \(\d+\)$/m);
    expect(result.stdout).toContain("get_file_contents");
    expect(result.stdout).toMatch(/origin\s+embedded catalog/);
  });

  test("--format json prints the entry, valid as registry input", () => {
    const result = mcpmgr(["registry", "info", "memory", "--format", "json"]);
    expect(result.exitCode).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      name: "memory",
      transport: "stdio",
      permissions: "none",
      env: [{ name: "MEMORY_FILE_PATH", required: false, secret: false }],
    });
  });

  test("custom entries show their origin and defaults", () => {
    const result = mcpmgr(["registry", "info", "weather"], { MCPMGR_REGISTRY: COMPACT });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/run target\s+npx:\/\/@example\/weather-mcp@1\.4\.0/);
    expect(result.stdout).toMatch(/args\s+--cache off/);
    expect(result.stdout).toMatch(/UNITS\s+optional\s+metric or imperial \(default: metric\)/);
    expect(result.stdout).toContain(`origin       custom registry ${COMPACT}`);
  });

  test("an unknown name exits 2 and suggests close matches", () => {
    const line = usageError(mcpmgr(["registry", "info", "githb"]));
    expect(line).toContain("no server named 'githb'");
    expect(line).toContain("did you mean github");
    expect(usageError(mcpmgr(["registry", "info", "zzzzzzzz"]))).toContain("mcpmgr registry list");
  });

  test("a missing or extra name is a usage error", () => {
    expect(usageError(mcpmgr(["registry", "info"]))).toContain("needs a server name");
    expect(usageError(mcpmgr(["registry", "info", "fetch", "git"]))).toContain("one server name");
  });
});

describe("a custom registry by https URL", () => {
  test("a redirect down to plain http is refused with one line, the plain-http server never asked (review 9, F11)", async () => {
    const lanAddress = networkAddress();
    expect(lanAddress).toBeDefined();
    const certs = await makeTestCa(home);
    let plainRequests = 0;
    const plain = Bun.serve({
      hostname: lanAddress,
      port: 0,
      fetch() {
        plainRequests++;
        return Response.json(INJECTED_REGISTRY);
      },
    });
    const secure = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert: Bun.file(certs.cert), key: Bun.file(certs.key) },
      fetch: () =>
        new Response(null, { status: 302, headers: { location: `http://${lanAddress}:${plain.port}/reg.json` } }),
    });
    try {
      // Async: the servers above answer in this process while the CLI runs.
      const child = Bun.spawn([process.execPath, ENTRY, "registry", "list"], {
        cwd: REPO_ROOT,
        env: {
          ...process.env,
          NO_COLOR: "1",
          MCPMGR_HOME: home,
          MCPMGR_REGISTRY: `https://127.0.0.1:${secure.port}/reg.json`,
          NODE_EXTRA_CA_CERTS: certs.ca,
        },
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
      });
      const [stdout, stderr, exitCode] = await Promise.all([
        new Response(child.stdout).text(),
        new Response(child.stderr).text(),
        child.exited,
      ]);
      const line = expectOneLineError({ exitCode, stdout, stderr }, 2);
      expect(line).toContain(
        `redirected to http://${lanAddress}:${plain.port}/reg.json; a registry decides what runs, so every hop must be https`,
      );
      expect(line).toContain("hint: set MCPMGR_REGISTRY to the registry's https:// URL");
      expect(plainRequests).toBe(0);
    } finally {
      await secure.stop(true);
      await plain.stop(true);
    }
  });
});
