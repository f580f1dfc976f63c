/**
 * Cedar authorization end to end: tokens from the real authorization server (their claims
 * in the Cedar context), the local user without authentication, list filtering by the same
 * policies, argument conditions, default deny, audit of denials, and policy syntax errors.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startAuthServer, type AuthServer } from "../support/auth-server.ts";
import { CLI_ENTRY, spawnUntil, startEverything } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const PROBE = "npx://./test/fixtures/sandbox-probe";
let auth: AuthServer;
let dir: string;

beforeAll(async () => {
  auth = await startAuthServer();
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-authz-"));
});
afterAll(async () => {
  await auth?.stop();
  await rm(dir, { recursive: true, force: true });
});

async function policyFile(name: string, policies: string[], yaml = false): Promise<string> {
  const path = join(dir, name);
  const content = { version: "1.0", type: "cedarv1", cedar: { policies, entities_json: "[]" } };
  await writeFile(
    path,
    yaml
      ? `version: "1.0"\ntype: cedarv1\ncedar:\n  policies:\n${policies.map((p) => `    - '${p}'`).join("\n")}\n`
      : JSON.stringify(content),
  );
  return path;
}

async function session(args: string[], token?: string) {
  const run = await spawnUntil(
    [process.execPath, CLI_ENTRY, "run", "--foreground", PROBE, "-e", "PROBE_SETTING=on", ...args],
    /^(http:\/\/\S+)$/m,
    { timeoutMs: 60_000 },
  );
  const client = new Client({ name: "authz-test", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(
      new URL(run.match[1] as string),
      token ? { requestInit: { headers: { authorization: `Bearer ${token}` } } } : {},
    ),
  );
  const call = async (name: string, args: Record<string, unknown>) => {
    try {
      const result = (await client.callTool({ name, arguments: args })) as { content: { text: string }[] };
      return result.content[0]?.text ?? "";
    } catch (err) {
      return `error: ${err instanceof Error ? err.message : String(err)}`;
    }
  };
  return { run, client, call };
}

test("with OIDC: the token's subject and claims decide; lists are filtered; arguments can be conditions", async () => {
  const policies = await policyFile("oidc.json", [
    'permit(principal == Client::"service-client", action == Action::"call_tool", resource == Tool::"env") when { context.claim_scope like "*mcp:read*" };',
    'permit(principal, action == Action::"call_tool", resource == Tool::"read_file") when { context has arg_path && context.arg_path like "/etc/*" };',
  ]);
  // --tools and audit in the chain too: the principal must survive every rewritten request.
  const auditLog = join(dir, "oidc-audit.jsonl");
  const auditConfig = join(dir, "oidc-audit.json");
  await writeFile(auditConfig, JSON.stringify({ logFile: auditLog, eventTypes: ["mcp_tool_call"] }));
  const { run, client, call } = await session(
    [
      "--authz-config",
      policies,
      "--tools",
      "env,read_file,write_file",
      "--audit-config",
      auditConfig,
      ...auth.oidcArgs(),
    ],
    await auth.token({ scope: "mcp:read" }),
  );
  try {
    // Lists are decided without arguments: read_file, allowed only for some, is not listed.
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["env"]);
    expect(await call("env", { name: "PROBE_SETTING" })).toBe("on");
    expect(await call("read_file", { path: "/etc/hostname" })).not.toContain("Forbidden");
    expect(await call("read_file", { path: "/tmp/elsewhere" })).toContain(
      'Forbidden: call_tool on Tool::\\"read_file\\" is not permitted',
    );
    expect(await call("write_file", { path: "/tmp/x" })).toContain("Forbidden");
    // Methods outside the model are denied by default.
    const prompt = await client.getPrompt({ name: "anything" }).then(
      () => "allowed",
      (err: unknown) => String(err),
    );
    expect(prompt).toContain("Forbidden");
    await client.close();
  } finally {
    await run.stop();
  }
  const subjects = (await readFile(auditLog, "utf8"))
    .trim()
    .split("\n")
    .map((line) => (JSON.parse(line) as { subject: { sub: string } }).subject.sub);
  expect(subjects.length).toBeGreaterThan(0);
  expect(new Set(subjects)).toEqual(new Set(["service-client"]));
  // The same policies, a token without the scope the first rule wants: env is gone.
  const narrow = await session(
    ["--authz-config", policies, ...auth.oidcArgs()],
    await auth.token({ scope: "mcp:write" }),
  );
  try {
    expect((await narrow.client.listTools()).tools.map((t) => t.name)).toEqual([]);
    expect(await narrow.call("env", { name: "PROBE_SETTING" })).toContain("Forbidden");
    await narrow.client.close();
  } finally {
    await narrow.run.stop();
  }
}, 120_000);

test("without authentication the principal is the local user; denials are audited as denied (YAML policy file)", async () => {
  const policies = await policyFile(
    "local.yaml",
    ['permit(principal == Client::"local", action == Action::"call_tool", resource == Tool::"env");'],
    true,
  );
  const logFile = join(dir, "audit.jsonl");
  const audit = join(dir, "audit.json");
  await writeFile(audit, JSON.stringify({ logFile, eventTypes: ["mcp_tool_call"] }));
  const { run, client, call } = await session(["--authz-config", policies, "--audit-config", audit]);
  try {
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["env"]);
    expect(await call("env", { name: "PROBE_SETTING" })).toBe("on");
    expect(await call("write_file", { path: "/tmp/x" })).toContain("Forbidden");
    // On the wire: 403 with a JSON-RPC error; a method no policy speaks of is denied by default,
    // and a call sent without an id (as a notification) is decided all the same.
    const sessionId = (client as unknown as { _transport: { sessionId?: string } })._transport.sessionId ?? "";
    const raw = (body: unknown) =>
      fetch(run.match[1] as string, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-06-18",
          "mcp-session-id": sessionId,
        },
        body: JSON.stringify(body),
      });
    const unknownMethod = await raw({
      jsonrpc: "2.0",
      id: 7,
      method: "completion/complete",
      params: { ref: { type: "ref/prompt", name: "p" }, argument: { name: "a", value: "" } },
    });
    expect(unknownMethod.status).toBe(403);
    expect(((await unknownMethod.json()) as { error: { code: number } }).error.code).toBe(-32001);
    const idless = await raw({
      jsonrpc: "2.0",
      method: "tools/call",
      params: { name: "write_file", arguments: { path: "/tmp/x" } },
    });
    expect(idless.status).toBe(403);
    await client.close();
  } finally {
    await run.stop();
  }
  const outcomes = (await readFile(logFile, "utf8"))
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { target: { tool: string }; outcome: string });
  expect(outcomes.map((e) => [e.target.tool, e.outcome])).toEqual([
    ["env", "success"],
    ["write_file", "denied"],
  ]);
}, 120_000);

test("a resource a forbid names is refused under every spelling the server reads as it (scheme case, dot segments)", async () => {
  const forbidden = "demo://resource/static/document/features.md";
  const policies = await policyFile("spellings.json", [
    "permit(principal, action, resource);",
    `forbid(principal, action == Action::"read_resource", resource == Resource::"${forbidden}");`,
  ]);
  // The reference server (TypeScript SDK) looks a resource up by its URI as a WHATWG URL reads it.
  const upstream = await startEverything("streamableHttp");
  const run = await spawnUntil(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      "--foreground",
      upstream.url,
      "--name",
      "spellings",
      "--authz-config",
      policies,
    ],
    /^(http:\/\/\S+)$/m,
    { timeoutMs: 60_000 },
  );
  const client = new Client({ name: "authz-test", version: "1.0.0" });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(run.match[1] as string)));
    const read = async (uri: string) => {
      try {
        const { contents } = await client.readResource({ uri });
        return `read ${contents[0]?.uri}`;
      } catch (err) {
        return `error: ${err instanceof Error ? err.message : String(err)}`;
      }
    };
    // Another document is readable, so the server does answer reads through the proxy.
    expect(await read("demo://resource/static/document/architecture.md")).toBe(
      "read demo://resource/static/document/architecture.md",
    );
    for (const uri of [
      forbidden,
      "DEMO://resource/static/document/features.md",
      "demo://resource/static/document/./features.md",
      "demo://resource/static/document/x/../features.md",
      "demo://resource/static/document/%66eatures.md",
    ]) {
      const outcome = await read(uri);
      expect(outcome).toContain("error:");
      expect(outcome).toContain("Forbidden");
    }
  } finally {
    await client.close().catch(() => {});
    await run.stop();
    await upstream.stop();
  }
}, 120_000);
