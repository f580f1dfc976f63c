/**
 * API keys given as plain variables (`-e`, `--env-file`, `--env-file-dir`) are secrets like `--secret`
 * values (secrets/credential-variables.ts): the server gets them, the workload's own audit data and log
 * give `***`, `list` does not show them, an export keeps them working through `run --from-config`
 * without either command printing them, and a gateway counts the workload as holding secrets. So are a
 * webhook URL (its path is its secret) and a registry entry's default that is a secret. Real parts: the
 * sandbox probe (a stdio server that answers with, and logs, its environment), background workloads, a
 * custom registry, a real audit file, the gateway, the SDK client.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { until } from "../support/gateway-group.ts";
import { CLI_ENTRY, REPO_ROOT, spawnUntil } from "../support/processes.ts";

setDefaultTimeout(60_000);

const PROBE = `npx://${join(REPO_ROOT, "test/fixtures/sandbox-probe")}`;
const API_KEY = "cli-api-key-4f1e8a90";
const FILE_TOKEN = "file-token-77c2d5b1";
const DIR_PASSWORD = "dir-password-0a9b3c6e";
const PLAIN = "plain-setting-5d2e";
let home: string;
let dir: string;

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), "mcpmgr-env-secrets-"));
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-env-secrets-files-"));
});
afterAll(async () => {
  for (const name of ["keyed", "member", "hooked", "defaulted"]) mcpmgr("rm", name);
  await rm(home, { recursive: true, force: true });
  await rm(dir, { recursive: true, force: true });
});

function mcpmgr(...args: string[]) {
  return mcpmgrWith({}, ...args);
}

function mcpmgrWith(env: Record<string, string>, ...args: string[]) {
  const result = Bun.spawnSync([process.execPath, CLI_ENTRY, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home, MCPMGR_RUNTIME: "process", ...env },
    timeout: 120_000,
  });
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

/** A command that must have succeeded (its stderr shown in the failure when it did not). */
function expectStarted(result: { code: number; stderr: string }) {
  expect({ code: result.code, stderr: result.code === 0 ? "" : result.stderr }).toEqual({ code: 0, stderr: "" });
}

/** An audit config `NAME.json` in the files folder, recording tool calls with their data to `NAME.jsonl`. */
async function auditConfigNamed(name: string): Promise<{ auditFile: string; auditConfig: string }> {
  const auditFile = join(dir, `${name}.jsonl`);
  const auditConfig = join(dir, `${name}.json`);
  await writeFile(
    auditConfig,
    JSON.stringify({
      logFile: auditFile,
      includeRequestData: true,
      includeResponseData: true,
      eventTypes: ["mcp_tool_call"],
    }),
  );
  return { auditFile, auditConfig };
}

/** Runs `work` with an SDK client connected to `url`. */
async function withClient<T>(url: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ name: "env-secrets", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    return await work(client);
  } finally {
    await client.close();
  }
}

const envOf = async (client: Client, name: string, tool = "env") =>
  JSON.stringify(await client.callTool({ name: tool, arguments: { name } }));

test("keys given with -e, --env-file and --env-file-dir: the server gets them; its audit, its log, list and export's round trip do not show them", async () => {
  await writeFile(join(dir, "server.env"), `PROBE_TOKEN=${FILE_TOKEN}\nPROBE_SETTING=${PLAIN}\n`);
  await mkdir(join(dir, "env.d"));
  await writeFile(join(dir, "env.d", "db"), `PROBE_DB_PASSWORD=${DIR_PASSWORD}\n`);
  const { auditFile, auditConfig } = await auditConfigNamed("audit");
  const options = [
    "--permission-profile",
    "none",
    "--audit-config",
    auditConfig,
    "-e",
    `PROBE_API_KEY=${API_KEY}`,
    "--env-file",
    join(dir, "server.env"),
    "--env-file-dir",
    join(dir, "env.d"),
  ];
  const started = mcpmgr("run", PROBE, "--name", "keyed", ...options);
  expectStarted(started);
  const answers = await withClient(started.stdout.trim(), async (client) => {
    const got = [
      await envOf(client, "PROBE_API_KEY"),
      await envOf(client, "PROBE_TOKEN"),
      await envOf(client, "PROBE_DB_PASSWORD"),
      await envOf(client, "PROBE_SETTING"),
    ];
    await client.callTool({ name: "log_env", arguments: { name: "PROBE_API_KEY" } });
    return got.join("\n");
  });
  // The server has them (the client gets what it answers; audit and logs only record).
  for (const value of [API_KEY, FILE_TOKEN, DIR_PASSWORD, PLAIN]) expect(answers).toContain(value);

  expect(await until(async () => (await readFile(auditFile, "utf8").catch(() => "")).split("\n").length > 4)).toBe(
    true,
  );
  const audit = await readFile(auditFile, "utf8");
  for (const value of [API_KEY, FILE_TOKEN, DIR_PASSWORD]) expect(audit).not.toContain(value);
  expect(audit).toContain("***");
  // An ordinary setting is recorded as it is.
  expect(audit).toContain(PLAIN);

  let logs = "";
  await until(() => (logs = mcpmgr("logs", "keyed").stdout).includes("PROBE_API_KEY="));
  expect(logs).toContain("PROBE_API_KEY=***");
  expect(logs).not.toContain(API_KEY);
  const listed = mcpmgr("list").stdout + mcpmgr("list", "--format", "json").stdout;
  expect(listed).toContain("keyed");
  expect(listed).not.toContain(API_KEY);

  // The export keeps the value (only the file holds it, the user's alone), so the workload runs again
  // from it with the key working; neither command prints it.
  const file = join(dir, "keyed.json");
  const exported = mcpmgr("export", "keyed", file);
  expect(exported.code).toBe(0);
  expect(exported.stdout + exported.stderr).not.toContain(API_KEY);
  expect((await stat(file)).mode & 0o077).toBe(0);
  expect(await readFile(file, "utf8")).toContain(API_KEY);
  expect(mcpmgr("rm", "keyed").code).toBe(0);
  const again = mcpmgr("run", "--from-config", file);
  expectStarted(again);
  expect(again.stdout + again.stderr).not.toContain(API_KEY);
  expect(await withClient(again.stdout.trim(), (client) => envOf(client, "PROBE_API_KEY"))).toContain(API_KEY);
  expect(mcpmgr("rm", "keyed").code).toBe(0);
});

test("a member given an API key with -e and answering with it: the gateway's audit data is withheld, naming it", async () => {
  expect(mcpmgr("group", "create", "keys").code).toBe(0);
  const started = mcpmgr(
    "run",
    PROBE,
    "--name",
    "member",
    "--group",
    "keys",
    "--permission-profile",
    "none",
    "-e",
    `PROBE_API_KEY=${API_KEY}`,
  );
  expectStarted(started);
  await expectGatewayWithholds("keys", "member", "PROBE_API_KEY", API_KEY);
});

/** A gateway of `group` with audit data on: `member`'s answer quoting `value` is withheld from its audit. */
async function expectGatewayWithholds(group: string, member: string, variable: string, value: string) {
  const { auditFile, auditConfig } = await auditConfigNamed(`gateway-${group}`);
  const gateway = await spawnUntil(
    [process.execPath, CLI_ENTRY, "gateway", group, "--audit-config", auditConfig],
    /^(http:\/\/\S+)$/m,
    {
      env: { MCPMGR_HOME: home, MCPMGR_RUNTIME: "process" },
      timeoutMs: 30_000,
    },
  );
  let answer: string;
  try {
    answer = await withClient(gateway.match[1] as string, (client) => envOf(client, variable, `${member}_env`));
  } finally {
    await gateway.stop();
  }
  expect(answer).toContain(value);
  const audit = await readFile(auditFile, "utf8");
  expect(audit).not.toContain(value);
  const call = JSON.parse(audit.trim().split("\n").at(-1) as string) as Record<string, unknown>;
  expect(call.response).toBe(`[withheld: ${member} holds secrets the gateway cannot redact; see its own audit]`);
}

test("a webhook URL given with -e under an ordinary name: its audit data shows neither the URL nor its path; a gateway withholds it", async () => {
  const secretPath = "/services/T0A1B2C3D/B0E4F5G6H/q8Yw3ZpLrT0vXk2Nc5MdJ7sA";
  const webhook = `https://hooks.slack.com${secretPath}`;
  const { auditFile, auditConfig } = await auditConfigNamed("hooked");
  expect(mcpmgr("group", "create", "hooks").code).toBe(0);
  const started = mcpmgr(
    "run",
    PROBE,
    "--name",
    "hooked",
    "--group",
    "hooks",
    "--permission-profile",
    "none",
    "--audit-config",
    auditConfig,
    "-e",
    `PROBE_NOTIFY_URL=${webhook}`,
  );
  expectStarted(started);
  const answer = await withClient(started.stdout.trim(), (client) => envOf(client, "PROBE_NOTIFY_URL"));
  expect(answer).toContain(webhook);
  expect(await until(async () => (await readFile(auditFile, "utf8").catch(() => "")).includes("mcp_tool_call"))).toBe(
    true,
  );
  const audit = await readFile(auditFile, "utf8");
  expect(audit).not.toContain("q8Yw3ZpLrT0vXk2Nc5MdJ7sA");
  expect(audit).toContain("***");
  await expectGatewayWithholds("hooks", "hooked", "PROBE_NOTIFY_URL", webhook);
});

test("a registry entry's default that is a secret: the member's supervisor says it holds secrets, and the gateway withholds its data", async () => {
  const key = "registry-default-key-3c9d71";
  const registry = join(dir, "registry.json");
  await writeFile(
    registry,
    JSON.stringify({
      servers: [
        {
          name: "defaulted",
          description: "the sandbox probe with an API key as a default",
          transport: "stdio",
          source: { npx: "mcpmgr-sandbox-probe" },
          permissions: "none",
          env: [{ name: "PROBE_API_KEY", description: "a shared key", default: key }],
          tools: ["env"],
        },
      ],
    }),
  );
  expect(mcpmgr("group", "create", "defaults").code).toBe(0);
  const started = mcpmgrWith({ MCPMGR_REGISTRY: registry }, "run", "defaulted", "--group", "defaults");
  expectStarted(started);
  // Nothing in the record says so: no option, no env file; only the entry the start read.
  expect(await withClient(started.stdout.trim(), (client) => envOf(client, "PROBE_API_KEY"))).toContain(key);
  await expectGatewayWithholds("defaults", "defaulted", "PROBE_API_KEY", key);
});
