/**
 * The helper's configuration read from MCPMGR_EGRESS_CONFIG, validated by hand (the helper has
 * no dependencies) so that a bad field is named, with its path, in one line.
 */
import type { EgressConfig } from "./config.ts";
import { isAddressRule, normalizeHost } from "./host-rules.ts";

const ENV_NAME = "MCPMGR_EGRESS_CONFIG";

function _fail(path: string, message: string): never {
  throw new Error(`${path}: ${message}`);
}

function _object(value: unknown, path: string, keys: readonly string[]): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) _fail(path, "expected a JSON object");
  for (const key of Object.keys(value))
    if (!keys.includes(key)) _fail(`${path}.${key}`, `unknown field (expected one of ${keys.join(", ")})`);
  return value as Record<string, unknown>;
}

function _port(value: unknown, path: string, allowZero: boolean): number {
  const min = allowZero ? 0 : 1;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > 65535)
    _fail(path, `expected an integer port from ${min} to 65535`);
  return value;
}

function _socketPath(value: unknown, path: string): string {
  if (typeof value !== "string" || !value.startsWith("/") || value.length > 100)
    _fail(path, "expected an absolute path");
  return value;
}

function _boolean(value: unknown, path: string): boolean {
  if (typeof value !== "boolean") _fail(path, "expected true or false");
  return value;
}

function _strings(value: unknown, path: string, valid: (s: string) => boolean, expected: string): string[] {
  if (!Array.isArray(value)) _fail(path, `expected an array of ${expected}s`);
  return value.map((item: unknown, i) =>
    typeof item === "string" && valid(item) ? item : _fail(`${path}[${i}]`, `expected ${expected}`),
  );
}

export function configFromEnv(env: Record<string, string | undefined>): EgressConfig {
  const raw = env[ENV_NAME];
  if (raw === undefined || raw.trim() === "")
    throw new Error(`${ENV_NAME} is not set: expected the egress configuration as JSON`);
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    throw new Error(`${ENV_NAME} is not valid JSON: ${(err as Error).message}`);
  }
  const keys = [
    "listenPort",
    "allowAll",
    "allowHosts",
    "allowPorts",
    "blockedAddresses",
    "alwaysBlockedAddresses",
    "blockedHostNames",
    "allowGateway",
    "ingress",
  ];
  const root = _object(value, ENV_NAME, keys);
  const at = (key: string) => `${ENV_NAME}.${key}`;
  const isHostRule = (s: string) => normalizeHost(s.startsWith(".") ? s.slice(1) : s) !== undefined;
  const allowPorts = root.allowPorts ?? [];
  if (!Array.isArray(allowPorts)) _fail(at("allowPorts"), "expected an array of ports");
  const config: EgressConfig = {
    listenPort: _port(root.listenPort ?? 3128, at("listenPort"), true),
    allowAll: _boolean(root.allowAll ?? false, at("allowAll")),
    allowHosts: _strings(root.allowHosts ?? [], at("allowHosts"), isHostRule, "a host name, IP address or .domain"),
    allowPorts: allowPorts.map((p: unknown, i) => _port(p, `${at("allowPorts")}[${i}]`, false)),
    blockedAddresses: _strings(
      root.blockedAddresses ?? [],
      at("blockedAddresses"),
      isAddressRule,
      "an IP address or CIDR range",
    ),
    alwaysBlockedAddresses: _strings(
      root.alwaysBlockedAddresses ?? [],
      at("alwaysBlockedAddresses"),
      isAddressRule,
      "an IP address or CIDR range",
    ),
    blockedHostNames: _strings(root.blockedHostNames ?? [], at("blockedHostNames"), isHostRule, "a host name"),
    allowGateway: _boolean(root.allowGateway ?? false, at("allowGateway")),
  };
  if (root.ingress !== undefined) {
    const ingress = _object(root.ingress, at("ingress"), ["listenPort", "listenPath", "targetHost", "targetPort"]);
    const targetHost = ingress.targetHost;
    if (typeof targetHost !== "string" || normalizeHost(targetHost) === undefined)
      _fail(at("ingress.targetHost"), "expected a host name or IP address");
    config.ingress = {
      listenPort: _port(ingress.listenPort ?? 0, at("ingress.listenPort"), true),
      ...(ingress.listenPath === undefined
        ? {}
        : { listenPath: _socketPath(ingress.listenPath, at("ingress.listenPath")) }),
      targetHost,
      targetPort: _port(ingress.targetPort, at("ingress.targetPort"), false),
    };
  }
  return config;
}
