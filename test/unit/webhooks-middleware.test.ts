/**
 * Webhooks as a handler in front of an MCP server, driven with `new Request`, calling real
 * webhook endpoints (a local HTTP server): validating webhooks allow or deny, mutating ones
 * patch the params (and nothing else), bodies are signed, and failure_policy decides what
 * a failing webhook means.
 */
import { afterAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { createHmac } from "node:crypto";
import type { WebhookSpec } from "../../src/config/webhook-config.ts";
import { webhooks } from "../../src/middleware/webhooks.ts";
import { compose, detachedContext } from "../../src/proxy/handler.ts";
import { messagesOf, rpc, toyServer } from "../support/mcp-handler.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const ctx = detachedContext("192.0.2.9");
const seen: { path: string; body: Record<string, any>; headers: Headers }[] = [];

const hooks = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    const path = new URL(req.url).pathname;
    const text = await req.text();
    seen.push({ path, body: JSON.parse(text), headers: req.headers });
    switch (path) {
      case "/allow":
        return Response.json({ allowed: true });
      case "/deny":
        return Response.json({ allowed: false, reason: "not on Sundays" });
      case "/patch-arguments":
        return Response.json({
          allowed: true,
          patch_type: "json_patch",
          patch: [{ op: "add", path: "/params/arguments/audited", value: true }],
        });
      case "/patch-region": {
        // Moves the call to another region: an argument a 2026-07-28 tool mirrors into Mcp-Param-Region.
        const region = (JSON.parse(text) as { mcp_request: { params: { arguments: { to?: string } } } }).mcp_request
          .params.arguments.to;
        return Response.json({
          allowed: true,
          patch: [
            region === undefined
              ? { op: "remove", path: "/params/arguments/region" }
              : { op: "replace", path: "/params/arguments/region", value: region },
          ],
        });
      }
      case "/patch-type-guessed":
        // A type name a webhook author may guess (Kubernetes admission says "JSONPatch").
        return Response.json({
          allowed: true,
          patch_type: "JSONPatch",
          patch: [{ op: "add", path: "/params/arguments/audited", value: true }],
        });
      case "/patch-type-long":
        // A webhook that answers a type made of a whole document (up to the 1 MiB answer bound).
        return Response.json({ allowed: true, patch_type: "x".repeat(100_000), patch: [] });
      case "/patch-method":
        return Response.json({ allowed: true, patch: [{ op: "replace", path: "/method", value: "tools/list" }] });
      case "/patch-target":
        return Response.json({ allowed: true, patch: [{ op: "replace", path: "/params/name", value: "admin" }] });
      case "/slow":
        await Bun.sleep(2_000);
        return Response.json({ allowed: true });
      case "/huge":
        // An answer that never ends: read up to a bound, then a failure.
        return new Response(
          new ReadableStream({
            pull(controller) {
              controller.enqueue(new Uint8Array(64 * 1024).fill(0x20));
            },
          }),
          { headers: { "content-type": "application/json" } },
        );
      case "/redirect":
        return Response.redirect(new URL("/allow", req.url).href, 307);
      case "/patch-name-case":
        return Response.json({ allowed: true, patch: [{ op: "add", path: "/params/Name", value: "admin" }] });
      case "/even-only": {
        // Answers after a while, on the request's own content: under load, each answer must go to its request.
        const n = (JSON.parse(text) as { mcp_request: { params: { arguments: { n: number } } } }).mcp_request.params
          .arguments.n;
        await Bun.sleep(100 + (n % 5) * 40);
        return Response.json({ allowed: n % 2 === 0 });
      }
      default:
        return new Response("no", { status: 500 });
    }
  },
});
afterAll(() => hooks.stop(true));

function hook(name: string, path: string, fields: Partial<WebhookSpec> = {}): WebhookSpec {
  return {
    name,
    url: new URL(path, hooks.url),
    failurePolicy: "fail",
    timeoutMs: 1_000,
    tls: undefined,
    hmacSecretRef: undefined,
    origin: `--webhook-config test.yaml: webhook ${name}`,
    ...fields,
  };
}

function setup(validating: WebhookSpec[], mutating: WebhookSpec[] = [], hmacSecrets = new Map<string, string>()) {
  const server = toyServer();
  const failures: string[] = [];
  const handle = compose(
    server.handler,
    webhooks({ config: { validating, mutating }, hmacSecrets, serverName: "demo", onFailure: (t) => failures.push(t) }),
  );
  return { server, failures, handle };
}

const call = (args: Record<string, unknown> = {}) =>
  rpc({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "echo", arguments: args } });

describe("validating webhooks", () => {
  test("allow: the request reaches the server; the webhook saw it, with the server's name and the caller", async () => {
    seen.length = 0;
    const { server, handle } = setup([hook("ok", "/allow")]);
    expect((await handle(call({ a: 1 }), ctx)).status).toBe(200);
    expect(server.received).toHaveLength(1);
    expect(seen[0]?.body.mcp_request.params.arguments).toEqual({ a: 1 });
    expect(seen[0]?.body.context).toEqual({ server_name: "demo", source_ip: "192.0.2.9" });
  });

  test("deny: 403 with the webhook's reason, and the server never sees it", async () => {
    const { server, handle } = setup([hook("ok", "/allow"), hook("sunday", "/deny")]);
    const response = await handle(call(), ctx);
    expect(response.status).toBe(403);
    const [answer] = await messagesOf(response);
    expect(answer?.error.message).toBe("request denied by webhook sunday: not on Sundays");
    expect(server.received).toHaveLength(0);
  });
});

describe("mutating webhooks", () => {
  test("a patch below /params reaches the server; validating webhooks see the patched request", async () => {
    seen.length = 0;
    const { server, handle } = setup([hook("check", "/allow")], [hook("stamp", "/patch-arguments")]);
    expect((await handle(call({ a: 1 }), ctx)).status).toBe(200);
    expect((server.received[0]?.body as Record<string, any> | undefined)?.params.arguments).toEqual({
      a: 1,
      audited: true,
    });
    expect(seen.find((s) => s.path === "/allow")?.body.mcp_request.params.arguments).toEqual({ a: 1, audited: true });
  });

  test("a patch of the method or of the target is refused (502), whatever the failure policy", async () => {
    for (const path of ["/patch-method", "/patch-target"]) {
      const { server, handle } = setup([], [hook("greedy", path, { failurePolicy: "ignore" })]);
      expect((await handle(call(), ctx)).status).toBe(502);
      expect(server.received).toHaveLength(0);
    }
  });

  test("on a 2026-07-28 call, the Mcp-Param-* header of an argument a patch changed carries its new value", async () => {
    const { server, handle } = setup([], [hook("mover", "/patch-region")]);
    const modernCall = (args: Record<string, unknown>, mirrored: Record<string, string>) =>
      rpc(
        { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "echo", arguments: args } },
        { "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "echo", ...mirrored },
      );
    const moved = await handle(
      modernCall(
        { region: "us-east", priority: 3, to: "eu-west" },
        { "mcp-param-region": "us-east", "mcp-param-priority": "3" },
      ),
      ctx,
    );
    expect(moved.status).toBe(200);
    expect(server.received[0]?.headers.get("mcp-param-region")).toBe("eu-west");
    expect(server.received[0]?.headers.get("mcp-param-priority")).toBe("3");
    // A value a header cannot carry as it is goes in the revision's Base64 form.
    await handle(modernCall({ region: "us-east", to: "zürich" }, { "mcp-param-region": "us-east" }), ctx);
    expect(server.received[1]?.headers.get("mcp-param-region")).toBe(`=?base64?${btoa("z\u00c3\u00bcrich")}?=`);
    // An argument the patch removed needs no header.
    await handle(modernCall({ region: "us-east" }, { "mcp-param-region": "us-east" }), ctx);
    expect(server.received[2]?.headers.has("mcp-param-region")).toBe(false);
    // Two arguments carried the header's value: which one it mirrors cannot be told, so the call is refused.
    const ambiguous = await handle(
      modernCall({ region: "us-east", home: "us-east", to: "eu-west" }, { "mcp-param-region": "us-east" }),
      ctx,
    );
    expect(ambiguous.status).toBe(502);
    expect(server.received).toHaveLength(3);
  });

  test("a patch type mcpmgr does not apply is refused (502), and the client is told the type it applies", async () => {
    const { server, handle } = setup([], [hook("k8s-style", "/patch-type-guessed", { failurePolicy: "ignore" })]);
    const answer = await handle(call(), ctx);
    expect(answer.status).toBe(502);
    const [message] = await messagesOf(answer);
    expect(message?.error?.message).toContain('"JSONPatch"');
    expect(message?.error?.message).toContain('"json_patch"');
    expect(server.received).toHaveLength(0);
    // The type is quoted for the client and the audit line, but only its start: the answer may be 1 MiB.
    const long = await setup([], [hook("long", "/patch-type-long")]).handle(call(), ctx);
    expect(long.status).toBe(502);
    const [said] = await messagesOf(long);
    expect(said?.error?.message.length).toBeLessThan(300);
    expect(said?.error?.message).toContain('"json_patch"');
  });
});

describe("failures", () => {
  test("a failing webhook denies under failure_policy fail and is skipped under ignore", async () => {
    for (const [policy, status] of [
      ["fail", 502],
      ["ignore", 200],
    ] as const) {
      const broken = setup([hook("broken", "/error", { failurePolicy: policy })]);
      expect((await broken.handle(call(), ctx)).status).toBe(status);
      expect(broken.failures[0]).toContain("webhook broken: answered HTTP 500");
    }
  });

  test("an answer larger than 1 MiB is a failure", async () => {
    const { failures, handle } = setup([hook("huge", "/huge", { timeoutMs: 10_000 })]);
    expect((await handle(call(), ctx)).status).toBe(502);
    expect(failures[0]).toContain("webhook huge: answered more than 1048576 bytes");
  });

  test("a redirect is a failure, never followed", async () => {
    seen.length = 0;
    const { failures, handle, server } = setup([hook("moved", "/redirect")]);
    expect((await handle(call(), ctx)).status).toBe(502);
    expect(failures[0]).toContain("webhook moved: answered HTTP 307");
    expect(seen.map((s) => s.path)).toEqual(["/redirect"]);
    expect(server.received).toHaveLength(0);
  });

  test("under concurrent load each request gets its own answer; a slow webhook fails them all at its timeout", async () => {
    const { handle, server } = setup([hook("even", "/even-only", { timeoutMs: 5_000 })]);
    const statuses = await Promise.all(
      Array.from({ length: 24 }, (_, n) => Promise.resolve(handle(call({ n }), ctx)).then((r) => r.status)),
    );
    expect(statuses).toEqual(Array.from({ length: 24 }, (_, n) => (n % 2 === 0 ? 200 : 403)));
    expect(server.received).toHaveLength(12);
    for (const [policy, status] of [
      ["fail", 502],
      ["ignore", 200],
    ] as const) {
      const slow = setup([hook("slow", "/slow", { timeoutMs: 200, failurePolicy: policy })]);
      const started = performance.now();
      const all = await Promise.all(
        Array.from({ length: 16 }, () => Promise.resolve(slow.handle(call(), ctx)).then((r) => r.status)),
      );
      expect(all).toEqual(Array(16).fill(status));
      expect(slow.server.received).toHaveLength(policy === "fail" ? 0 : 16);
      // Waited for side by side, not one after the other (16 × 200 ms).
      expect(performance.now() - started).toBeLessThan(3_200);
    }
  });

  test("a mutating webhook's patch that adds a key the server would read as another is refused", async () => {
    const { handle, server } = setup([], [hook("sneaky", "/patch-name-case")]);
    const refused = await handle(call(), ctx);
    expect(refused.status).toBe(502);
    const [answer] = await messagesOf(refused);
    expect(answer?.error.message).toContain('the key "Name" in params differs from "name" only by case');
    expect(server.received).toHaveLength(0);
  });

  test("a webhook that does not answer in time fails", async () => {
    const { failures, handle } = setup([hook("slow", "/slow", { timeoutMs: 200 })]);
    expect((await handle(call(), ctx)).status).toBe(502);
    expect(failures[0]).toContain("timed out after 200 ms");
  });
});

test("a body signed with the hook's HMAC secret: the webhook can check who called and when", async () => {
  seen.length = 0;
  const { handle } = setup(
    [hook("signed", "/allow", { hmacSecretRef: "hook-key" })],
    [],
    new Map([["hook-key", "k3y"]]),
  );
  await handle(call(), ctx);
  const request = seen[0];
  const timestamp = request?.headers.get("x-mcpmgr-timestamp") ?? "";
  const expected = createHmac("sha256", "k3y")
    .update(`${timestamp}.${JSON.stringify(request?.body)}`)
    .digest("hex");
  expect(request?.headers.get("x-mcpmgr-signature")).toBe(`sha256=${expected}`);
});
