/** OpenTelemetry options (`run`). */
import { booleanOption, repeatableOption, stringOption } from "../option-spec.ts";
import { collectorUrl, commaList, keyValue, keyValueList, nonEmpty, unitInterval } from "../values.ts";

export const telemetryOptions = {
  "otel-endpoint": stringOption({
    description: "OTLP/HTTP endpoint that receives traces and metrics",
    valueHint: "url",
    schema: collectorUrl,
  }),
  "otel-service-name": stringOption({
    description: "Service name reported to OpenTelemetry",
    valueHint: "name",
    defaultText: "thv-<workload-name>",
    schema: nonEmpty,
  }),
  "otel-headers": repeatableOption({
    description: "Header sent to the OTLP endpoint, key=value (repeatable)",
    valueHint: "key=value",
    schema: keyValue,
  }),
  "otel-insecure": booleanOption({ description: "Use plain HTTP to the OTLP endpoint", default: false }),
  "otel-tracing-enabled": booleanOption({ description: "Export traces when an endpoint is configured", default: true }),
  "otel-metrics-enabled": booleanOption({
    description: "Export metrics when an endpoint is configured",
    default: true,
  }),
  "otel-sampling-rate": stringOption({
    description: "Fraction of traces sampled, 0.0 to 1.0",
    valueHint: "rate",
    default: "0.1",
    schema: unitInterval,
  }),
  "otel-custom-attributes": stringOption({
    description: "Resource attributes as comma-separated key=value pairs",
    valueHint: "k=v,...",
    schema: keyValueList,
  }),
  "otel-env-vars": repeatableOption({
    description: "Environment variable names whose values are added to spans (comma-separated, repeatable)",
    valueHint: "names",
    schema: commaList,
  }),
  "otel-enable-prometheus-metrics-path": booleanOption({
    description: "Serve Prometheus metrics at /metrics on the proxy port",
    default: false,
  }),
  "otel-use-legacy-attributes": booleanOption({
    description: "Also emit the legacy span attribute names next to the semantic-convention ones",
    default: true,
  }),
} as const;
