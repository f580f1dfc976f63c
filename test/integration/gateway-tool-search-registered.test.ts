/**
 * Search mode as a user sets it up for an AI client: `mcpmgr gateway GROUP --detach --tool-search` (the
 * background gateway, a workload of the group) and `mcpmgr client register cursor --group GROUP
 * --gateway`, in subprocesses with a temporary HOME (where Cursor keeps ~/.cursor/mcp.json) and
 * MCPMGR_HOME. The SDK client then connects to the URL the registration wrote into Cursor's file, and
 * finds and calls tools with find_tool and call_tool, as the model behind Cursor would.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { REPO_ROOT } from "../support/processes.ts";
import { cliEnv, runCliOk } from "../support/cli-home.ts";
import { installClients } from "../support/client-home.ts";
import { callTool, echoed, find, TOOLS_JSON, textOf } from "../support/tool-search-group.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const TOOLS_FIXTURE = join(REPO_ROOT, "test/fixtures/tools-json-server.ts");
const GROUP = "research";

let home: string;
let packageDir: string;
let client: Client | undefined;

function env(): Record<string, string> {
  return cliEnv(home);
}

function mcpmgr(...args: string[]) {
  return runCliOk(env(), args);
}

const cursorServers = () =>
  (JSON.parse(readFileSync(join(home, ".cursor", "mcp.json"), "utf8")) as { mcpServers: Record<string, unknown> })
    .mcpServers;

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-search-registered-"));
  packageDir = mkdtempSync(join(tmpdir(), "mcpmgr-search-registered-pkg-"));
  writeFileSync(join(packageDir, "server.sh"), `#!/bin/sh\nexec ${process.execPath} ${TOOLS_FIXTURE} "$@"\n`);
  writeFileSync(
    join(packageDir, "package.json"),
    JSON.stringify({ name: "tools-json-fixture", version: "1.0.0", bin: { "tools-json-fixture": "server.sh" } }),
  );
  installClients(home, env(), ["cursor"]);
  mcpmgr("group", "create", GROUP);
  for (const key of ["weather", "notes"]) {
    mcpmgr(
      "run",
      `npx://${packageDir}`,
      "--name",
      key,
      "--group",
      GROUP,
      "--permission-profile",
      "none",
      "--",
      TOOLS_JSON,
      key,
    );
  }
}, 120_000);

afterAll(async () => {
  await client?.close();
  try {
    for (const row of JSON.parse(mcpmgr("list", "--format", "json").stdout) as { name: string }[])
      mcpmgr("rm", row.name);
  } finally {
    rmSync(home, { recursive: true, force: true });
    rmSync(packageDir, { recursive: true, force: true });
  }
});

test("a background search-mode gateway registered in Cursor: the client finds and calls tools through the URL in Cursor's file", async () => {
  const started = mcpmgr("gateway", GROUP, "--detach", "--tool-search");
  const gatewayUrl = started.stdout.trim();
  expect(gatewayUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);

  const registered = mcpmgr("client", "register", "cursor", "--group", GROUP, "--gateway");
  expect(registered.stderr).toContain(`added gateway-${GROUP} in Cursor`);
  expect(cursorServers()).toEqual({ [`gateway-${GROUP}`]: { url: gatewayUrl } });

  const url = (cursorServers()[`gateway-${GROUP}`] as { url: string }).url;
  client = new Client({ name: "search-registered-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));

  // The model reads two tools and instructions naming the group's workloads, not the group's tools.
  expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(["find_tool", "call_tool"]);
  const instructions = client.getInstructions() ?? "";
  expect(instructions).toContain("find_tool");
  expect(instructions).toContain('notes "A personal notebook');
  expect(instructions).toContain('weather "Weather forecasts');

  // find_tool by a paraphrase, then call_tool reaches the right workload with the arguments.
  expect((await find(client, "remove one of my notes for good", 1))[0]).toBe("notes_delete_note");
  const deleted = await client.callTool({
    name: "call_tool",
    arguments: { name: "notes_delete_note", arguments: { id: "n-42" } },
  });
  expect(deleted.isError).toBeFalsy();
  expect(echoed(deleted)).toEqual({ server: "notes", tool: "delete_note", arguments: { id: "n-42" } });
  expect((await find(client, "will it rain in Lisbon this week", 1))[0]).toBe("weather_get_forecast");

  // Mistakes come back as the clear errors, through the registered gateway too.
  expect(await callTool(client, "notes_delete_note", {})).toContain('missing required argument "id"');
  expect(await callTool(client, "delete_note", { id: "x" })).toContain("Closest names: notes_delete_note");
  // The direct call by gateway name keeps working in search mode.
  const direct = await client.callTool({ name: "weather_get_forecast", arguments: { city: "Lisbon" } });
  expect(textOf(direct)).toContain('"city":"Lisbon"');
}, 120_000);
