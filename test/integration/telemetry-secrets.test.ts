/**
 * A workload's own spans when it holds a secret that its server puts in what it offers (a resource's URI,
 * a tool's and a prompt's name): the workload knows the value, so its spans quote it as `***`, as its
 * audit and log do; a workload that holds none traces the same names whole. Real parts: a stdio server
 * (test/fixtures/keyed-uri-server.ts) run with `mcpmgr run -e API_KEY=…` and a remote SDK `McpServer` run with
 * `--remote-forward-headers-secret` holding the key, an SDK client, and an OTLP/HTTP
 * receiver decoding the export (test/support/otlp-receiver.ts).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { hex, type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../support/otlp-receiver.ts";
import { REPO_ROOT, startRun } from "../support/processes.ts";
import { until } from "../support/gateway-group.ts";

setDefaultTimeout(60_000);

const KEY = "sk-live-4b7e1c9a2f6d3e80";
const PLAIN = "monthly-reports";
const FIXTURE = join(REPO_ROOT, "test/fixtures/keyed-uri-server.ts");

let receiver: OtlpReceiver;
let dir: string;
let pkg: string;
/** The fixture's offer as a remote SDK `McpServer` with the key built in (it is the one mcpmgr sends it). */
let remote: ReturnType<typeof Bun.serve>;

beforeAll(async () => {
  receiver = startOtlpReceiver();
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-telemetry-secrets-"));
  // An npx:// package whose bin runs the fixture, as the gateway tests run theirs.
  await writeFile(join(dir, "server.sh"), `#!/bin/sh\nexec ${process.execPath} ${FIXTURE} "$@"\n`, { mode: 0o755 });
  await writeFile(
    join(dir, "package.json"),
    JSON.stringify({ name: "keyed-fixture", version: "1.0.0", bin: { "keyed-fixture": "server.sh" } }),
  );
  pkg = `npx://${dir}`;
  const keyed = createMcpHandler(() => {
    const server = new McpServer({ name: "keyed-remote", version: "1.0.0" });
    const uri = `https://api.example.com/data?key=${KEY}`;
    server.registerResource("data", uri, {}, async () => ({ contents: [{ uri, text: "rows" }] }));
    server.registerTool(`lookup-${KEY}`, {}, async () => ({ content: [{ type: "text", text: "found" }] }));
    server.registerPrompt(`brief-${KEY}`, {}, async () => ({
      messages: [{ role: "user", content: { type: "text", text: "brief" } }],
    }));
    return server;
  });
  remote = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => keyed.fetch(req) });
});

afterAll(async () => {
  await receiver?.stop();
  await remote?.stop(true);
  if (dir) await rm(dir, { recursive: true, force: true });
});

/**
 * `mcpmgr run ARGS` (with `env` for mcpmgr), lists and uses what the workload offers in a trace of its
 * own; the spans' names, their resource, tool and prompt attributes, and the trace's spans as exported.
 */
async function traced(args: readonly string[], env: Record<string, string> = {}) {
  const home = await mkdtemp(join(tmpdir(), "mcpmgr-telemetry-secrets-home-"));
  const run = await startRun([...args, ...receiver.otelArgs("1")], { env: { MCPMGR_HOME: home, ...env } });
  const traceId = crypto.randomUUID().replaceAll("-", "");
  const client = new Client({ name: "telemetry-secrets", version: "1.0.0" });
  try {
    await client.connect(
      new StreamableHTTPClientTransport(new URL(run.url), {
        requestInit: { headers: { traceparent: `00-${traceId}-${traceId.slice(0, 16)}-01` } },
      }),
    );
    const [resource] = (await client.listResources()).resources;
    const [tool] = (await client.listTools()).tools;
    const [prompt] = (await client.listPrompts()).prompts;
    await client.readResource({ uri: resource?.uri ?? "" });
    await client.callTool({ name: tool?.name ?? "", arguments: {} });
    await client.getPrompt({ name: prompt?.name ?? "" });
    await client.close();
  } finally {
    await run.stop();
    await rm(home, { recursive: true, force: true });
  }
  const inTrace = (s: ReceivedSpan) => hex(s.span.traceId) === traceId;
  const used = ["resources/read", "tools/call", "prompts/get"];
  const isUse = (s: ReceivedSpan) => inTrace(s) && used.some((method) => s.span.name.startsWith(method));
  expect(await until(() => receiver.spans.filter(isUse).length === used.length)).toBe(true);
  const spans = receiver.spans.filter(inTrace).map((s) => s.span);
  const attributes = Object.fromEntries(
    spans
      .filter((s) => used.some((method) => s.name.startsWith(method)))
      .flatMap((s) => s.attributes)
      .filter((a) => ["mcp.resource.uri", "gen_ai.tool.name", "gen_ai.prompt.name"].includes(a.key))
      .map((a) => [a.key, a.value.stringValue]),
  );
  return { names: spans.map((s) => s.name).sort(), attributes, exported: JSON.stringify(spans) };
}

test("a workload that holds a secret its server puts in a resource URI, a tool's and a prompt's name: its spans quote it as ***; one that holds none, whole", async () => {
  const held = await traced([pkg, "--name", "keyed-holder", "-e", `API_KEY=${KEY}`]);
  expect(held.attributes).toEqual({
    "mcp.resource.uri": "https://api.example.com/data?key=***",
    "gen_ai.tool.name": "lookup-***",
    "gen_ai.prompt.name": "brief-***",
  });
  expect(held.names).toContain("tools/call lookup-***");
  expect(held.exported).not.toContain(KEY);

  // Text that is no secret by its name or form: the workload holds none, and traces the names as they are.
  const open = await traced([pkg, "--name", "keyed-open", "-e", `LABEL=${PLAIN}`]);
  expect(open.attributes).toEqual({
    "mcp.resource.uri": `https://api.example.com/data?key=${PLAIN}`,
    "gen_ai.tool.name": `lookup-${PLAIN}`,
    "gen_ai.prompt.name": `brief-${PLAIN}`,
  });
  expect(open.names).toContain(`tools/call lookup-${PLAIN}`);
});

test("a remote run with the key as a --remote-forward-headers-secret value: its spans quote the key as ***", async () => {
  const held = await traced(
    [
      `http://127.0.0.1:${remote.port}/mcp`,
      "--name",
      "keyed-remote",
      "--remote-forward-headers-secret",
      "X-Api-Key=apikey",
    ],
    { MCPMGR_SECRETS_PROVIDER: "environment", MCPMGR_SECRET_APIKEY: KEY },
  );
  expect(held.attributes).toEqual({
    "mcp.resource.uri": "https://api.example.com/data?key=***",
    "gen_ai.tool.name": "lookup-***",
    "gen_ai.prompt.name": "brief-***",
  });
  expect(held.exported).not.toContain(KEY);
});
