/**
 * Audit lines from a real run, read back and checked: one JSON object per MCP event with
 * type, outcome (success, denied, application_error), subject, source, target, duration,
 * and request/response data truncated and scrubbed of credentials; event-type filters.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { CLI_ENTRY, spawnUntil } from "../support/processes.ts";
import { startEchoingRemote } from "../support/echoing-remote.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const PROBE = "npx://./test/fixtures/sandbox-probe";
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-audit-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface AuditLine {
  id: string;
  time: string;
  type: string;
  outcome: string;
  component: string;
  subject: { sub: string };
  source: { address: string };
  target: { method?: string; tool?: string };
  durationMs: number;
  request?: string;
  response?: string;
}

async function session(args: string[], work: (client: Client) => Promise<void>, legacy = false) {
  const run = await spawnUntil([process.execPath, CLI_ENTRY, "run", "--foreground", ...args], /^(http:\/\/\S+)$/m, {
    timeoutMs: 60_000,
  });
  const client = new Client({ name: "audit-test", version: "1.0.0" });
  try {
    const url = new URL(run.match[1] as string);
    await client.connect(legacy ? new SSEClientTransport(url) : new StreamableHTTPClientTransport(url));
    await work(client);
    await client.close();
  } finally {
    await run.stop();
  }
  return run;
}

const lines = async (path: string) =>
  (await readFile(path, "utf8"))
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as AuditLine);

test("every MCP event is one JSON line with its outcome; data is truncated and scrubbed; denials are recorded", async () => {
  const logFile = join(dir, "audit.jsonl");
  const config = join(dir, "audit.json");
  await writeFile(
    config,
    JSON.stringify({
      component: "probe-audit",
      includeRequestData: true,
      includeResponseData: true,
      maxDataSize: 80,
      logFile,
      excludeEventTypes: ["mcp_notification"],
    }),
  );
  await session(
    [PROBE, "--audit-config", config, "--tools", "env,read_file", "-e", "PROBE_SETTING=on"],
    async (client) => {
      await client.listTools();
      await client.callTool({ name: "env", arguments: { name: "PROBE_SETTING", password: "hunter2-secret" } });
      await client.callTool({ name: "read_file", arguments: { path: "/nonexistent/file" } });
      await client.callTool({ name: "write_file", arguments: { path: "/tmp/x" } }).catch(() => {});
      await client.callTool({ name: "env", arguments: { name: "X".repeat(500) } });
    },
  );
  const events = await lines(logFile);
  const types = events.map((e) => e.type);
  expect(types).toContain("mcp_initialize");
  expect(types).toContain("mcp_tools_list");
  expect(types).not.toContain("mcp_notification");
  const calls = events.filter((e) => e.type === "mcp_tool_call");
  expect(calls.map((e) => [e.target.tool, e.outcome])).toEqual([
    ["env", "success"],
    ["read_file", "application_error"],
    ["write_file", "denied"],
    ["env", "success"],
  ]);
  for (const event of events) {
    expect(event.component).toBe("probe-audit");
    expect(event.subject).toEqual({ sub: "local" });
    expect(event.source.address).toMatch(/127\.0\.0\.1|::1|::ffff:127\.0\.0\.1/);
    expect(typeof event.durationMs).toBe("number");
    expect(new Date(event.time).getTime()).toBeGreaterThan(0);
  }
  expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
  const text = await readFile(logFile, "utf8");
  expect(text).not.toContain("hunter2-secret");
  expect(calls[0]?.request).toContain('"password":"[redacted]"');
  expect(calls[3]?.request?.endsWith("…(truncated)")).toBe(true);
  expect(calls[0]?.response).toContain("on");
}, 60_000);

test("--enable-audit writes to stderr with the default configuration; eventTypes narrows what is recorded", async () => {
  const run = await session([PROBE, "--enable-audit"], async (client) => {
    await client.listTools();
  });
  const audited = run
    .output()
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as AuditLine);
  expect(audited.some((e) => e.type === "mcp_tools_list" && e.outcome === "success")).toBe(true);
  expect(audited.every((e) => e.request === undefined)).toBe(true);

  const logFile = join(dir, "only-calls.jsonl");
  const config = join(dir, "only-calls.yaml");
  await writeFile(config, `eventTypes:\n  - mcp_tool_call\nlogFile: ${logFile}\n`);
  await session([PROBE, "--audit-config", config], async (client) => {
    await client.listTools();
    await client.callTool({ name: "env", arguments: { name: "HOME" } });
  });
  expect((await lines(logFile)).map((e) => e.type)).toEqual(["mcp_tool_call"]);
}, 60_000);

test("legacy SSE (--proxy-mode sse): outcomes and answers come from the session's stream, not the 202", async () => {
  const logFile = join(dir, "legacy.jsonl");
  const config = join(dir, "legacy.json");
  await writeFile(config, JSON.stringify({ includeResponseData: true, logFile, eventTypes: ["mcp_tool_call"] }));
  await session(
    [PROBE, "--proxy-mode", "sse", "--audit-config", config, "-e", "PROBE_SETTING=on"],
    async (client) => {
      await client.callTool({ name: "env", arguments: { name: "PROBE_SETTING" } });
      await client.callTool({ name: "read_file", arguments: { path: "/nonexistent/file" } });
    },
    true,
  );
  const calls = await lines(logFile);
  expect(calls.map((l) => [l.target.tool, l.outcome])).toEqual([
    ["env", "success"],
    ["read_file", "application_error"],
  ]);
  expect(calls[0]?.response).toContain("on");
});

/**
 * A foreground `run` of a remote that echoes what it was sent (`echo`), as `name` with `options`,
 * auditing tool calls' answers to `NAME.jsonl`; a client calls its `headers` tool once. The answer the
 * client got, and the audit file's text and tool-call record once the run has stopped.
 */
async function auditedEcho(
  echo: (req: Request) => string,
  name: string,
  options: string[],
  env: Record<string, string> = {},
): Promise<{ answer: string; text: string; call: AuditLine | undefined }> {
  const echoing = startEchoingRemote(echo);
  const logFile = join(dir, `${name}.jsonl`);
  const config = join(dir, `${name}.json`);
  await writeFile(config, JSON.stringify({ includeResponseData: true, maxDataSize: 4096, logFile }));
  let answer: string;
  try {
    const run = await spawnUntil(
      [
        process.execPath,
        CLI_ENTRY,
        "run",
        "--foreground",
        `http://127.0.0.1:${echoing.port}/mcp`,
        "--name",
        name,
        ...options,
        "--audit-config",
        config,
      ],
      /^(http:\/\/\S+)$/m,
      { timeoutMs: 60_000, env },
    );
    const client = new Client({ name: "audit-test", version: "1.0.0" });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(run.match[1] as string)));
      answer = JSON.stringify(await client.callTool({ name: "headers", arguments: {} }));
      await client.close();
    } finally {
      await run.stop();
    }
  } finally {
    await echoing.stop(true);
  }
  const call = (await lines(logFile)).find((e) => e.type === "mcp_tool_call");
  return { answer, text: await readFile(logFile, "utf8"), call };
}

test("a remote's own secrets (a header from the secrets store, a bearer token) are scrubbed from audit data when it echoes them", async () => {
  const tokenFile = join(dir, "remote-token");
  await writeFile(tokenFile, "bearer-value-5c1e77ab", { mode: 0o600 });
  // A remote that answers a tool call with the headers it was sent, as debugging servers and error pages do.
  const { answer, text, call } = await auditedEcho(
    (req) => {
      // And the credentials of its own header scheme alone, and decoded, as an "invalid credentials: …" page would.
      const basic = (req.headers.get("x-upstream-auth") ?? "").split(" ")[1] ?? "";
      return JSON.stringify({ ...Object.fromEntries(req.headers), basic, decoded: atob(basic) });
    },
    "echoing-remote",
    [
      "--remote-forward-headers-secret",
      "X-Api-Key=remote-key",
      "--remote-forward-headers-secret",
      "X-Upstream-Auth=upstream-basic",
      "--remote-auth-bearer-token-file",
      tokenFile,
    ],
    {
      MCPMGR_SECRETS_PROVIDER: "environment",
      MCPMGR_SECRET_REMOTE_KEY: "api-key-value-93d0f4e2",
      MCPMGR_SECRET_UPSTREAM_BASIC: `Basic ${btoa("svc-user:basic-pass-7a41")}`,
    },
  );
  // The remote did get them (this is what its echo put in the answer, before audit).
  expect(answer).toContain("api-key-value-93d0f4e2");
  expect(call?.response).toContain("x-api-key");
  expect(text).not.toContain("api-key-value-93d0f4e2");
  expect(text).not.toContain("bearer-value-5c1e77ab");
  expect(text).not.toContain(btoa("svc-user:basic-pass-7a41"));
  expect(text).not.toContain("basic-pass-7a41");
}, 60_000);

test("a plain --remote-forward-headers value that is a credential (a foreground run's) is scrubbed from audit data as a secret one is", async () => {
  // A remote that answers a tool call with the headers it was sent.
  const { answer, text, call } = await auditedEcho(
    (req) => JSON.stringify(Object.fromEntries(req.headers)),
    "plain-header-remote",
    [
      "--remote-forward-headers",
      "X-Api-Key=plain-api-key-2f6c90b1",
      "--remote-forward-headers",
      "Authorization=Bearer plain-bearer-8e13d5a7",
      "--remote-forward-headers",
      "X-Tenant=acme-tenant-41",
    ],
  );
  expect(answer).toContain("plain-api-key-2f6c90b1");
  expect(call?.response).toContain("x-api-key");
  // An ordinary header stays as it is.
  expect(call?.response).toContain("acme-tenant-41");
  expect(text).not.toContain("plain-api-key-2f6c90b1");
  expect(text).not.toContain("plain-bearer-8e13d5a7");
}, 60_000);
