/**
 * `mcpmgr proxy` in front of the reference server (@modelcontextprotocol/server-everything),
 * in streamable-http and legacy SSE modes, driven by the SDK client: tools, prompts,
 * resources, notifications, and SSE streams that stay idle past every timeout we know.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { startEverything, startProxy } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

type Mode = "streamableHttp" | "sse";

async function connect(mode: Mode, url: string): Promise<Client> {
  const client = new Client({ name: "mcpmgr-test", version: "1.0.0" }, { capabilities: {} });
  const transport =
    mode === "sse" ? new SSEClientTransport(new URL(url)) : new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  return client;
}

const textOf = (result: unknown) => (result as { content: { type: string; text?: string }[] }).content[0]?.text ?? "";

for (const mode of ["streamableHttp", "sse"] as const) {
  describe(`mcpmgr proxy → server-everything (${mode})`, () => {
    let upstream: Awaited<ReturnType<typeof startEverything>>;
    let proxy: Awaited<ReturnType<typeof startProxy>>;
    let client: Client;

    beforeAll(async () => {
      upstream = await startEverything(mode);
      proxy = await startProxy(upstream.url);
      client = await connect(mode, proxy.url);
    });

    afterAll(async () => {
      await client?.close().catch(() => {});
      await proxy?.stop();
      await upstream?.stop();
    });

    test("the client URL is the proxy's, on the upstream's path", () => {
      expect(new URL(proxy.url).pathname).toBe(new URL(upstream.url).pathname);
      expect(new URL(proxy.url).port).not.toBe(new URL(upstream.url).port);
    });

    test("tools: list and call", async () => {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain("echo");
      const result = await client.callTool({ name: "echo", arguments: { message: "through the proxy" } });
      expect(textOf(result)).toContain("through the proxy");
      const sum = await client.callTool({ name: "get-sum", arguments: { a: 2, b: 40 } });
      expect(textOf(sum)).toContain("42");
    });

    test("prompts: list and get with arguments", async () => {
      const { prompts } = await client.listPrompts();
      expect(prompts.length).toBeGreaterThan(0);
      const withArgs = prompts.find((p) => (p.arguments ?? []).some((a) => a.required));
      expect(withArgs).toBeDefined();
      const args = Object.fromEntries((withArgs?.arguments ?? []).map((a) => [a.name, "Paris"]));
      const prompt = await client.getPrompt({ name: withArgs?.name ?? "", arguments: args });
      expect(JSON.stringify(prompt.messages)).toContain("Paris");
    });

    test("resources: list, templates, read", async () => {
      const { resources } = await client.listResources();
      expect(resources.length).toBeGreaterThan(0);
      const first = resources[0];
      if (first === undefined) throw new Error("no resources listed");
      const read = await client.readResource({ uri: first.uri });
      expect(read.contents[0]?.uri).toBe(first.uri);
      const { resourceTemplates } = await client.listResourceTemplates();
      expect(resourceTemplates.length).toBeGreaterThan(0);
    });

    test("notifications: progress during a tool call arrives with the result", async () => {
      const progress: number[] = [];
      const result = await client.callTool(
        { name: "trigger-long-running-operation", arguments: { duration: 1, steps: 4 } },
        undefined,
        {
          onprogress: (p) => progress.push(p.progress),
        },
      );
      expect(textOf(result)).toMatch(/completed/i);
      // server-everything sends its last progress notification together with the result;
      // over legacy SSE the SDK client then drops it even when connected directly.
      expect(progress.slice(0, 3)).toEqual([1, 2, 3]);
      if (mode === "streamableHttp") expect(progress).toEqual([1, 2, 3, 4]);
    });
  });
}

describe("idle SSE streams survive 30 s of silence", () => {
  test(
    "legacy SSE and the streamable-http GET stream still deliver after 35 s idle",
    async () => {
      const idleMs = 35_000;
      const [sseUpstream, httpUpstream] = await Promise.all([
        startEverything("sse"),
        startEverything("streamableHttp"),
      ]);
      const [sseProxy, httpProxy] = await Promise.all([startProxy(sseUpstream.url), startProxy(httpUpstream.url)]);
      try {
        const [sseClient, httpClient] = await Promise.all([
          connect("sse", sseProxy.url),
          connect("streamableHttp", httpProxy.url),
        ]);
        const logs: string[] = [];
        httpClient.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
          logs.push(String(n.params.level));
        });
        await Bun.sleep(idleMs);

        // Legacy SSE: every response travels on the GET /sse stream that just sat idle.
        const echoed = await sseClient.callTool({ name: "echo", arguments: { message: "after the silence" } });
        expect(textOf(echoed)).toContain("after the silence");

        // Streamable HTTP: server-initiated log messages travel on the idle GET stream.
        await httpClient.setLoggingLevel("debug");
        await httpClient.callTool({ name: "toggle-simulated-logging", arguments: {} });
        const deadline = Date.now() + 12_000;
        while (logs.length === 0 && Date.now() < deadline) await Bun.sleep(100);
        expect(logs.length).toBeGreaterThan(0);

        await Promise.all([sseClient.close(), httpClient.close()]);
      } finally {
        await Promise.all([sseProxy.stop(), httpProxy.stop()]);
        await Promise.all([sseUpstream.stop(), httpUpstream.stop()]);
      }
    },
    { timeout: 90_000 },
  );
});
