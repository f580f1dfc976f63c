/**
 * Client files round-tripped by the CLI as a user drives it (walk 4), in subprocesses with a
 * temporary HOME holding files written the way Codex, Continue and Goose write them: a workload
 * in front of a real MCP server registered with `client register`, stopped and started, and the
 * clients removed again with `client remove`; every file ends byte for byte as it began, and a
 * Continue server of the user's with the workload's name survives it all.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { cliEnv, runCli } from "../support/cli-home.ts";

setDefaultTimeout(60_000);

let home: string;
let fixture: { url: string; stop(): Promise<unknown> };

const mcpmgr = (...args: string[]) => runCli(cliEnv(home), args);

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-clients-round-trip-"));
  const { startConformanceServer } = await import("../support/conformance.ts");
  fixture = await startConformanceServer();
}, 120_000);
afterAll(async () => {
  mcpmgr("rm", "fetch");
  await fixture?.stop();
  rmSync(home, { recursive: true, force: true });
});

const files = {
  codex: [
    ".codex/config.toml",
    [
      'model = "gpt-5-codex"\n\n',
      '[mcp_servers.context7]\ncommand = "npx"\nargs = ["-y", "@upstash/context7-mcp"]\n',
      "# enabled = false   # back on when the quota resets\n\n",
      '# Projects I trust\n[projects."/home/me/app"]\ntrust_level = "trusted"\n',
    ].join(""),
  ],
  continue: [
    ".continue/config.yaml",
    "name: Local Config\nversion: 1.0.0\nschema: v1\nmodels:\n  - name: Claude\n    provider: anthropic\n    model: claude-sonnet-4-5\n",
  ],
  goose: [
    ".config/goose/config.yaml",
    "# goose configure wrote this\nGOOSE_PROVIDER: anthropic\nGOOSE_MODEL: claude-sonnet-4-5\n",
  ],
} as const;

const read = (client: keyof typeof files) => readFileSync(join(home, files[client][0]), "utf8");

test("register, stop, start, a server of the user's with the same name, remove: every file as it began", () => {
  for (const [path, text] of Object.values(files)) {
    mkdirSync(dirname(join(home, path)), { recursive: true });
    writeFileSync(join(home, path), text);
  }
  const run = mcpmgr("run", fixture.url, "--name", "fetch");
  expect(run.code).toBe(0);
  const url = run.stdout.trim();
  for (const client of Object.keys(files)) expect(mcpmgr("client", "register", client).code).toBe(0);
  // The commented-out key stays with context7; mcpmgr's table sits above the projects' heading.
  expect(read("codex")).toBe(
    files.codex[1].replace("\n\n# Projects I trust", `\n\n[mcp_servers.fetch]\nurl = "${url}"\n\n# Projects I trust`),
  );
  expect(read("continue")).toBe(
    `${files.continue[1]}mcpServers:\n  - name: fetch\n    type: streamable-http\n    url: ${url}\n`,
  );

  expect(mcpmgr("stop", "fetch").code).toBe(0);
  for (const client of Object.keys(files) as (keyof typeof files)[]) {
    expect([client, read(client)]).toEqual([client, files[client][1]]);
  }

  expect(mcpmgr("start", "fetch").code).toBe(0);
  // The user adds a fetch server of their own above mcpmgr's, as Continue's docs show one.
  const mine = "  - name: fetch\n    command: uvx\n    args: [mcp-server-fetch]\n";
  const continuePath = join(home, files.continue[0]);
  writeFileSync(continuePath, read("continue").replace("mcpServers:\n", `mcpServers:\n${mine}`));
  const removed = mcpmgr("client", "remove", "continue");
  expect(removed.code).toBe(0);
  expect(removed.stderr).toContain(
    "it has 2 servers named fetch: mcpmgr keeps its own in step and leaves the other alone",
  );
  expect(read("continue")).toBe(`${files.continue[1]}mcpServers:\n${mine}`);

  for (const client of ["codex", "goose"] as const) expect(mcpmgr("client", "remove", client).code).toBe(0);
  expect(read("codex")).toBe(files.codex[1]);
  expect(read("goose")).toBe(files.goose[1]);
});
