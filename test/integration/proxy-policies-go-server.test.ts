/**
 * Policies see the message the server sees, against a real Go server: test/fixtures/go-json-server
 * decodes JSON with encoding/json into structs (keys matched case-insensitively with Unicode
 * folding, the last duplicate winning), run by `mcpmgr run` as a stdio workload (go://, through
 * the stdio bridge) and as a remote HTTP workload (through the transparent forwarder), with
 * the real policies in front: --tools, Cedar (--authz-config), a validating webhook on
 * loopback and audit to a file.
 *   - Spellings the Go server reads as the protocol's keys ("Name", "nAme", "PARAMS",
 *     "paramſ", "Method") are refused with -32600 and never reach it; each of them runs
 *     secret_tool when sent to the server directly.
 *   - Cedar arguments: a decimal, an integer beyond 2^53 and a key in another case no longer
 *     walk past `forbid when { context.arg_amount > 100 }`.
 *   - Go's case folding is what mcpmgr's fold key merges (Go's own Unicode tables).
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { foldKey } from "../../src/middleware/strict-json.ts";
import { CLI_ENTRY, REPO_ROOT, spawnUntil, type Running } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const FIXTURE = "test/fixtures/go-json-server";
let dir: string;
let binary: string;
let goHttp: Running & { url: string };
let webhook: ReturnType<typeof Bun.serve>;
/** What the validating webhook was asked about: "method name". */
const reviewed: string[] = [];

/** Attacks on `--tools echo,…`, a Cedar forbid and a denying webhook, each running secret_tool on the Go server. */
const attacks: Record<string, string> = {
  "params.Name": '{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"Name":"secret_tool"}}',
  "name then nAme": '{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo","nAme":"secret_tool"}}',
  PARAMS: '{"jsonrpc":"2.0","id":13,"method":"tools/call","PARAMS":{"name":"secret_tool"}}',
  "paramſ (long s)": '{"jsonrpc":"2.0","id":14,"method":"tools/call","paramſ":{"name":"secret_tool"}}',
  "method then Method":
    '{"jsonrpc":"2.0","id":15,"method":"tools/list","Method":"tools/call","params":{"name":"secret_tool"}}',
  "Method alone": '{"jsonrpc":"2.0","id":16,"Method":"tools/call","params":{"name":"secret_tool"}}',
  "a duplicate name": '{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","name":"secret_tool"}}',
};

/** Calls of transfer that a Cedar forbid on amounts over 100 must refuse (the Go server reads 1000 or more). */
const dodges: Record<string, string> = {
  "a decimal":
    '{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"transfer","arguments":{"amount":1000.5,"to":"x"}}}',
  "beyond 2^53":
    '{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"transfer","arguments":{"amount":9007199254740993,"to":"x"}}}',
  "Amount, another case":
    '{"jsonrpc":"2.0","id":23,"method":"tools/call","params":{"name":"transfer","arguments":{"Amount":1000,"to":"x"}}}',
};

async function post(url: string, body: string, session?: string): Promise<{ status: number; text: string }> {
  const response = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-06-18",
      ...(session ? { "mcp-session-id": session } : {}),
    },
    body,
  });
  return { status: response.status, text: await response.text() };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-go-policies-"));
  binary = join(dir, "go-json-server");
  const build = Bun.spawnSync(["go", "build", "-o", binary, "."], { cwd: join(REPO_ROOT, FIXTURE), stderr: "pipe" });
  if (build.exitCode !== 0) throw new Error(`go build failed: ${build.stderr.toString()}`);
  const running = await spawnUntil([binary, "-http", "127.0.0.1:0"], /^(http:\/\/\S+)$/m);
  goHttp = { ...running, url: running.match[1] as string };
  webhook = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const review = (await req.json()) as { mcp_request: { method?: string; params?: { name?: string } } };
      const { method, params } = review.mcp_request;
      reviewed.push(`${method} ${params?.name ?? ""}`.trim());
      const allowed = !(method === "tools/call" && params?.name === "secret_tool");
      return Response.json({ allowed, ...(allowed ? {} : { reason: "secret_tool is off limits" }) });
    },
  });
  await writeFile(
    join(dir, "authz.json"),
    JSON.stringify({
      version: "1.0",
      type: "cedarv1",
      cedar: {
        policies: [
          "permit(principal, action, resource);",
          '@id("no-secret") forbid(principal, action, resource == Tool::"secret_tool");',
          '@id("no-big-transfers") forbid(principal, action == Action::"call_tool", resource == Tool::"transfer") when { context.arg_amount > 100 };',
        ],
      },
    }),
  );
  await writeFile(
    join(dir, "webhooks.json"),
    JSON.stringify({
      validating: [{ name: "guard", url: `http://127.0.0.1:${webhook.port}/review`, allow_http: true }],
    }),
  );
  // go build on a clean machine compiles the standard library's net/http first (cold build cache):
  // tens of seconds on two cores.
}, 180_000);

afterAll(async () => {
  await goHttp?.stop();
  webhook?.stop(true);
  await rm(dir, { recursive: true, force: true });
});

test("the Go server reads every one of these spellings as the protocol's keys (the attacks are real)", async () => {
  // An instance of its own: the workloads' server must not have run secret_tool.
  const direct = await spawnUntil([binary, "-http", "127.0.0.1:0"], /^(http:\/\/\S+)$/m);
  try {
    const target = direct.match[1] as string;
    for (const [what, body] of Object.entries(attacks)) {
      const { text } = await post(target, body);
      expect({ what, ran: text.includes("the secret") }).toEqual({ what, ran: true });
    }
    for (const [what, body] of Object.entries(dodges)) {
      const { text } = await post(target, body);
      expect({ what, text }).toMatchObject({
        what,
        text: expect.stringMatching(/transferred (1000|9007199254740993)/),
      });
    }
  } finally {
    await direct.stop();
  }
});

test("mcpmgr's fold key merges every case-folding orbit of Go's Unicode tables", () => {
  const result = Bun.spawnSync([binary, "-fold-orbits"]);
  const orbits = JSON.parse(result.stdout.toString()) as string[][];
  expect(orbits.length).toBeGreaterThan(1000);
  const split = orbits.filter((orbit) => new Set(orbit.map(foldKey)).size !== 1);
  expect(split).toEqual([]);
});

for (const workload of ["stdio", "remote"] as const) {
  describe(`${workload === "stdio" ? "a stdio workload (go://, the stdio bridge)" : "a remote HTTP workload (the forwarder)"}`, () => {
    let run: Running & { match: RegExpExecArray };
    let client: Client;
    let session: string | undefined;
    let url: string;
    const auditLog = () => join(dir, `${workload}-audit.jsonl`);

    beforeAll(async () => {
      await writeFile(join(dir, `${workload}-audit.json`), JSON.stringify({ logFile: auditLog() }));
      const source = workload === "stdio" ? `go://./${FIXTURE}` : goHttp.url;
      run = await spawnUntil(
        [
          process.execPath,
          CLI_ENTRY,
          "run",
          "--foreground",
          source,
          "--name",
          `go-policies-${workload}`,
          ...(workload === "stdio" ? ["--permission-profile", "none"] : []),
          "--tools",
          "echo,transfer,history",
          "--authz-config",
          join(dir, "authz.json"),
          "--webhook-config",
          join(dir, "webhooks.json"),
          "--audit-config",
          join(dir, `${workload}-audit.json`),
        ],
        /^(http:\/\/\S+)$/m,
        { timeoutMs: 90_000 },
      );
      url = run.match[1] as string;
      client = new Client({ name: "go-policies", version: "1.0.0" });
      const transport = new StreamableHTTPClientTransport(new URL(url));
      await client.connect(transport);
      session = transport.sessionId;
    }, 120_000);

    afterAll(async () => {
      await client?.close();
      await run?.stop();
    });

    const callText = async (name: string, args: Record<string, unknown>) => {
      const result = (await client.callTool({ name, arguments: args })) as { content: { text: string }[] };
      return result.content[0]?.text ?? "";
    };

    test("item 1: keys the server reads differently are refused with -32600, before any policy, and never run", async () => {
      expect(await callText("echo", { text: "hello" })).toBe("hello");
      const before = reviewed.length;
      for (const [what, body] of Object.entries(attacks)) {
        const { status, text } = await post(url, body, session);
        const error = (JSON.parse(text) as { error?: { code: number } }).error;
        expect({ what, status, code: error?.code }).toEqual({ what, status: 400, code: -32600 });
      }
      // Tool arguments are inspected (Cedar reads arg_amount, the webhook sees all params): there too.
      const twoAmounts =
        '{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"transfer","arguments":{"amount":1,"Amount":1000,"to":"x"}}}';
      expect((await post(url, twoAmounts, session)).status).toBe(400);
      // The webhook was never asked about them: they were refused at the edge.
      expect(reviewed.slice(before)).toEqual([]);
      expect(await callText("history", {})).not.toContain("secret_tool");
      // The real thing is refused by each policy in turn (--tools first).
      await expect(client.callTool({ name: "secret_tool", arguments: {} })).rejects.toThrow(
        "Unknown tool: secret_tool",
      );
    });

    test("item 2: Cedar arguments it cannot hold exactly are denied, not skipped", async () => {
      expect(await callText("transfer", { amount: 50, to: "x" })).toBe("transferred 50 to x");
      for (const [what, body] of Object.entries(dodges)) {
        const { status, text } = await post(url, body, session);
        expect({ what, status, text }).toMatchObject({
          what,
          status: 403,
          text: expect.stringContaining('Forbidden: call_tool on Tool::\\"transfer\\" is not permitted'),
        });
      }
      expect(await callText("history", {})).not.toMatch(/transfer \{"(amount|Amount)":(1000|9007)/);
    });

    test("audit: every refusal is recorded as denied, with its reason; nothing ran that the policies refused", async () => {
      await client.close();
      await run.stop();
      const lines = (await readFile(auditLog(), "utf8"))
        .trim()
        .split("\n")
        .map(
          (line) =>
            JSON.parse(line) as { requestId?: number; outcome: string; reason?: string; target: { tool?: string } },
        );
      const byId = (id: number) => lines.find((line) => line.requestId === id);
      for (const id of [11, 12, 13, 14, 15, 16, 17, 18]) {
        expect({ id, outcome: byId(id)?.outcome }).toEqual({ id, outcome: "denied" });
        expect(byId(id)?.reason).toStartWith("Invalid Request:");
      }
      expect(byId(21)?.reason).toStartWith("Cedar: forbid policy no-big-transfers could not be evaluated");
      expect(byId(22)?.reason).toBe("Cedar: forbidden by no-big-transfers");
      expect(byId(23)?.reason).toBe(
        'Cedar: argument "Amount" differs from arg_amount, which a policy reads, only by case',
      );
      expect(lines.filter((line) => line.target.tool === "secret_tool" && line.outcome !== "denied")).toEqual([]);
      // Refused lines name what the Go server would have run.
      for (const id of [11, 12, 13, 14, 15, 16, 17])
        expect({ id, tool: byId(id)?.target.tool }).toEqual({ id, tool: "secret_tool" });
    });
  });
}
