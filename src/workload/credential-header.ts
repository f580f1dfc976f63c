/**
 * Whether a header given with `--remote-forward-headers` carries a credential, told by its name
 * or by its value's form. A background workload's options are recorded (and exported) in plain
 * text, so such a header must come from the secrets store instead (`-secret` form). A
 * heuristic: it errs towards refusing, since the refusal names the safe form and costs one
 * command, while a miss writes a secret into a file.
 */

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

/** Value forms that are credentials whatever the header is called. */
const credentialValue = new RegExp(
  [
    // An authorization scheme and its credentials: one token68 for the plain schemes (not a phrase
    // that opens with the word, "token of thanks"), parameters for Digest and AWS.
    /^(?:bearer|basic|token|negotiate|apikey)\s+[\w.~+/-]+=*$/.source,
    /^(?:digest|aws4-hmac-sha256)\s+\S/.source,
    // A JWT (its header is base64url of `{"`).
    /^eyJ[\w-]+\.[\w-]+\./.source,
    // Well-known key formats: OpenAI/Anthropic/Stripe, GitHub, GitLab, Slack, AWS access keys, Google API keys, npm, Hugging Face.
    // Whole values only: a locale (`LANG=sk_SK.UTF-8`, Slovak) starts the same way.
    /^(?:sk|rk)[-_][\w-]{16,}$/.source,
    /^(?:gh[pousr]_|github_pat_)\w{8}/.source,
    /^glpat-\S{8}/.source,
    /^xox[abposr]-\S{8}/.source,
    /^(?:AKIA|ASIA)[0-9A-Z]{16}$/.source,
    /^AIza[\w-]{30}/.source,
    /^(?:npm|hf)_\w{8}/.source,
  ].join("|"),
  "i",
);

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

/**
 * A value whose form alone says credential (a scheme and its credentials, a JWT, a well-known key
 * format): for values whose names say nothing, such as environment variables (`-e LIMIT=10` is common).
 */
export function isCredentialValue(value: string): boolean {
  return credentialValue.test(value.trim());
}
