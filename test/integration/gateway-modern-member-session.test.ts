/**
 * A 2025-era client session in front of a workload that speaks only 2026-07-28 (the 2026-07-28
 * conformance fixture with `--modern-only`, a remote URL in the group). That revision's server asks
 * for input inside its answer (an `input_required` result) instead of sending its own requests, and
 * logs only for a request that names a level in `_meta`. The gateway turns the first into the
 * session's own elicitation, sampling and roots requests (then retries the call with the answers),
 * as the stdio bridge does for its 2025-era sessions, and sends the level the session set with each
 * request, so the workload's log lines reach it. Before, such a call failed with -32603 ("no handler
 * is registered for 'elicitation/create'") and the session never got a log line.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { CONFORMANCE_FIXTURE_2026, startConformanceServer, type RunningFixture } from "../support/conformance.ts";
import { createTestGroup, type TestGroup } from "../support/gateway-group.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let fixture: RunningFixture;
let group: TestGroup;
let gatewayUrl: string;

beforeAll(async () => {
  fixture = await startConformanceServer({ fixture: CONFORMANCE_FIXTURE_2026, args: ["--modern-only"] });
  group = await createTestGroup();
  group.run(fixture.url, "modern", "sessions");
  gatewayUrl = (await group.gateway("sessions", "--name-prefix", "when-needed")).url;
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  await fixture?.stop();
});

/** A 2025-era SDK client of the gateway that answers elicitation, sampling and roots requests. */
async function session() {
  const client = new Client(
    { name: "session-client", version: "1.0.0" },
    { capabilities: { elicitation: {}, sampling: {}, roots: {} } },
  );
  const asked: string[] = [];
  const logs: unknown[] = [];
  client.setRequestHandler(ElicitRequestSchema, async () => {
    asked.push("elicitation");
    return { action: "accept", content: { name: "Ada" } };
  });
  client.setRequestHandler(CreateMessageRequestSchema, async () => {
    asked.push("sampling");
    return { role: "assistant", content: { type: "text", text: "Paris" }, model: "test-model" };
  });
  client.setRequestHandler(ListRootsRequestSchema, async () => {
    asked.push("roots");
    return { roots: [{ uri: "file:///tmp", name: "tmp" }] };
  });
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    logs.push(notification.params.data);
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(gatewayUrl)));
  const text = async (name: string) => {
    const result = await client.callTool({ name, arguments: {} });
    return (result.content as { text: string }[])[0]?.text;
  };
  return { client, asked, logs, text };
}

test("a 2026-07-28 workload's input rounds become the session's own requests, and the call completes", async () => {
  const { client, asked, text } = await session();
  try {
    expect(await text("test_input_required_result_elicitation")).toBe("Hello, Ada!");
    expect(await text("test_input_required_result_sampling")).toBe("Sampling response: Paris");
    expect(await text("test_input_required_result_list_roots")).toBe("Client exposed 1 root(s)");
    expect(await text("test_input_required_result_multi_round")).toBe("Multi-round complete");
    expect(asked).toEqual(["elicitation", "sampling", "roots", "elicitation", "elicitation"]);
  } finally {
    await client.close();
  }
});

test("the level the session set goes with its requests: the workload's log lines reach it, and none without", async () => {
  const quiet = await session();
  try {
    expect(await quiet.text("test_logging_tool")).toBe("logged");
    expect(quiet.logs).toEqual([]);
  } finally {
    await quiet.client.close();
  }
  const verbose = await session();
  try {
    await verbose.client.setLoggingLevel("debug");
    expect(await verbose.text("test_logging_tool")).toBe("logged");
    expect(verbose.logs).toEqual(["test_logging_tool ran"]);
  } finally {
    await verbose.client.close();
  }
});
