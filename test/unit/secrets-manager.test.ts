/** The manager: provider selection and `--secret NAME,target=ENV` resolution; errors name secrets, never values. */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as v from "valibot";
import { secretReference } from "../../src/config/values.ts";
import type { McpmgrError } from "../../src/errors.ts";
import { EncryptedFileProvider } from "../../src/secrets/encrypted-file.ts";
import { EnvironmentProvider } from "../../src/secrets/environment.ts";
import { createSecretManager, providerKindFrom, type SecretManager } from "../../src/secrets/manager.ts";
import { fixedPasswordSource } from "../../src/secrets/password.ts";
import { caught } from "../support/errors.ts";

const FAST = { N: 1024, r: 8, p: 1 };

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-secrets-manager-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function encrypted(): SecretManager {
  return createSecretManager({ dir, env: {}, passwordSource: fixedPasswordSource("pw"), kdf: FAST });
}

describe("provider selection", () => {
  test("encrypted by default, environment on request, explicit option wins", () => {
    expect(createSecretManager({ dir, env: {}, keychain: null }).provider).toBeInstanceOf(EncryptedFileProvider);
    expect(createSecretManager({ dir, env: { MCPMGR_SECRETS_PROVIDER: "environment" } }).provider).toBeInstanceOf(
      EnvironmentProvider,
    );
    expect(createSecretManager({ dir, env: { MCPMGR_SECRETS_PROVIDER: " Environment " } }).kind).toBe("environment");
    expect(
      createSecretManager({
        dir,
        env: { MCPMGR_SECRETS_PROVIDER: "environment" },
        provider: "encrypted",
        keychain: null,
      }).kind,
    ).toBe("encrypted");
    expect(providerKindFrom({ MCPMGR_SECRETS_PROVIDER: "" })).toBe("encrypted");
  });

  test("an unknown provider is a usage error", () => {
    try {
      createSecretManager({ dir, env: { MCPMGR_SECRETS_PROVIDER: "vault" } });
      throw new Error("expected an error");
    } catch (err) {
      expect((err as McpmgrError).code).toBe("INVALID_ARGUMENT");
      expect((err as McpmgrError).exitCode).toBe(2);
      expect((err as McpmgrError).message).toContain("MCPMGR_SECRETS_PROVIDER");
    }
  });

  test("creating a manager touches nothing", async () => {
    createSecretManager({
      dir: join(dir, "nested"),
      env: {},
      keychain: { get: () => Promise.reject(new Error("no")), set: () => Promise.reject(new Error("no")) },
    });
    expect(await Bun.file(join(dir, "nested")).exists()).toBe(false);
  });
});

describe("resolveSecretReferences", () => {
  test("maps each target to its secret's value", async () => {
    const manager = encrypted();
    await manager.provider.set("github-token", "ghp_value_1234");
    await manager.provider.set("db", "db_value_5678");
    const refs = ["github-token,target=GITHUB_TOKEN", "db,target=DATABASE_PASSWORD", "db,target=PGPASSWORD"].map(
      (text) => v.parse(secretReference, text),
    );
    const env = await manager.resolveSecretReferences(refs);
    expect({ ...env }).toEqual({
      GITHUB_TOKEN: "ghp_value_1234",
      DATABASE_PASSWORD: "db_value_5678",
      PGPASSWORD: "db_value_5678",
    });
    expect(Object.isFrozen(env)).toBe(true);
  });

  test("no references, no password needed", async () => {
    const manager = createSecretManager({ dir, env: {}, keychain: null });
    expect({ ...(await manager.resolveSecretReferences([])) }).toEqual({});
  });

  test("missing secrets: one SECRET_NOT_FOUND naming all of them and no value", async () => {
    const manager = encrypted();
    await manager.provider.set("present", "present-value-xyz");
    const err = await caught(
      manager.resolveSecretReferences([
        { name: "present", target: "A" },
        { name: "absent-one", target: "B" },
        { name: "absent-two", target: "C" },
      ]),
    );
    expect(err.code).toBe("SECRET_NOT_FOUND");
    expect(err.message).toContain("absent-one");
    expect(err.message).toContain("absent-two");
    expect(`${err.message} ${err.hint}`).not.toContain("present-value-xyz");
    expect(err.hint).toContain("mcpmgr secret set");
  });

  test("with the environment provider the hint names the variable", async () => {
    const manager = createSecretManager({
      dir,
      env: { MCPMGR_SECRETS_PROVIDER: "environment", MCPMGR_SECRET_HAVE: "have-value" },
    });
    expect({ ...(await manager.resolveSecretReferences([{ name: "have", target: "X" }])) }).toEqual({
      X: "have-value",
    });
    const err = await caught(manager.resolveSecretReferences([{ name: "api-key", target: "API_KEY" }]));
    expect(err.code).toBe("SECRET_NOT_FOUND");
    expect(err.hint).toContain("MCPMGR_SECRET_API_KEY");
  });

  test("two secrets for one target conflict", async () => {
    const err = await caught(
      encrypted().resolveSecretReferences([
        { name: "a", target: "SAME" },
        { name: "b", target: "SAME" },
      ]),
    );
    expect(err.code).toBe("CONFLICTING_OPTIONS");
  });

  test("resolveSecret returns a wrapper or SECRET_NOT_FOUND", async () => {
    const manager = encrypted();
    await manager.provider.set("one", "one-value");
    expect((await manager.resolveSecret("one")).reveal()).toBe("one-value");
    expect(String(await manager.resolveSecret("one"))).toBe("[secret]");
    expect((await caught(manager.resolveSecret("two"))).code).toBe("SECRET_NOT_FOUND");
  });
});
