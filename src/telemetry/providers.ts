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
import { reportFailures, signalUrl } from "./export-reports.ts";

export interface Telemetry {
  readonly tracer: Tracer | undefined;
  readonly meter: Meter | undefined;
  /** Prometheus text for `/metrics`; undefined when that path is off. */
  readonly prometheusText: (() => Promise<string>) | undefined;
  /** Flushes what is buffered (spans, metrics) and stops exporting. */
  shutdown(): Promise<void>;
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
