/**
 * Which of a server's plain environment variables (`-e`, `--env-file`, `--env-file-dir`) hold a
 * secret: most users give an API key as `-e OPENAI_API_KEY=…` rather than through `--secret`, and it
 * must be kept out of audit data and logs all the same (server-environment.ts redacts it, the gateway
 * counts its workload as holding secrets: gateway/membership.ts). Told by the variable's name, and by
 * its value's form whatever the name (a well-known key format, a URL with a password in it, a webhook URL). A
 * heuristic that errs towards secret: a false positive costs a value shown as `***` in an audit line,
 * a miss costs a key written to a file. The rule is documented in docs/workloads.md.
 */
import { MIN_REDACT_LENGTH } from "./spellings.ts";

/**
 * A word (a name's part, lower case) that holds a credential wherever it sits in the part:
 * `GITHUB_TOKEN`, `NPM_AUTHTOKEN`, `CLIENT_SECRET`, `DBPASSWORD`, `GOOGLE_APPLICATION_CREDENTIALS`.
 */
const credentialWord = /token$|secret|passw(?:or)?d|passphrase|credential|cookie|bearer|jwt/;

/** `auth` as a part's start or end (`AUTH`, `OAUTH`, `BASICAUTH`, `AUTHORIZATION`), but not the words that only start like it. */
const authWord = /^auth(?!or(?:s|ship|ity|ities)?$)|auth$/;

/** Parts that are a credential on their own: `X_PAT`, `DB_PASS`, `DB_PWD`, `SENTRY_DSN` (a DSN carries its key), `PRIVATE`. */
const credentialParts: ReadonlySet<string> = new Set(["key", "pat", "pass", "pwd", "dsn", "private", "privkey"]);

/** Compound key words spelled as one part: `OPENAI_APIKEY`, `AWS_SECRETACCESSKEY`; not `MONKEY`, `TURKEY`, `HOCKEY`. */
const keyCompound =
  /(?:api|access|secret|private|master|signing|license|licence|encryption|client|subscription|auth)key$/;

/**
 * A `key` after one of these names something public or an index, not a proof: `PUBLIC_KEY`,
 * `STRIPE_PUBLISHABLE_KEY`, `SORT_KEY`, `PARTITION_KEY`, `CACHE_KEY`, `IDEMPOTENCY_KEY`, `PRIMARY_KEY`, `HOT_KEY`.
 */
const publicKeyWords: ReadonlySet<string> = new Set([
  "public",
  "pub",
  "publishable",
  "sort",
  "partition",
  "cache",
  "idempotency",
  "primary",
  "foreign",
  "hot",
  "routing",
  "shortcut",
]);

/**
 * Last words that make a name describe a credential rather than hold one: `OAUTH_CLIENT_ID`,
 * `AWS_ACCESS_KEY_ID`, `TOKEN_ENDPOINT`, `AUTH_MODE`, `AUTH_ENABLED`, `MAX_TOKEN_LIMIT`, `SECRET_NAME`,
 * `DB_PASSWORD_FILE` (a path: the Docker secrets convention). Not `header`: `AUTH_HEADER` may hold
 * `Bearer …` itself.
 */
const describingWords: ReadonlySet<string> = new Set([
  "id",
  "ids",
  "type",
  "kind",
  "mode",
  "method",
  "endpoint",
  "url",
  "uri",
  "host",
  "port",
  "path",
  "file",
  "dir",
  "name",
  "timeout",
  "ttl",
  "expiry",
  "expires",
  "lifetime",
  "format",
  "version",
  "enabled",
  "disabled",
  "required",
  "prefix",
  "suffix",
  "length",
  "size",
  "limit",
  "algorithm",
  "alg",
  "scope",
  "scopes",
  "issuer",
  "audience",
  "provider",
  "strategy",
  "policy",
  // A number of tokens, not one (`MAX_TOKEN_COUNT=4096`, `TOKEN_BUDGET`): redacted, every such number in
  // the workload's audit lines would read `***`.
  "count",
  "budget",
  "threshold",
  "window",
  // A socket's path (`SSH_AUTH_SOCK`).
  "sock",
  "socket",
]);

/** Words before a `…token` part that make it a number of tokens (`MAX_TOKEN=4096`, `NUM_TOKEN`). */
const countWords: ReadonlySet<string> = new Set(["max", "min", "num", "total"]);

/** The name's words, lower case: split at `_`, `-`, `.` and between camelCase humps (`apiKey`). */
function wordsOf(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .toLowerCase()
    .split(/[-_.]+/)
    .filter((word) => word !== "");
}

function isCredentialPart(word: string, index: number, words: readonly string[]): boolean {
  if (word === "key") return !publicKeyWords.has(words[index - 1] ?? "");
  if (word.endsWith("token") && countWords.has(words[index - 1] ?? "")) return false;
  return credentialParts.has(word) || credentialWord.test(word) || authWord.test(word) || keyCompound.test(word);
}

/** Whether a variable's name says it holds a credential (see the rule above and in docs/workloads.md). */
export function isCredentialName(name: string): boolean {
  const words = wordsOf(name);
  if (words.length === 0) return false;
  if (words.length > 1 && describingWords.has(words.at(-1) as string)) return false;
  return words.some(isCredentialPart);
}

/** Value forms that are credentials whatever their name. */
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
 * A value whose form alone says credential (a scheme and its credentials, a JWT, a well-known key
 * format): for values whose names say nothing (`-e LIMIT=10` is common).
 */
export function isCredentialValue(value: string): boolean {
  return credentialValue.test(value.trim());
}

/**
 * Query parameter names (whole, any case) that carry a credential beyond what isCredentialName says: a
 * signed URL's signature (`sig`: Azure SAS; `X-Amz-Signature` has the word), an access code (`code`: Azure
 * Functions' key; not `country_code`).
 */
const credentialQueryNames: ReadonlySet<string> = new Set(["sig", "signature", "code"]);

/**
 * The credentials in a URL value: its password (`DATABASE_URL=postgres://app:pw@db/app`) and the values
 * of its query parameters that are credentials by name or form (`API_URL=https://…?api_key=…`), as a
 * server that parses the URL holds them (decoded), and may print them on their own. Undefined for a
 * value that is not a URL; empty for a URL without any.
 */
function urlCredentials(value: string): string[] | undefined {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return undefined;
  const url = URL.parse(value.trim());
  if (url === null) return undefined;
  const found: string[] = [];
  if (url.password !== "") found.push(decoded(url.password));
  for (const [name, part] of url.searchParams) {
    const named =
      isCredentialName(name) || credentialQueryNames.has(name.toLowerCase()) || wordsOf(name).includes("signature");
    if (part !== "" && (named || isCredentialValue(part))) found.push(part);
  }
  return found;
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** A URL with credentials in it: the whole URL is kept out, as they would be (and each of them on its own: secretValues). */
function hasUrlCredentials(value: string): boolean {
  return (urlCredentials(value)?.length ?? 0) > 0;
}

/**
 * Webhook URLs whose path is the secret (whoever has the URL can post as the integration): Slack's
 * (`hooks.slack.com/services/T…/B…/…`), Discord's (`discord.com/api/webhooks/ID/TOKEN`), Microsoft
 * Teams' connectors (`….webhook.office.com/webhookb2/…`), Zapier's, IFTTT's. Told by host and path, whatever
 * the variable's name. Not part of isCredentialValue (a background run's `-e` is not refused for one).
 */
const webhookForm =
  /^https?:\/\/(?:hooks\.slack\.com\/(?:services|workflows|triggers)\/|(?:[\w-]+\.)?discord(?:app)?\.com\/api\/(?:v\d+\/)?webhooks\/|[\w-]+\.webhook\.office\.com\/webhook|outlook\.office(?:365)?\.com\/webhook\/|hooks\.zapier\.com\/hooks\/|maker\.ifttt\.com\/trigger\/)\S/i;

/** A name that says webhook (`SLACK_WEBHOOK_URL`, `DISCORD_WEBHOOK`, `TEAMS_HOOK_URL`): its URL is one too, of any host. */
function isWebhookName(name: string): boolean {
  return wordsOf(name).some((word) => word.includes("webhook") || word === "hook" || word === "hooks");
}

/** A webhook URL: of a known form by its host and path, or any http(s) URL with a path under a webhook name. */
function webhookUrl(name: string, value: string): URL | undefined {
  const url = URL.parse(value.trim());
  if (url === null || !/^https?:$/.test(url.protocol) || url.pathname.length <= 1) return undefined;
  return knownWebhook(url) || isWebhookName(name) ? url : undefined;
}

/** Told by host and path as a client sends them: a port, a user name, a trailing dot or upper case hide nothing. */
function knownWebhook(url: URL): boolean {
  return webhookForm.test(`${url.protocol}//${url.hostname.replace(/\.$/, "")}${url.pathname}`);
}

/** A path segment that is a word or a version (`webhook`, `hooks`, `incoming`, `pre-commit`, `v2`), not a token. */
const wordSegment = /^(?:[a-z]{1,16}(?:[-_][a-z]{1,16})*|v\d{1,3})$/;

/**
 * The path of a webhook URL, which holds its secret and which a server may print without the rest
 * (`POST /services/T…/B…/…`). Under a webhook name alone, only a path with something other than words in
 * it: `WEBHOOK_URL=http://localhost:3000/api` hid every `/api` of the workload's audit and log.
 */
function webhookPath(name: string, value: string): string | undefined {
  const url = webhookUrl(name, value);
  if (url === undefined) return undefined;
  const tokenLike = url.pathname.split("/").some((segment) => segment !== "" && !wordSegment.test(segment));
  return knownWebhook(url) || tokenLike ? url.pathname : undefined;
}

/**
 * A private key in PEM, alone or inside a credentials file (a service account's JSON holds one): a
 * variable's value only (not part of isCredentialValue, whose forms a background run's `-e` is refused for).
 */
const privateKeyPem = /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----/;

/** Words that switch something, never a secret however the variable is named (`USE_AUTH=true`). */
const switchValues = /^(?:true|false|yes|no|on|off|none|null|enabled|disabled)$/i;

/**
 * Whether the plain variable `name=value` is a secret: its name or its value says so, and its value is
 * long enough to be redacted (shorter ones would turn ordinary words into `***`, redact.ts) and no switch.
 */
export function isSecretVariable(name: string, value: string): boolean {
  if (value.length < MIN_REDACT_LENGTH || switchValues.test(value.trim())) return false;
  return (
    isCredentialName(name) ||
    isCredentialValue(value) ||
    privateKeyPem.test(value) ||
    hasUrlCredentials(value) ||
    webhookUrl(name, value) !== undefined
  );
}

/**
 * The values of `variables` that are secrets (isSecretVariable), trimmed too (a key pasted with a space or a
 * line break around it is used, and printed, without it), and the credentials inside those that are URLs (a
 * server may print the password it parsed out of its `DATABASE_URL` without the rest, or a webhook's path).
 */
export function secretValues(variables: Readonly<Record<string, string>>): string[] {
  return Object.entries(variables)
    .filter(([name, value]) => isSecretVariable(name, value))
    .flatMap(([name, value]) => {
      const path = webhookPath(name, value);
      return [
        value,
        ...(value.trim() !== value ? [value.trim()] : []),
        ...(urlCredentials(value) ?? []),
        ...(path !== undefined ? [path] : []),
      ];
    });
}
