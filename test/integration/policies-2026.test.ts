/**
 * The policies `mcpmgr run` puts in front of a stdio server, applied to MCP 2026-07-28
 * traffic: stateless requests and the rounds of a multi-round-trip call (the bridge turns
 * the server's sampling request into an InputRequiredResult; the client's retry carries
 * `inputResponses` and the sealed `requestState`). Two callers with tokens from the real
 * authorization server; Cedar (`--authz-config`), a validating webhook served over HTTPS
 * (`--webhook-config`) and telemetry (`/metrics`) each decide on, or count, every round as
 * the request it is, and a list Cedar filtered is private to its caller — through the
 * transparent proxy in front of a 2026-07-28 HTTP server too.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PROBE_SERVER } from "../fixtures/bridge-probe-client.ts";
import { startAuthServer, type AuthServer } from "../support/auth-server.ts";
import { CONFORMANCE_FIXTURE_2026, startConformanceServer } from "../support/conformance.ts";
import { CLI_ENTRY, spawnUntil, type Running } from "../support/processes.ts";
import { makeTestCa } from "../support/test-ca.ts";
import { writeCedarConfig } from "../support/cedar-config.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let auth: AuthServer;
let dir: string;
let webhook: ReturnType<typeof Bun.serve>;
let run: Running & { match: RegExpExecArray };
let url: string;
const tokens: Record<"a" | "b", string> = { a: "", b: "" };
let oidc: string[] = [];

interface Review {
  mcp_request: {
    method: string;
    params?: { name?: string; arguments?: Record<string, unknown>; inputResponses?: Record<string, any> };
  };
  principal?: { sub: string };
}
/** Every review the webhook received. */
const reviews: Review[] = [];

beforeAll(async () => {
  auth = await startAuthServer();
  tokens.a = await auth.token({ client: "service" });
  tokens.b = await auth.token({ client: "otherService" });
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-policies-2026-"));

  // The webhook: HTTPS with a certificate from a test CA; it refuses a round whose sampling
  // answer the client filled in with "forbidden answer".
  const certificates = await makeTestCa(dir);
  webhook = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: Bun.file(certificates.cert), key: Bun.file(certificates.key) },
    async fetch(req) {
      const review = (await req.json()) as Review;
      reviews.push(review);
      const answered = review.mcp_request.params?.inputResponses?.sampling?.content?.text;
      return Response.json(
        answered === "forbidden answer"
          ? { allowed: false, reason: "that answer may not reach the tool" }
          : { allowed: true },
      );
    },
  });

  // Cedar: the first caller may call echo, stats and sample (sample only for prompts that
  // start with "ok"); the second only echo.
  const policies = join(dir, "policies.json");
  await writeCedarConfig(policies, [
    'permit(principal == Client::"service-client", action == Action::"call_tool", resource == Tool::"echo");',
    'permit(principal == Client::"service-client", action == Action::"call_tool", resource == Tool::"stats");',
    'permit(principal == Client::"service-client", action == Action::"call_tool", resource == Tool::"sample") when { context has arg_prompt && context.arg_prompt like "ok*" };',
    'permit(principal == Client::"other-service-client", action == Action::"call_tool", resource == Tool::"echo");',
    'permit(principal == Client::"service-client", action == Action::"read_resource", resource == Resource::"probe://r1");',
  ]);
  const webhooks = join(dir, "webhooks.json");
  await writeFile(
    webhooks,
    JSON.stringify({
      validating: [
        {
          name: "rounds",
          url: `https://127.0.0.1:${webhook.port}/validate`,
          tls_config: { ca_bundle_path: certificates.ca },
        },
      ],
    }),
  );
  oidc = [...auth.oidcArgs()];
  // The bridge probe (a 2025-11-25 stdio server) as a local project.
  await writeFile(join(dir, "server.sh"), `#!/bin/sh\nexec ${process.execPath} ${PROBE_SERVER} "$@"\n`);
  await writeFile(
    join(dir, "package.json"),
    JSON.stringify({ name: "probe-server", version: "1.0.0", bin: { "probe-server": "server.sh" } }),
  );
  run = await spawnUntil(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      "--foreground",
      `npx://${dir}`,
      "--permission-profile",
      "none",
      ...oidc,
      "--authz-config",
      policies,
      "--webhook-config",
      webhooks,
      "--otel-enable-prometheus-metrics-path",
    ],
    /^(http:\/\/\S+)$/m,
    { timeoutMs: 60_000 },
  );
  url = run.match[1] as string;
}, 120_000);

afterAll(async () => {
  await run?.stop();
  await webhook?.stop(true);
  await auth?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

let nextId = 1;

/** A 2026-07-28 request as `who`: `_meta` envelope, Mcp-* headers, no session. */
async function modern(
  who: "a" | "b",
  method: string,
  params: Record<string, unknown> = {},
  endpoint = url,
): Promise<{ status: number; message: { result?: any; error?: { code: number; message: string } } }> {
  const res = await fetch(endpoint, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${tokens[who]}`,
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": method,
      ...(method === "tools/call" ? { "mcp-name": params.name as string } : {}),
      ...(method === "resources/read" ? { "mcp-name": params.uri as string } : {}),
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: nextId++,
      method,
      params: {
        ...params,
        _meta: {
          "io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": { sampling: {} },
        },
      },
    }),
  });
  return { status: res.status, message: (await res.json()) as never };
}

const sampled = (text: string) => ({ sampling: { role: "assistant", content: { type: "text", text }, model: "m" } });

/** The first round of `sample`: the server asked for sampling, the client gets the state to retry with. */
async function firstRound(prompt: string): Promise<string> {
  const first = await modern("a", "tools/call", { name: "sample", arguments: { prompt } });
  expect(first.message.result?.resultType).toBe("input_required");
  expect(first.message.result?.inputRequests?.sampling?.method).toBe("sampling/createMessage");
  return first.message.result.requestState as string;
}

const text = (answer: { message: { result?: any } }) => answer.message.result?.content?.[0]?.text as string;

describe("Cedar", () => {
  test("a Cedar-filtered tools/list is private to its caller: each gets its own, marked private", async () => {
    const names = async (who: "a" | "b") => {
      const listed = await modern(who, "tools/list");
      expect(listed.message.result?.cacheScope).toBe("private");
      return ((listed.message.result?.tools ?? []) as { name: string }[]).map((tool) => tool.name).sort();
    };
    expect(await names("a")).toEqual(["echo", "stats"]);
    expect(await names("b")).toEqual(["echo"]);
    expect(await names("a")).toEqual(["echo", "stats"]);
    expect(await names("b")).toEqual(["echo"]);
  });

  test("a resource Cedar lets one caller read is private to that caller (the older server's answer said public)", async () => {
    const read = await modern("a", "resources/read", { uri: "probe://r1" });
    expect(read.message.result?.contents?.[0]?.text).toBe("contents of probe://r1");
    expect(read.message.result?.cacheScope).toBe("private");
    const refused = await modern("b", "resources/read", { uri: "probe://r1" });
    expect(refused.status).toBe(403);
  });

  test("each stateless request is decided for its own caller", async () => {
    expect(text(await modern("a", "tools/call", { name: "stats", arguments: {} }))).toContain("initialize");
    const refused = await modern("b", "tools/call", { name: "stats", arguments: {} });
    expect(refused.message.error?.message).toContain('Forbidden: call_tool on Tool::"stats" is not permitted');
    expect(text(await modern("b", "tools/call", { name: "echo", arguments: { text: "hi" } }))).toContain('"hi"');
  });

  test("a retry is decided on its own arguments and caller, before its state is used", async () => {
    const state = await firstRound("ok, cedar");
    const retry = (who: "a" | "b", prompt: string, answer = "fine") =>
      modern(who, "tools/call", {
        name: "sample",
        arguments: { prompt },
        inputResponses: sampled(answer),
        requestState: state,
      });
    // The other caller may not call the tool at all, state or not.
    expect((await retry("b", "ok, cedar")).message.error?.message).toContain("Forbidden");
    // Arguments changed on the retry to ones the rule does not allow: refused.
    expect((await retry("a", "not allowed")).message.error?.message).toContain("Forbidden");
    // The state was never spent on them: the proper retry completes the call.
    expect(text(await retry("a", "ok, cedar"))).toContain('"answer":"fine"');
  });
});

describe("webhooks", () => {
  test("the webhook reviews every round as its caller's request, input responses included, and can refuse one", async () => {
    const before = reviews.length;
    const state = await firstRound("ok, webhook");
    const retry = (answer: string) =>
      modern("a", "tools/call", {
        name: "sample",
        arguments: { prompt: "ok, webhook" },
        inputResponses: sampled(answer),
        requestState: state,
      });
    const refused = await retry("forbidden answer");
    expect(refused.message.error?.message).toContain(
      "request denied by webhook rounds: that answer may not reach the tool",
    );
    expect(text(await retry("allowed answer"))).toContain('"answer":"allowed answer"');

    const seen = reviews.slice(before).filter((review) => review.mcp_request.method === "tools/call");
    expect(seen.map((review) => review.mcp_request.params?.name)).toEqual(["sample", "sample", "sample"]);
    expect(seen.map((review) => review.principal?.sub)).toEqual(["service-client", "service-client", "service-client"]);
    expect(seen.map((review) => review.mcp_request.params?.inputResponses?.sampling?.content?.text)).toEqual([
      undefined,
      "forbidden answer",
      "allowed answer",
    ]);
  });

  test("a request Cedar refused never reaches the webhook", async () => {
    const before = reviews.length;
    expect((await modern("b", "tools/call", { name: "stats", arguments: {} })).message.error?.message).toContain(
      "Forbidden",
    );
    expect(reviews.slice(before).filter((review) => review.mcp_request.method === "tools/call")).toEqual([]);
  });
});

describe("telemetry", () => {
  /** A counter's value on /metrics for the line with all these labels (0 when absent). */
  const counter = async (name: string, labels: string[]) => {
    const metrics = await (await fetch(new URL("/metrics", url))).text();
    const line = metrics
      .split("\n")
      .find((l) => l.startsWith(`${name}{`) && labels.every((label) => l.includes(label)));
    return line === undefined ? 0 : Number(line.split(" ").pop());
  };

  test("every round of a call is a request and a tool call of its own", async () => {
    const calls = () => counter("mcp_server_tool_calls_total", ['gen_ai_tool_name="sample"']);
    const requests = (status: number) =>
      counter("mcp_server_requests_total", ['mcp_method_name="tools/call"', `http_response_status_code="${status}"`]);
    const [callsBefore, requestsBefore, deniedBefore] = [await calls(), await requests(200), await requests(403)];
    const state = await firstRound("ok, counted");
    const done = await modern("a", "tools/call", {
      name: "sample",
      arguments: { prompt: "ok, counted" },
      inputResponses: sampled("counted"),
      requestState: state,
    });
    expect(text(done)).toContain('"answer":"counted"');
    expect((await calls()) - callsBefore).toBe(2);
    expect((await requests(200)) - requestsBefore).toBe(2);
    // A round Cedar refuses is counted too, as the refusal it was.
    const refused = await modern("a", "tools/call", {
      name: "sample",
      arguments: { prompt: "not ok" },
      inputResponses: sampled("counted"),
      requestState: state,
    });
    expect(refused.status).toBe(403);
    expect((await requests(403)) - deniedBefore).toBe(1);
    expect((await calls()) - callsBefore).toBe(3);
  });

  test("2026-07-28's own methods are counted under their names, not as other", async () => {
    const discovers = () =>
      counter("mcp_server_requests_total", ['mcp_method_name="server/discover"', 'http_response_status_code="200"']);
    const before = await discovers();
    expect((await modern("a", "server/discover")).status).toBe(200);
    expect((await discovers()) - before).toBe(1);
  });
});

describe("the transparent proxy in front of a 2026-07-28 HTTP server", () => {
  test("a Cedar-filtered tools/list is private to its caller there too", async () => {
    const upstream = await startConformanceServer({ fixture: CONFORMANCE_FIXTURE_2026 });
    const policies = join(dir, "proxy-policies.json");
    await writeCedarConfig(policies, [
      'permit(principal, action == Action::"call_tool", resource == Tool::"test_simple_text");',
      'permit(principal == Client::"service-client", action == Action::"call_tool", resource == Tool::"test_error_handling");',
    ]);
    const proxy = await spawnUntil(
      [process.execPath, CLI_ENTRY, "run", "--foreground", upstream.url, ...oidc, "--authz-config", policies],
      /^(http:\/\/\S+)$/m,
      { timeoutMs: 60_000 },
    );
    try {
      const endpoint = proxy.match[1] as string;
      const names = async (who: "a" | "b") => {
        const listed = await modern(who, "tools/list", {}, endpoint);
        expect(listed.message.result?.cacheScope).toBe("private");
        return ((listed.message.result?.tools ?? []) as { name: string }[]).map((tool) => tool.name).sort();
      };
      expect(await names("a")).toEqual(["test_error_handling", "test_simple_text"]);
      expect(await names("b")).toEqual(["test_simple_text"]);
      expect(await names("a")).toEqual(["test_error_handling", "test_simple_text"]);
    } finally {
      await proxy.stop();
      await upstream.stop();
    }
  }, 60_000);
});
