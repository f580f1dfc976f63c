/**
 * The `--otel-*` options as one spec, or undefined when telemetry is off (neither an OTLP
 * endpoint nor the Prometheus path): then nothing of OpenTelemetry is even loaded.
 */
import { McpmgrError } from "../errors.ts";

export interface TelemetryValues {
  readonly "otel-endpoint"?: string | undefined;
  readonly "otel-service-name"?: string | undefined;
  readonly "otel-headers": readonly { readonly key: string; readonly value: string }[];
  readonly "otel-insecure": boolean;
  readonly "otel-tracing-enabled": boolean;
  readonly "otel-metrics-enabled": boolean;
  readonly "otel-sampling-rate": number;
  readonly "otel-custom-attributes"?: readonly { readonly key: string; readonly value: string }[] | undefined;
  readonly "otel-env-vars": readonly (readonly string[])[];
  readonly "otel-enable-prometheus-metrics-path": boolean;
  readonly "otel-use-legacy-attributes": boolean;
}

export interface TelemetrySpec {
  readonly serviceName: string;
  /** OTLP/HTTP (protobuf) base URL; undefined: no export. */
  readonly endpoint: URL | undefined;
  readonly headers: Readonly<Record<string, string>>;
  readonly tracing: boolean;
  readonly metrics: boolean;
  readonly samplingRate: number;
  readonly resourceAttributes: Readonly<Record<string, string>>;
  /** Environment variable → value, added to every span as environment.<NAME>. */
  readonly envAttributes: Readonly<Record<string, string>>;
  readonly prometheus: boolean;
  readonly legacyAttributes: boolean;
}

/**
 * mcpmgr's own secrets in its environment (the secrets store's password, `MCPMGR_SECRET_*` values,
 * the OAuth client secret): `--otel-env-vars` naming one would put its value into every span, sent to
 * the collector and kept by whatever stores traces.
 */
function isMcpmgrSecret(name: string): boolean {
  return (
    name === "MCPMGR_SECRETS_PASSWORD" ||
    name.startsWith("MCPMGR_SECRET_") ||
    name === "MCPMGR_REMOTE_OAUTH_CLIENT_SECRET"
  );
}

export function telemetrySpec(
  values: TelemetryValues,
  given: ReadonlySet<string>,
  workload: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): TelemetrySpec | undefined {
  const endpointText = values["otel-endpoint"];
  if (endpointText === undefined && !values["otel-enable-prometheus-metrics-path"]) {
    const stray = [
      "otel-service-name",
      "otel-headers",
      "otel-insecure",
      "otel-sampling-rate",
      "otel-custom-attributes",
      "otel-env-vars",
    ].find((name) => given.has(name) && (values as unknown as Record<string, unknown>)[name] !== false);
    if (stray)
      throw new McpmgrError("MISSING_OPTION", `--${stray} needs --otel-endpoint`, {
        hint: "add --otel-endpoint URL (an OTLP/HTTP collector)",
      });
    return undefined;
  }
  let endpoint: URL | undefined;
  if (endpointText !== undefined) {
    endpoint = new URL(endpointText);
    if (endpoint.protocol === "http:" && !values["otel-insecure"]) {
      // Quoted without its query, which may hold the collector's key.
      const shown = `${endpoint.origin}${endpoint.pathname}${endpoint.search ? "?…" : ""}`;
      throw new McpmgrError("INVALID_OPTION", `--otel-endpoint ${shown}: http:// needs --otel-insecure`, {
        hint: "use https://, or add --otel-insecure for a collector on a trusted network",
      });
    }
  }
  const envAttributes: Record<string, string> = {};
  for (const name of values["otel-env-vars"].flat()) {
    if (isMcpmgrSecret(name))
      throw new McpmgrError("INVALID_OPTION", `--otel-env-vars ${name}: that variable holds a secret of mcpmgr's`, {
        hint: "leave it out: --otel-env-vars copies values into every span the collector receives",
      });
    const value = env[name];
    if (value !== undefined) envAttributes[name] = value;
  }
  return Object.freeze({
    serviceName: values["otel-service-name"] ?? `thv-${workload}`,
    endpoint,
    headers: Object.fromEntries(values["otel-headers"].map((h) => [h.key, h.value])),
    tracing: values["otel-tracing-enabled"] && endpoint !== undefined,
    metrics: values["otel-metrics-enabled"],
    samplingRate: values["otel-sampling-rate"],
    resourceAttributes: Object.fromEntries((values["otel-custom-attributes"] ?? []).map((a) => [a.key, a.value])),
    envAttributes,
    prometheus: values["otel-enable-prometheus-metrics-path"],
    legacyAttributes: values["otel-use-legacy-attributes"],
  });
}
