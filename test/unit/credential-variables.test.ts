/**
 * Which plain environment variables are secrets (secrets/credential-variables.ts): by name, with the
 * false positives an experienced user would object to (KEYBOARD, MONKEY, MAX_TOKENS, PUBLIC_KEY,
 * AWS_ACCESS_KEY_ID, AUTHOR) left out, and by value form whatever the name.
 */
import { expect, test } from "bun:test";
import { isCredentialName, isSecretVariable, secretValues } from "../../src/secrets/credential-variables.ts";

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
