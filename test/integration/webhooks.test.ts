/**
 * Webhooks served by test HTTPS servers (certificates from a test CA made with openssl):
 * a validating webhook denying a tool call, a mutating webhook patching arguments, HMAC
 * signatures checked by the webhook, timeouts under both failure policies, refused http://.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { createHmac } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CLI_ENTRY, spawnCollect, spawnUntil } from "../support/processes.ts";
import { makeTestCa, type TestCertificates } from "../support/test-ca.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const PROBE = "npx://./test/fixtures/sandbox-probe";
const HMAC_SECRET = "webhook-shared-secret";
let dir: string;
let certificates: TestCertificates;
let server: ReturnType<typeof Bun.serve>;
const seen: { path: string; method: string; signed: boolean; principal: boolean }[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-webhooks-"));
  // A test CA, and a server certificate for 127.0.0.1 signed by it.
  certificates = await makeTestCa(dir);
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: Bun.file(certificates.cert), key: Bun.file(certificates.key) },
    async fetch(req) {
      const path = new URL(req.url).pathname;
      const body = await req.text();
      const review = JSON.parse(body) as {
        mcp_request: { method: string; params?: { name?: string; arguments?: Record<string, unknown> } };
        principal?: unknown;
      };
      const signature = req.headers.get("x-mcpmgr-signature");
      const expected = `sha256=${createHmac("sha256", HMAC_SECRET)
        .update(`${req.headers.get("x-mcpmgr-timestamp")}.${body}`)
        .digest("hex")}`;
      seen.push({
        path,
        method: review.mcp_request.method,
        signed: signature === expected,
        principal: review.principal !== undefined,
      });
      const call = review.mcp_request.method === "tools/call" ? review.mcp_request.params : undefined;
      if (path === "/validate") {
        if (signature !== expected) return Response.json({ allowed: false, reason: "bad signature" });
        return Response.json(
          call?.name === "write_file" ? { allowed: false, reason: "writes are not allowed" } : { allowed: true },
        );
      }
      if (path === "/mutate") {
        if (call?.name === "env" && call.arguments?.name === "SECRET_NAME") {
          return Response.json({
            allowed: true,
            patch_type: "json_patch",
            patch: [{ op: "replace", path: "/params/arguments/name", value: "PROBE_SETTING" }],
          });
        }
        if (call?.name === "env" && call.arguments?.name === "CHANGE_METHOD")
          return Response.json({ allowed: true, patch: [{ op: "replace", path: "/method", value: "tools/list" }] });
        if (call?.name === "env" && call.arguments?.name === "CHANGE_TOOL")
          return Response.json({
            allowed: true,
            patch: [{ op: "replace", path: "/params/name", value: "write_file" }],
          });
        return Response.json({ allowed: true });
      }
      if (path === "/deny-all") return Response.json({ allowed: false, reason: "nothing is allowed yet" });
      if (path === "/slow") {
        await Bun.sleep(3_000);
        return Response.json({ allowed: true });
      }
      return new Response("not found", { status: 404 });
    },
  });
}, 60_000);

afterAll(async () => {
  await server?.stop(true);
  await rm(dir, { recursive: true, force: true });
});

async function config(name: string, content: unknown): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, JSON.stringify(content));
  return path;
}

const hook = (name: string, path: string, extra: Record<string, unknown> = {}) => ({
  name,
  url: `https://127.0.0.1:${server.port}${path}`,
  tls_config: { ca_bundle_path: certificates.ca },
  ...extra,
});

async function run(args: string[], env: Record<string, string> = {}) {
  const running = await spawnUntil(
    [process.execPath, CLI_ENTRY, "run", "--foreground", PROBE, "-e", "PROBE_SETTING=on", ...args],
    /^(http:\/\/\S+)$/m,
    { env, timeoutMs: 60_000 },
  );
  const client = new Client({ name: "webhook-test", version: "1.0.0" });
  const connected = await client.connect(new StreamableHTTPClientTransport(new URL(running.match[1] as string))).then(
    () => undefined,
    (err: unknown) => String(err),
  );
  const call = async (name: string, args: Record<string, unknown>) => {
    if (connected !== undefined) return connected;
    try {
      const result = (await client.callTool({ name, arguments: args })) as { content: { text: string }[] };
      return result.content[0]?.text ?? "";
    } catch (err) {
      return `error: ${err instanceof Error ? err.message : String(err)}`;
    }
  };
  return { running, client, call };
}

test("validating denies, mutating patches; both files merge; the webhook checks the HMAC signature", async () => {
  const validating = await config("validating.json", {
    validating: [hook("policy", "/validate", { hmac_secret_ref: "webhook-hmac" })],
  });
  const mutating = await config("mutating.json", { mutating: [hook("rewrite", "/mutate")] });
  seen.length = 0;
  const { running, client, call } = await run(["--webhook-config", validating, "--webhook-config", mutating], {
    MCPMGR_SECRETS_PROVIDER: "environment",
    MCPMGR_SECRET_WEBHOOK_HMAC: HMAC_SECRET,
  });
  try {
    expect(await call("env", { name: "SECRET_NAME" })).toBe("on");
    expect(await call("write_file", { path: "/tmp/nope" })).toContain(
      "request denied by webhook policy: writes are not allowed",
    );
    expect(await call("env", { name: "CHANGE_METHOD" })).toContain("tried to change more than the request's params");
    expect(await call("env", { name: "CHANGE_TOOL" })).toContain("tried to change the tool, prompt or resource");
    const validated = seen.filter((s) => s.path === "/validate");
    expect(validated.length).toBeGreaterThan(0);
    expect(validated.every((s) => s.signed)).toBe(true);
    expect(seen.some((s) => s.path === "/mutate" && s.method === "initialize")).toBe(true);
    await client.close();
  } finally {
    await running.stop();
  }
}, 60_000);

test("a webhook that times out denies under failure_policy fail and is skipped under ignore", async () => {
  for (const [policy, expectation] of [
    ["fail", "validating webhook slow failed"],
    ["ignore", "on"],
  ] as const) {
    const file = await config(`slow-${policy}.json`, {
      validating: [hook("slow", "/slow", { timeout: "500ms", failure_policy: policy })],
    });
    // Under "fail" even initialize is refused: the client cannot connect, and says why.
    const { running, client, call } = await run(["--webhook-config", file]);
    try {
      expect(await call("env", { name: "PROBE_SETTING" })).toContain(expectation);
      await client.close().catch(() => {});
    } finally {
      await running.stop();
    }
  }
}, 60_000);

test("a background run whose webhook refuses mcpmgr's readiness probe says what refused it, not only the status", async () => {
  // The probe goes through the workload's policies like any client: a webhook that refuses everything (or
  // fails, under failure_policy fail) refuses it too, and the run fails; the error said only "initialize
  // answered 403", which reads as the server's failure.
  const file = await config("deny-all.json", { validating: [hook("gate", "/deny-all")] });
  const started = await spawnCollect(
    [process.execPath, CLI_ENTRY, "run", PROBE, "--name", "webhook-refuses-probe", "--webhook-config", file],
    process.env,
  );
  expect(started.code).not.toBe(0);
  expect(started.stderr).toContain("does not answer MCP");
  expect(started.stderr).toContain("request denied by webhook gate: nothing is allowed yet");
}, 60_000);
