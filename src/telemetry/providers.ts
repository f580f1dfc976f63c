/**
 * OpenTelemetry for one workload: a tracer exporting spans over OTLP/HTTP protobuf, a
 * meter exporting over OTLP and/or read by the Prometheus serializer for `/metrics`, both
 * with the workload's resource (service name, custom attributes). Loaded only when
 * telemetry is configured (workload/policies.ts imports this module on demand).
 */
import { metrics as metricsApi, type Meter, type Tracer } from "@opentelemetry/api";
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-proto";
import { PrometheusExporter, PrometheusSerializer } from "@opentelemetry/exporter-prometheus";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { MeterProvider, PeriodicExportingMetricReader, type MetricReader } from "@opentelemetry/sdk-metrics";
import {
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import type { TelemetrySpec } from "../config/telemetry-spec.ts";

export interface Telemetry {
  readonly tracer: Tracer | undefined;
  readonly meter: Meter | undefined;
  /** Prometheus text for `/metrics`; undefined when that path is off. */
  readonly prometheusText: (() => Promise<string>) | undefined;
  /** Flushes what is buffered (spans, metrics) and stops exporting. */
  shutdown(): Promise<void>;
}

function signalUrl(endpoint: URL, signal: "traces" | "metrics"): string {
  if (/\/v1\/(traces|metrics)$/.test(endpoint.pathname))
    return endpoint.href.replace(/\/v1\/(traces|metrics)$/, `/v1/${signal}`);
  return `${endpoint.href.replace(/\/+$/, "")}/v1/${signal}`;
}

/** What an exporter hands its callback: code 0 succeeded, anything else failed (with the error). */
interface ExportOutcome {
  code: number;
  error?: Error;
}

/**
 * Has `exporter` say in the workload's log when its exports start failing, and when they reach the
 * collector again: the SDK reports export errors only to its diagnostic logger, which nothing reads,
 * so a collector that is down, a wrong port or path, or a refused key lost every span and metric
 * without a word. Said once per change, not per export (metrics go every 5 s).
 */
function reportFailures<T extends { export(items: never, done: (outcome: ExportOutcome) => void): void }>(
  exporter: T,
  what: string,
  url: string,
  say: ((text: string) => void) | undefined,
): T {
  if (say === undefined) return exporter;
  let failing = false;
  const exportItems = exporter.export.bind(exporter) as (
    items: unknown,
    done: (outcome: ExportOutcome) => void,
  ) => void;
  (exporter as { export: unknown }).export = (items: unknown, done: (outcome: ExportOutcome) => void) =>
    exportItems(items, (outcome) => {
      if (outcome.code !== 0 && !failing) {
        failing = true;
        const reason = (outcome.error?.message ?? "").split("\n")[0]?.slice(0, 300) || "the export failed";
        say(`telemetry: ${what} could not be sent to ${url}: ${reason}; they are dropped until it answers`);
      } else if (outcome.code === 0 && failing) {
        failing = false;
        say(`telemetry: ${what} reach ${url} again`);
      }
      done(outcome);
    });
  return exporter;
}

/** Longest span attribute value exported; longer ones are cut by the SDK. */
const MAX_ATTRIBUTE_LENGTH = 1024;

export function startTelemetry(spec: TelemetrySpec, version: string, warn?: (text: string) => void): Telemetry {
  const resource = resourceFromAttributes({
    "service.name": spec.serviceName,
    "service.version": version,
    ...spec.resourceAttributes,
  });
  let tracerProvider: TracerProvider | undefined;
  if (spec.tracing && spec.endpoint) {
    tracerProvider = new TracerProvider({
      resource,
      // Attribute values come from clients (tool names, resource URIs, request ids, up to the body
      // limit), before authentication: cut long, they cannot fill the export queue with megabytes each.
      spanLimits: { attributeValueLengthLimit: MAX_ATTRIBUTE_LENGTH },
      sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(spec.samplingRate) }),
      spanProcessors: [
        new BatchSpanProcessor({
          exporter: reportFailures(
            new OTLPTraceExporter({ url: signalUrl(spec.endpoint, "traces"), headers: { ...spec.headers } }),
            "spans",
            signalUrl(spec.endpoint, "traces"),
            warn,
          ),
          scheduledDelayMillis: 1_000,
        }),
      ],
    });
  }
  const readers: MetricReader[] = [];
  if (spec.metrics && spec.endpoint) {
    readers.push(
      new PeriodicExportingMetricReader({
        exporter: reportFailures(
          new OTLPMetricExporter({ url: signalUrl(spec.endpoint, "metrics"), headers: { ...spec.headers } }),
          "metrics",
          signalUrl(spec.endpoint, "metrics"),
          warn,
        ),
        exportIntervalMillis: 5_000,
      }),
    );
  }
  let prometheus: PrometheusExporter | undefined;
  if (spec.prometheus) {
    prometheus = new PrometheusExporter({ preventServerStart: true });
    readers.push(prometheus);
  }
  const meterProvider = readers.length > 0 ? new MeterProvider({ resource, readers }) : undefined;
  const serializer = new PrometheusSerializer();
  return {
    tracer: tracerProvider?.getTracer("mcpmgr", version),
    meter:
      meterProvider?.getMeter("mcpmgr", version) ?? (readers.length > 0 ? metricsApi.getMeter("mcpmgr") : undefined),
    prometheusText: prometheus
      ? async () => {
          const { resourceMetrics } = await (prometheus as PrometheusExporter).collect();
          return serializer.serialize(resourceMetrics);
        }
      : undefined,
    async shutdown() {
      await Promise.allSettled([tracerProvider?.shutdown(), meterProvider?.shutdown()]);
    },
  };
}
