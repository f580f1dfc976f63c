/**
 * An OTLP/HTTP receiver for telemetry tests: a Bun server that decodes the protobuf exports
 * (`/v1/traces`, `/v1/metrics`) with the official OpenTelemetry proto definitions
 * (otlp-transformer's generated root) and keeps the spans with their resource attributes, the
 * names of the metrics and the headers of every export request.
 */
import root from "otlp-proto-root/build/src/generated/root.js";

export interface KeyValue {
  key: string;
  value: { stringValue?: string; intValue?: unknown };
}

export interface Span {
  name: string;
  traceId: Uint8Array;
  spanId: Uint8Array;
  parentSpanId?: Uint8Array;
  kind?: number;
  attributes: KeyValue[];
  /** Spans linked to (other contexts the span relates to). */
  links?: { traceId: Uint8Array; spanId: Uint8Array }[];
}

export interface ReceivedSpan {
  readonly span: Span;
  /** The resource attributes of the export the span came in (service.name, custom attributes). */
  readonly resource: KeyValue[];
}

export interface OtlpReceiver {
  /** The endpoint to give `--otel-endpoint` (the exporter appends /v1/traces, /v1/metrics). */
  readonly endpoint: string;
  readonly spans: ReceivedSpan[];
  readonly metricNames: Set<string>;
  /** The headers of every export request, in arrival order. */
  readonly requestHeaders: Headers[];
  /** `mcpmgr run` options that export to this receiver over plain HTTP, sampling at `samplingRate` when given. */
  otelArgs(samplingRate?: string): string[];
  stop(): Promise<void>;
}

const proto = (
  root as unknown as {
    opentelemetry: {
      proto: {
        collector: {
          trace: { v1: { ExportTraceServiceRequest: { decode(b: Uint8Array): unknown } } };
          metrics: { v1: { ExportMetricsServiceRequest: { decode(b: Uint8Array): unknown } } };
        };
      };
    };
  }
).opentelemetry.proto.collector;

/** A string attribute's value, or undefined when the list does not hold it. */
export const attr = (list: readonly KeyValue[], key: string): string | undefined =>
  list.find((a) => a.key === key)?.value.stringValue;

/** Trace and span ids as the hex a `traceparent` header spells them. */
export const hex = (id: Uint8Array | undefined): string => (id ? Buffer.from(id).toString("hex") : "");

export function startOtlpReceiver(): OtlpReceiver {
  const spans: ReceivedSpan[] = [];
  const metricNames = new Set<string>();
  const requestHeaders: Headers[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      requestHeaders.push(req.headers);
      const body = new Uint8Array(await req.arrayBuffer());
      const path = new URL(req.url).pathname;
      if (path === "/v1/traces") {
        const decoded = proto.trace.v1.ExportTraceServiceRequest.decode(body) as {
          resourceSpans: { resource: { attributes: KeyValue[] }; scopeSpans: { spans: Span[] }[] }[];
        };
        for (const rs of decoded.resourceSpans)
          for (const ss of rs.scopeSpans)
            for (const span of ss.spans) spans.push({ span, resource: rs.resource.attributes });
      } else if (path === "/v1/metrics") {
        const decoded = proto.metrics.v1.ExportMetricsServiceRequest.decode(body) as {
          resourceMetrics: { scopeMetrics: { metrics: { name: string }[] }[] }[];
        };
        for (const rm of decoded.resourceMetrics)
          for (const sm of rm.scopeMetrics) for (const m of sm.metrics) metricNames.add(m.name);
      }
      return new Response(null, { status: 200, headers: { "content-type": "application/x-protobuf" } });
    },
  });
  return {
    endpoint: `http://127.0.0.1:${server.port}`,
    spans,
    metricNames,
    requestHeaders,
    otelArgs: (samplingRate) => [
      "--otel-endpoint",
      `http://127.0.0.1:${server.port}`,
      "--otel-insecure",
      ...(samplingRate === undefined ? [] : ["--otel-sampling-rate", samplingRate]),
    ],
    async stop() {
      await server.stop(true);
    },
  };
}
