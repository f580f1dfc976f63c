/**
 * Telemetry of a gateway whose group has a member that holds a secret, and puts that secret (its key)
 * in its resources' URIs: the gateway cannot redact the key, so while such a member is in the group its
 * spans' `mcp.resource.uri` and its own log lines about members' URIs have no userinfo, query or
 * fragment (middleware/withheld-uri.ts), as its audit lines have none. A group without secrets has them
 * whole. Real parts: a remote MCP server (SDK `McpServer`) run as members with `mcpmgr run`, one of them
 * with `--remote-forward-headers-secret`, `mcpmgr gateway` with `--otel-*`, an SDK client and an
 * OTLP/HTTP receiver decoding the export (test/support/otlp-receiver.ts).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createMcpHandler, McpServer, ResourceTemplate } from "@modelcontextprotocol/server";
import { createTestGroup, type TestGroup, until } from "../support/gateway-group.ts";
import { attr, hex, type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../support/otlp-receiver.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";

setDefaultTimeout(60_000);

const KEY = "uri-key-7c2e5b90f4";
/** The member's own resources: its key in the query, the userinfo and the fragment. */
const OWN = [
  `https://api.example.com/data?key=${KEY}`,
  `db://reader:${KEY}@db.internal:5432/orders`,
  `https://api.example.com/report#token=${KEY}`,
];
/** Listed by both members of a group: the gateway's log names it ("… is offered by …"). */
const SHARED = `https://api.example.com/shared?key=${KEY}`;
const SHARED_TEMPLATE = `https://api.example.com/shared/{id}?key=${KEY}`;
/** The member's own template: a URI it matches is routed to it. */
const OWN_TEMPLATE = `https://api.example.com/items/{id}?key=${KEY}`;

let group: TestGroup;
let receiver: OtlpReceiver;
let remote: ReturnType<typeof Bun.serve>;

/** A server listing `uris` and `templates`. */
function keyedServer(uris: readonly string[], templates: readonly string[]) {
  return createMcpHandler(() => {
    const server = new McpServer({ name: "keyed-uris", version: "1.0.0" }, { capabilities: { resources: {} } });
    for (const [i, uri] of uris.entries())
      server.registerResource(`r${i}`, uri, { description: "keyed" }, async () => ({
        contents: [{ uri, text: "rows" }],
      }));
    for (const [i, template] of templates.entries())
      server.registerResource(`t${i}`, new ResourceTemplate(template, { list: undefined }), {}, async (uri) => ({
        contents: [{ uri: uri.href, text: "item" }],
      }));
    return server;
  });
}

beforeAll(async () => {
  receiver = startOtlpReceiver();
  group = await createTestGroup();
  // `/own`: the member's resources and the shared one; `/shared`: the shared one alone.
  const own = keyedServer([...OWN, SHARED], [OWN_TEMPLATE, SHARED_TEMPLATE]);
  const shared = keyedServer([SHARED], [SHARED_TEMPLATE]);
  remote = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (req) => (new URL(req.url).pathname === "/own" ? own : shared).fetch(req),
  });
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  await remote?.stop(true);
  await receiver?.stop();
});

/** `mcpmgr run` of the remote server's `path` in `groupName`, forwarding `secret` as its X-Api-Key when given. */
function runMember(path: string, name: string, groupName: string, secret?: string): void {
  const ref = `key${name.replace(/[^a-z]/g, "")}`;
  const started = Bun.spawnSync(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      `http://127.0.0.1:${remote.port}${path}`,
      "--name",
      name,
      "--group",
      groupName,
      ...(secret === undefined ? [] : ["--remote-forward-headers-secret", `X-Api-Key=${ref}`]),
    ],
    {
      cwd: REPO_ROOT,
      env: {
        ...process.env,
        NO_COLOR: "1",
        MCPMGR_HOME: group.home,
        MCPMGR_SECRETS_PROVIDER: "environment",
        ...(secret === undefined ? {} : { [`MCPMGR_SECRET_${ref.toUpperCase()}`]: secret }),
      },
      timeout: 120_000,
    },
  );
  expect({ code: started.exitCode, stderr: started.exitCode === 0 ? "" : started.stderr.toString() }).toEqual({
    code: 0,
    stderr: "",
  });
}

/**
 * Starts a gateway for `groupName` exporting to the receiver, waits for its log line about the shared URI,
 * reads the member's resources (and one of the template's) in a trace of its own; the read spans' URIs in
 * the order read, every attribute value of the trace's spans, and the gateway's output.
 */
async function readTraced(groupName: string) {
  const gateway = await group.gateway(groupName, ...receiver.otelArgs("1"));
  const traceId = crypto.randomUUID().replaceAll("-", "");
  const client = new Client({ name: "gateway-telemetry-secrets", version: "1.0.0" });
  const read = [...OWN, `https://api.example.com/items/7?key=${KEY}`];
  try {
    expect(await until(() => gateway.output().includes("is offered by"))).toBe(true);
    await client.connect(
      new StreamableHTTPClientTransport(new URL(gateway.url), {
        requestInit: { headers: { traceparent: `00-${traceId}-${traceId.slice(0, 16)}-01` } },
      }),
    );
    for (const uri of read) expect((await client.readResource({ uri })).contents[0]?.uri).toBe(uri);
    await client.close();
  } finally {
    await gateway.stop();
  }
  const inTrace = (s: ReceivedSpan) => hex(s.span.traceId) === traceId;
  const isRead = (s: ReceivedSpan) => inTrace(s) && s.span.name === "resources/read";
  expect(await until(() => receiver.spans.filter(isRead).length === read.length)).toBe(true);
  const reads = receiver.spans.filter(isRead).map((s) => attr(s.span.attributes, "mcp.resource.uri"));
  const values = receiver.spans.filter(inTrace).flatMap((s) => s.span.attributes.map((a) => JSON.stringify(a.value)));
  return { reads, values, output: gateway.output() };
}

test("a member that holds a secret and puts it in its resources' URIs: the gateway's spans and log give those URIs without userinfo, query and fragment; a group without secrets gives them whole", async () => {
  expect(group.mcpmgr("group", "create", "keyed").code).toBe(0);
  runMember("/own", "holder", "keyed", KEY);
  runMember("/shared", "plain", "keyed");
  const held = await readTraced("keyed");
  expect(held.reads.sort()).toEqual(
    [
      "https://api.example.com/data?[withheld]",
      "db://[withheld]@db.internal:5432/orders",
      "https://api.example.com/report#[withheld]",
      "https://api.example.com/items/7?[withheld]",
    ].sort(),
  );
  expect(held.values.join("\n")).not.toContain(KEY);
  expect(held.output).toContain('resource "https://api.example.com/shared?[withheld]" is offered by holder, plain');
  expect(held.output).toContain(
    'resource template "https://api.example.com/shared/{id}?[withheld]" is offered by holder, plain',
  );
  expect(held.output).not.toContain(KEY);

  // The same servers as members that hold nothing: the URIs are traced and logged as they are.
  expect(group.mcpmgr("group", "create", "open").code).toBe(0);
  runMember("/own", "holds-nothing", "open");
  runMember("/shared", "also-plain", "open");
  const open = await readTraced("open");
  expect(open.reads.sort()).toEqual([...OWN, `https://api.example.com/items/7?key=${KEY}`].sort());
  expect(open.output).toContain(`resource ${JSON.stringify(SHARED)} is offered by also-plain, holds-nothing`);
});
