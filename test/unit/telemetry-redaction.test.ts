/**
 * The telemetry middleware's redaction of what a span quotes, where no end-to-end test can reach: an error
 * thrown below it (its message and stack go into the span's exception event). A real SDK tracer with an
 * in-memory exporter; the end-to-end case (attributes at an OTLP receiver) is
 * test/integration/telemetry-secrets.test.ts.
 */
import { expect, test } from "bun:test";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import type { TelemetrySpec } from "../../src/config/telemetry-spec.ts";
import { telemetryMiddleware } from "../../src/middleware/telemetry.ts";
import { detachedContext } from "../../src/proxy/handler.ts";
import { redactor } from "../../src/secrets/redact.ts";

const KEY = "sk-live-9d2c4e7a1b3f5086";
const spec: TelemetrySpec = {
  serviceName: "t",
  endpoint: new URL("http://127.0.0.1:1"),
  headers: {},
  tracing: true,
  metrics: false,
  samplingRate: 1,
  resourceAttributes: {},
  envAttributes: {},
  prometheus: false,
  legacyAttributes: false,
};

/** The exception event of a request whose handler throws an error quoting the key, with `redact` or none. */
async function exceptionOf(redact?: (text: string) => string) {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const telemetry = {
    tracer: provider.getTracer("t"),
    meter: undefined,
    prometheusText: undefined,
    shutdown: () => provider.shutdown(),
  };
  const handler = telemetryMiddleware(
    spec,
    telemetry,
    "keyed",
    undefined,
    redact ? { redact } : {},
  )(async () => {
    throw new Error(`fetch https://api.example.com/data?key=${KEY} failed`);
  });
  const request = new Request("http://127.0.0.1/mcp", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "lookup", arguments: {} } }),
  });
  await expect(handler(request, detachedContext("192.0.2.7"))).rejects.toThrow(KEY);
  await provider.forceFlush();
  const [span] = exporter.getFinishedSpans();
  const attributes = span?.events.find((e) => e.name === "exception")?.attributes ?? {};
  return { message: attributes["exception.message"], stack: String(attributes["exception.stacktrace"] ?? "") };
}

test("a workload that holds secrets records an error thrown below telemetry with them as ***; one that holds none, as it is", async () => {
  const held = await exceptionOf(redactor([KEY]));
  expect(held.message).toBe("fetch https://api.example.com/data?key=*** failed");
  expect(held.stack).toContain("key=***");
  expect(held.stack).not.toContain(KEY);
  const open = await exceptionOf();
  expect(open.message).toBe(`fetch https://api.example.com/data?key=${KEY} failed`);
});
