/**
 * Which plain environment variables are secrets (secrets/credential-variables.ts): by name, with the
 * false positives an experienced user would object to (KEYBOARD, MONKEY, MAX_TOKENS, PUBLIC_KEY,
 * AWS_ACCESS_KEY_ID, AUTHOR) left out, and by value form whatever the name.
 */
import { expect, test } from "bun:test";
import { isCredentialName, isSecretVariable, secretValues } from "../../src/secrets/credential-variables.ts";
import { redactor } from "../../src/secrets/redact.ts";

test("names that hold a credential", () => {
  for (const name of [
    "GITHUB_TOKEN",
    "GITHUB_PERSONAL_ACCESS_TOKEN",
    "NPM_AUTHTOKEN",
    "OPENAI_API_KEY",
    "OPENAI_APIKEY",
    "apiKey",
    "BRAVE_API_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "CLIENT_SECRET",
    "DB_PASSWORD",
    "PGPASSWORD",
    "MYSQL_PWD",
    "SMTP_PASS",
    "REDIS_PASSWD",
    "GIT_PAT",
    "SENTRY_DSN",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "SESSION_COOKIE",
    "AUTH",
    "BASIC_AUTH",
    "OAUTH_TOKEN",
    "AUTHORIZATION",
    "PRIVATE_KEY",
    "SSH_PRIVKEY",
    "GPG_PASSPHRASE",
    "KEY",
    "STRIPE_KEY",
    "JWT",
    "AUTH_HEADER",
  ]) {
    expect({ name, secret: isCredentialName(name) }).toEqual({ name, secret: true });
  }
});

test("names that only look like one", () => {
  for (const name of [
    "KEYBOARD",
    "KEYBOARD_LAYOUT",
    "MONKEY",
    "TURKEY_MODE",
    "KEYWORDS",
    "HOTKEY",
    "HOT_KEY",
    "MAX_TOKENS",
    "OPENAI_MAX_TOKENS",
    "TOKENIZER",
    "PUBLIC_KEY",
    "STRIPE_PUBLISHABLE_KEY",
    "SORT_KEY",
    "CACHE_KEY",
    "IDEMPOTENCY_KEY",
    "AWS_ACCESS_KEY_ID",
    "OAUTH_CLIENT_ID",
    "TOKEN_ENDPOINT",
    "AUTH_MODE",
    "AUTH_ENABLED",
    "DB_PASSWORD_FILE",
    "SECRET_NAME",
    "AUTHOR",
    "GIT_AUTHOR_NAME",
    "AUTHORITY",
    "LOG_LEVEL",
    "PATH",
    "PASSTHROUGH",
    "BYPASS",
  ]) {
    expect({ name, secret: isCredentialName(name) }).toEqual({ name, secret: false });
  }
});

test("a value is a secret by its form whatever its name; short values and switches are not", () => {
  expect(isSecretVariable("UPSTREAM", "ghp_0123456789abcdef")).toBe(true);
  expect(isSecretVariable("OPENAI", "sk-proj-0123456789abcdefghij")).toBe(true);
  expect(isSecretVariable("DATABASE_URL", "postgres://app:pw-1234@db:5432/app")).toBe(true);
  expect(isSecretVariable("DATABASE_URL", "postgres://db:5432/app")).toBe(false);
  expect(isSecretVariable("LANG", "sk_SK.UTF-8")).toBe(false);
  // Too short to be redacted (redact.ts MIN_REDACT_LENGTH), or a switch.
  expect(isSecretVariable("API_KEY", "abc")).toBe(false);
  expect(isSecretVariable("API_KEY", "")).toBe(false);
  expect(isSecretVariable("USE_AUTH", "true")).toBe(false);
  expect(isSecretVariable("API_KEY", "abcd")).toBe(true);
  expect(secretValues({ LOG_LEVEL: "debug", GITHUB_TOKEN: "gh-value-1", KEYBOARD: "qwerty" })).toEqual(["gh-value-1"]);
});

test("a number of tokens is no credential: its value would turn every such number in an audit line into ***", () => {
  for (const name of [
    "MAX_TOKEN",
    "MIN_TOKEN",
    "NUM_TOKEN",
    "MAX_TOKEN_COUNT",
    "TOKEN_COUNT",
    "TOKEN_BUDGET",
    "TOKEN_THRESHOLD",
    "CONTEXT_TOKEN_WINDOW",
    "SSH_AUTH_SOCK",
  ])
    expect({ name, secret: isCredentialName(name) }).toEqual({ name, secret: false });
  expect(isSecretVariable("MAX_TOKEN", "4096")).toBe(false);
  for (const name of ["MAX_API_TOKEN", "ACCESS_TOKEN", "SLACK_BOT_TOKEN"])
    expect({ name, secret: isCredentialName(name) }).toEqual({ name, secret: true });
});

test("a private key in PEM is a secret whatever its name, alone or inside a credentials file", () => {
  const pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n";
  expect(isSecretVariable("APP_PEM", pem)).toBe(true);
  expect(
    isSecretVariable("SIGNER", "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"),
  ).toBe(true);
  expect(isSecretVariable("SERVICE_ACCOUNT_JSON", JSON.stringify({ type: "service_account", private_key: pem }))).toBe(
    true,
  );
  expect(isSecretVariable("CA_CERT", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----")).toBe(false);
});

test("a URL's credentials: the URL is a secret, and its password and credential parameters are redacted on their own too", () => {
  expect(secretValues({ DATABASE_URL: "postgres://app:p%40ss-1234@db:5432/app" })).toEqual([
    "postgres://app:p%40ss-1234@db:5432/app",
    "p@ss-1234",
  ]);
  expect(secretValues({ API_BASE_URL: "https://api.example.com/v1?api_key=abcd1234efgh&lang=en" })).toEqual([
    "https://api.example.com/v1?api_key=abcd1234efgh&lang=en",
    "abcd1234efgh",
  ]);
  expect(isSecretVariable("BLOB_URL", "https://acct.blob.core.windows.net/c?sv=2022-11-02&sig=abc%2Bdef123")).toBe(
    true,
  );
  expect(isSecretVariable("HOOK_URL", "https://fn.azurewebsites.net/api/hook?code=fn-key-9a8b7c")).toBe(true);
  // Ordinary URLs stay as they are.
  for (const [name, value] of [
    ["OPENAI_BASE_URL", "https://api.openai.com/v1"],
    ["SEARCH_URL", "https://example.com/search?q=mcp&page=2&country_code=de"],
    ["FIRECRAWL_API_URL", "http://localhost:3002"],
  ])
    expect({ name, secret: isSecretVariable(name as string, value as string) }).toEqual({ name, secret: false });
});

test("a URL's password is redacted as the server that parsed it may print it", () => {
  const redact = redactor(secretValues({ DATABASE_URL: "postgres://app:p%40ss-1234@db:5432/app" }));
  expect(redact("config: user=app password=p@ss-1234 host=db")).toBe("config: user=app password=*** host=db");
});

test("a key pasted with blanks around it is redacted as the server uses it, trimmed", () => {
  const redact = redactor(secretValues({ OPENAI_API_KEY: " pasted-key-7c2e19  " }));
  expect(redact("Authorization: Bearer pasted-key-7c2e19")).toBe("Authorization: Bearer ***");
});

test("a webhook URL, whose path is its secret: by its host whatever the name, and any URL under a webhook name", () => {
  const slack = "https://hooks.slack.com/services/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";
  for (const [name, value] of [
    ["SLACK_WEBHOOK_URL", slack],
    ["NOTIFY_URL", slack],
    ["DISCORD_WEBHOOK", "https://discord.com/api/webhooks/112233445566778899/Xy-Zz_0123456789abcdefABCDEF"],
    ["ALERTS", "https://discordapp.com/api/v10/webhooks/112233/abc-def_0123456789"],
    ["TEAMS_URL", "https://contoso.webhook.office.com/webhookb2/11-22@33-44/IncomingWebhook/aa11bb22/cc33"],
    ["ZAP", "https://hooks.zapier.com/hooks/catch/123456/abcdef1/"],
    ["IFTTT_URL", "https://maker.ifttt.com/trigger/deploy/with/key/dA1bC2eF3gH4"],
    ["MATTERMOST_WEBHOOK_URL", "https://chat.example.org/hooks/xn1k6q5h3jfp8r4b9c2m7d0e1a"],
    ["DEPLOY_HOOK", "https://api.example.net/deploy/hook/9f8e7d6c5b4a"],
  ])
    expect({ name, secret: isSecretVariable(name as string, value as string) }).toEqual({ name, secret: true });
  // The path on its own too: a server may print the request line it sent.
  expect(secretValues({ SLACK_WEBHOOK_URL: slack })).toEqual([
    slack,
    "/services/T0A1B2C3D/B0E4F5G6H/q8Yw3ZpLrT0vXk2Nc5MdJ7sA",
  ]);
  const redact = redactor(secretValues({ SLACK_WEBHOOK_URL: slack }));
  expect(redact("POST /services/T0A1B2C3D/B0E4F5G6H/q8Yw3ZpLrT0vXk2Nc5MdJ7sA HTTP/1.1")).toBe("POST *** HTTP/1.1");
  // Not webhooks: APIs of the same hosts, a webhook name without a URL or a path, a webhook's settings.
  for (const [name, value] of [
    ["SLACK_API_URL", "https://slack.com/api"],
    ["DISCORD_API", "https://discord.com/api/v10/channels/1234"],
    ["WEBHOOK_PORT", "8080"],
    ["WEBHOOK_PATH", "/hooks/incoming"],
    ["WEBHOOK_URL", "https://example.com/"],
    ["WEBHOOK_EVENTS", "push,pull_request"],
  ])
    expect({ name, secret: isSecretVariable(name as string, value as string) }).toEqual({ name, secret: false });
});

test("a webhook URL is known by its host with a port, a user name or a trailing dot; under a webhook name, a path of plain words is not redacted on its own", () => {
  const token = "/services/T0A1B2C3D/B0E4F5G6H/q8Yw3ZpLrT0vXk2Nc5MdJ7sA";
  for (const value of [
    `https://hooks.slack.com:443${token}`,
    `https://bot@hooks.slack.com${token}`,
    `https://hooks.slack.com.${token}`,
  ])
    expect({ value, kept: secretValues({ NOTIFY_URL: value }) }).toEqual({ value, kept: [value, token] });
  // The URL stays a secret under its name, but `/api` or `/webhook` alone hid those words from every audit line.
  for (const value of ["http://localhost:3000/api", "http://ci.internal/hooks/incoming", "https://example.com/api/v2/"])
    expect({ value, kept: secretValues({ WEBHOOK_URL: value }) }).toEqual({ value, kept: [value] });
  const redact = redactor(secretValues({ WEBHOOK_URL: "http://localhost:3000/api" }));
  expect(redact("GET https://github.com/api/v3")).toBe("GET https://github.com/api/v3");
  // A path with a token in it is redacted on its own, as before.
  const mattermost = "https://chat.example.org/hooks/xn1k6q5h3jfp8r4b9c2m7d0e1a";
  expect(secretValues({ MATTERMOST_WEBHOOK_URL: mattermost })).toEqual([
    mattermost,
    "/hooks/xn1k6q5h3jfp8r4b9c2m7d0e1a",
  ]);
});
