/**
 * Whether a header given with `--remote-forward-headers` carries a credential, told by its name
 * or by its value's form. A background workload's options are recorded (and exported) in plain
 * text, so such a header must come from the secrets store instead (`-secret` form). A
 * heuristic: it errs towards refusing, since the refusal names the safe form and costs one
 * command, while a miss writes a secret into a file.
 */
import { isCredentialValue } from "./credential-variables.ts";

export { isCredentialValue };

/**
 * Names (lower case) that say credential wherever the word sits: `X-Upstream-Token`,
 * `Proxy-Authorization`. `auth` but not the words that only start like it (`X-Author`,
 * `X-Authority`, `Authorship`): they name people and hosts, not proofs.
 */
const credentialWords =
  /auth(?!or(?:s|ship|ity|ities)?(?:$|[-_.]))|token|secret|passw(?:or)?d|passphrase|cookie|credential|session|signature|private|api[-_.]?key|bearer|jwt/;

/** One part of a name (split at `-`, `_`, `.`) that says credential on its own: `Ocp-Apim-Subscription-Key`, `X-Access-Key`, `X-Amz-Sig`, `Sentry-Dsn` (a DSN carries its key). */
function isCredentialPart(part: string, index: number, parts: readonly string[]): boolean {
  // An idempotency or cache key names a request or an entry; it does not prove anything.
  if (part === "key" && (parts[index - 1] === "idempotency" || parts[index - 1] === "cache")) return false;
  return part.endsWith("key") || ["sig", "pass", "pwd", "pat", "sid", "otp", "csrf", "xsrf", "dsn"].includes(part);
}

/**
 * Telemetry and API vendors' key headers whose names carry no credential word (an OTLP collector
 * is often reached with `--otel-headers x-honeycomb-team=KEY`).
 */
const knownCredentialNames: ReadonlySet<string> = new Set(["x-honeycomb-team", "uptrace-dsn"]);

/**
 * Last words that make a name describe a credential rather than hold one: `token_type=Bearer`,
 * `X-Auth-Mode`, `tokenEndpoint`, `session_timeout`, `X-Amz-Signature-Version` (an OTLP endpoint's
 * query or a header of these names was refused, and the collector's key has no other form than the
 * foreground). Not `id`: a session id is one.
 */
const describingWords: ReadonlySet<string> = new Set([
  "type",
  "kind",
  "mode",
  "method",
  "endpoint",
  "url",
  "uri",
  "timeout",
  "ttl",
  "format",
  "version",
]);

export function isCredentialHeader(name: string, value: string): boolean {
  const lower = name.toLowerCase();
  if (knownCredentialNames.has(lower)) return true;
  // camelCase split too, as query parameters are often spelled (`tokenType`).
  const parts = name
    .replace(/([a-z0-9])([A-Z])/g, "$1-$2")
    .toLowerCase()
    .split(/[-_.]/);
  const describing = parts.length > 1 && describingWords.has(parts.at(-1) as string);
  if (!describing && (credentialWords.test(lower) || lower.split(/[-_.]/).some(isCredentialPart))) return true;
  return isCredentialValue(value);
}
