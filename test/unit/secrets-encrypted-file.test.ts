/**
 * The encrypted secrets file: round trips, the file format's promises (fresh IV per
 * write, wrong password vs. damage told apart, GCM authentication), file hygiene
 * (0600, atomic, locked) and where the password comes from. Errors are checked by code.
 */
import { afterEach, beforeEach, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EncryptedFileProvider, SECRETS_FILE_NAME } from "../../src/secrets/encrypted-file.ts";
import { DEFAULT_KDF, type KdfParams } from "../../src/secrets/envelope.ts";
import {
  defaultPasswordSource,
  fixedPasswordSource,
  keychainPasswordSource,
  KEYCHAIN_NAME,
  KEYCHAIN_SERVICE,
  type Keychain,
  type PasswordSource,
} from "../../src/secrets/password.ts";
import { Secret } from "../../src/secrets/redact.ts";
import { caught, rejection as expectCode } from "../support/errors.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

/** Small scrypt parameters keep the suite fast; one test below uses the real defaults. */
const FAST: KdfParams = { N: 1024, r: 8, p: 1 };

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-secrets-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function provider(
  password: string | PasswordSource = "correct horse battery staple",
  kdf: KdfParams = FAST,
): EncryptedFileProvider {
  const source = typeof password === "string" ? fixedPasswordSource(password) : password;
  return new EncryptedFileProvider({ dir: join(dir, "data"), password: source, kdf });
}

async function readEnvelope(
  p: EncryptedFileProvider,
): Promise<Record<string, unknown> & { kdf: Record<string, unknown> }> {
  return JSON.parse(await readFile(p.path, "utf8"));
}

async function writeEnvelope(p: EncryptedFileProvider, envelope: unknown): Promise<void> {
  await writeFile(p.path, JSON.stringify(envelope));
}

/** Flips one bit of a base64 field. */
function flip(b64: string): string {
  const bytes = Buffer.from(b64, "base64");
  bytes[0] = (bytes[0] ?? 0) ^ 1;
  return bytes.toString("base64");
}

/** A keychain in memory that records calls. */
function fakeKeychain(initial?: string): Keychain & { store: Map<string, string>; calls: string[] } {
  const store = new Map<string, string>();
  if (initial !== undefined) store.set(`${KEYCHAIN_SERVICE}/${KEYCHAIN_NAME}`, initial);
  const calls: string[] = [];
  return {
    store,
    calls,
    async get({ service, name }) {
      calls.push("get");
      return store.get(`${service}/${name}`) ?? null;
    },
    async set({ service, name, value }) {
      calls.push("set");
      store.set(`${service}/${name}`, value);
    },
  };
}

describe("round trip", () => {
  test("set, get, list, delete", async () => {
    const p = provider();
    await p.set("github-token", "ghp_abcdef123456");
    await p.set("db.password", new Secret("s3cret pass"));
    expect((await p.get("github-token"))?.reveal()).toBe("ghp_abcdef123456");
    expect((await p.get("db.password"))?.reveal()).toBe("s3cret pass");
    expect(await p.list()).toEqual(["db.password", "github-token"]);

    // A second instance (another process) reads the same file.
    const again = provider();
    expect((await again.get("github-token"))?.reveal()).toBe("ghp_abcdef123456");

    expect(await p.delete("github-token")).toBe(true);
    expect(await p.delete("github-token")).toBe(false);
    expect(await p.get("github-token")).toBeUndefined();
    expect(await provider().list()).toEqual(["db.password"]);
  });

  test("set replaces an existing value", async () => {
    const p = provider();
    await p.set("a-key", "first value");
    await p.set("a-key", "second value");
    expect((await provider().get("a-key"))?.reveal()).toBe("second value");
  });

  test("values keep unicode, newlines and JSON-special characters", async () => {
    const value = 'line1\nline2 "quoted" \\ ünïcødé 🔑 {"a":1}';
    await provider().set("weird", value);
    expect((await provider().get("weird"))?.reveal()).toBe(value);
  });

  test("names that are object-prototype keys are ordinary names", async () => {
    const p = provider();
    for (const name of ["__proto__", "constructor", "prototype", "toString", "hasOwnProperty"])
      await p.set(name, `value of ${name}`);
    const fresh = provider();
    expect(await fresh.list()).toEqual(["__proto__", "constructor", "hasOwnProperty", "prototype", "toString"]);
    expect((await fresh.get("__proto__"))?.reveal()).toBe("value of __proto__");
    expect((await fresh.get("constructor"))?.reveal()).toBe("value of constructor");
  });

  test("get returns a Secret wrapper", async () => {
    await provider().set("wrapped", "plain-text-value");
    const secret = await provider().get("wrapped");
    expect(secret).toBeInstanceOf(Secret);
    expect(JSON.stringify(secret)).not.toContain("plain-text-value");
  });

  test("reading a store that does not exist needs no password and creates nothing", async () => {
    const refusing: PasswordSource = {
      description: "a source that must not be asked",
      get: async () => {
        throw new Error("asked for a password");
      },
    };
    const p = provider(refusing);
    expect(await p.list()).toEqual([]);
    expect(await p.get("anything")).toBeUndefined();
    expect(await readdir(dir)).toEqual([]);
  });

  test("the real default parameters work (scrypt N=2^15 within maxmem)", async () => {
    const p = provider("default-params", DEFAULT_KDF);
    await p.set("k", "value-with-defaults");
    expect((await readEnvelope(p)).kdf).toMatchObject({ name: "scrypt", N: 2 ** 15, r: 8, p: 1 });
    expect((await provider("default-params").get("k"))?.reveal()).toBe("value-with-defaults");
  });

  test("invalid names and empty values are refused", async () => {
    const p = provider();
    for (const name of ["", "has space", "slash/name", "x".repeat(129), "ünï"]) {
      await expectCode(p.set(name, "value"), "INVALID_ARGUMENT");
      await expectCode(p.get(name), "INVALID_ARGUMENT");
    }
    await expectCode(p.set("ok-name", ""), "INVALID_ARGUMENT");
    expect(await p.list()).toEqual([]);
  });
});

describe("the file format", () => {
  test("the envelope has the documented shape and no plaintext", async () => {
    const p = provider();
    await p.set("visible-name", "the-plaintext-value");
    const text = await readFile(p.path, "utf8");
    expect(text).not.toContain("the-plaintext-value");
    expect(text).not.toContain("visible-name");
    const envelope = await readEnvelope(p);
    expect(envelope).toMatchObject({
      version: 1,
      cipher: "aes-256-gcm",
      kdf: { name: "scrypt", N: FAST.N, r: 8, p: 1 },
    });
    for (const field of ["iv", "tag", "check", "data"]) expect(typeof envelope[field]).toBe("string");
    expect(Buffer.from(envelope.iv as string, "base64")).toHaveLength(12);
    expect(Buffer.from(envelope.tag as string, "base64")).toHaveLength(16);
    expect(Buffer.from(envelope.kdf.salt as string, "base64").length).toBeGreaterThanOrEqual(16);
  });

  test("every write uses a fresh IV: the same content twice gives different ciphertext", async () => {
    const p = provider();
    await p.set("same", "same value");
    const first = await readEnvelope(p);
    await p.set("same", "same value");
    const second = await readEnvelope(p);
    expect(second.iv).not.toBe(first.iv);
    expect(second.data).not.toBe(first.data);
    expect(second.tag).not.toBe(first.tag);
  });

  test("a wrong password is SECRETS_PASSWORD_WRONG with a hint naming the source", async () => {
    await provider("right password").set("k", "value");
    const err = await expectCode(provider("wrong password").get("k"), "SECRETS_PASSWORD_WRONG");
    expect(err.hint).toContain("MCPMGR_SECRETS_PASSWORD");
    expect(err.exitCode).toBe(1);
    await expectCode(provider("wrong password").list(), "SECRETS_PASSWORD_WRONG");
    // A failed write leaves the file as it was.
    await expectCode(provider("wrong password").set("k", "overwritten"), "SECRETS_PASSWORD_WRONG");
    expect((await provider("right password").get("k"))?.reveal()).toBe("value");
  });

  test("tampered ciphertext or tag fails GCM authentication", async () => {
    const p = provider();
    await p.set("k", "value");
    const original = await readEnvelope(p);
    for (const field of ["data", "tag", "iv"]) {
      await writeEnvelope(p, { ...original, [field]: flip(original[field] as string) });
      await expectCode(provider().get("k"), "SECRETS_FILE_CORRUPT");
    }
    await writeEnvelope(p, original);
    expect((await provider().get("k"))?.reveal()).toBe("value");
  });

  test("changed key-derivation parameters do not decrypt", async () => {
    const p = provider();
    await p.set("k", "value");
    const original = await readEnvelope(p);
    await writeEnvelope(p, { ...original, kdf: { ...original.kdf, N: 2048 } });
    await caught(provider().get("k"));
    await writeEnvelope(p, { ...original, kdf: { ...original.kdf, salt: flip(original.kdf.salt as string) } });
    await caught(provider().get("k"));
  });

  test("damaged files give SECRETS_FILE_CORRUPT", async () => {
    const p = provider();
    await p.set("k", "value");
    const original = await readEnvelope(p);
    const { data: _data, ...withoutData } = original;
    const cases: unknown[] = [
      "not json at all",
      null,
      [],
      withoutData,
      { ...original, cipher: "aes-128-cbc" },
      { ...original, kdf: { ...original.kdf, name: "pbkdf2" } },
      { ...original, kdf: { ...original.kdf, N: 1000 } },
      { ...original, kdf: { ...original.kdf, N: 2 ** 24 } },
      { ...original, iv: "!!not base64!!" },
      { ...original, version: 0 },
    ];
    for (const content of cases) {
      await writeFile(p.path, typeof content === "string" ? content : JSON.stringify(content));
      const err = await expectCode(provider().get("k"), "SECRETS_FILE_CORRUPT");
      expect(err.message).toContain(p.path);
      expect(err.hint).toBeDefined();
    }
  });

  test("a newer format version asks for an upgrade", async () => {
    const p = provider();
    await p.set("k", "value");
    await writeEnvelope(p, { ...(await readEnvelope(p)), version: 2 });
    const err = await expectCode(provider().get("k"), "SECRETS_FILE_CORRUPT");
    expect(err.hint).toContain("upgrade");
  });
});

describe("file hygiene", () => {
  test.skipIf(process.platform === "win32")("the file is 0600 and its directory 0700", async () => {
    const p = provider();
    await p.set("k", "value");
    expect((await stat(p.path)).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, "data"))).mode & 0o777).toBe(0o700);
    await p.set("k", "value 2");
    expect((await stat(p.path)).mode & 0o777).toBe(0o600);
  });

  test.skipIf(process.platform === "win32")("the mode is 0600 even under a permissive umask", async () => {
    const previous = process.umask(0o000);
    try {
      await provider().set("k", "value");
    } finally {
      process.umask(previous);
    }
    expect((await stat(join(dir, "data", SECRETS_FILE_NAME))).mode & 0o777).toBe(0o600);
  });

  test("writes leave no temporary or lock files behind", async () => {
    const p = provider();
    await p.set("a", "value a");
    await p.set("b", "value b");
    await p.delete("a");
    expect(await readdir(join(dir, "data"))).toEqual([SECRETS_FILE_NAME]);
  });

  test("concurrent writers do not lose each other's secrets", async () => {
    const names = Array.from({ length: 12 }, (_, i) => `secret-${String(i).padStart(2, "0")}`);
    await Promise.all(names.map((name) => provider().set(name, `value of ${name}`)));
    expect(await provider().list()).toEqual(names);
  });

  test("a stale lock from a crashed process is taken over", async () => {
    const p = provider();
    await p.set("k", "value");
    const lock = `${p.path}.lock`;
    await writeFile(lock, "99999\n");
    const old = new Date(Date.now() - 120_000);
    await utimes(lock, old, old);
    await p.set("k", "new value");
    expect((await provider().get("k"))?.reveal()).toBe("new value");
  });
});

describe("password sources", () => {
  test("MCPMGR_SECRETS_PASSWORD wins and the keychain is never touched", async () => {
    const keychain = fakeKeychain();
    const source = defaultPasswordSource({ env: { MCPMGR_SECRETS_PASSWORD: "from-env" }, keychain });
    await provider(source).set("k", "value");
    expect(keychain.calls).toEqual([]);
    expect((await provider("from-env").get("k"))?.reveal()).toBe("value");
  });

  test("the keychain: a random password is made on the first write and reused after", async () => {
    const keychain = fakeKeychain();
    await provider(defaultPasswordSource({ env: {}, keychain })).set("k", "value");
    const stored = keychain.store.get(`${KEYCHAIN_SERVICE}/${KEYCHAIN_NAME}`);
    expect(stored).toBeString();
    expect((stored ?? "").length).toBeGreaterThanOrEqual(32);
    expect(keychain.calls).toContain("set");

    keychain.calls.length = 0;
    expect((await provider(defaultPasswordSource({ env: {}, keychain })).get("k"))?.reveal()).toBe("value");
    expect(keychain.calls).toEqual(["get"]);
    expect((await provider(stored ?? "").get("k"))?.reveal()).toBe("value");
  });

  test("reading never creates a keychain password", async () => {
    const keychain = fakeKeychain();
    expect(await provider(defaultPasswordSource({ env: {}, keychain })).list()).toEqual([]);
    expect(keychain.store.size).toBe(0);
  });

  test("an existing file with an empty keychain is SECRETS_PASSWORD_MISSING, not a new password", async () => {
    await provider("old password").set("k", "value");
    const keychain = fakeKeychain();
    await expectCode(provider(defaultPasswordSource({ env: {}, keychain })).get("k"), "SECRETS_PASSWORD_MISSING");
    await expectCode(provider(defaultPasswordSource({ env: {}, keychain })).set("k2", "v"), "SECRETS_PASSWORD_MISSING");
    expect(keychain.store.size).toBe(0);
  });

  test("a keychain that throws (headless Linux) and no env var: one error explaining both", async () => {
    const broken: Keychain = {
      get: () => {
        throw new Error("libsecret not available");
      },
      set: async () => {},
    };
    const err = await expectCode(
      provider(defaultPasswordSource({ env: {}, keychain: broken })).set("k", "v"),
      "SECRETS_PASSWORD_MISSING",
    );
    expect(err.message).toContain("keychain");
    expect(err.message).toContain("libsecret not available");
    expect(err.message).toContain("MCPMGR_SECRETS_PASSWORD");
    expect(err.hint).toContain("MCPMGR_SECRETS_PASSWORD");
  });

  test("an existing file and no keychain: the hint asks for the password it was written with, not a new one", async () => {
    await provider("old password").set("k", "value");
    const err = await expectCode(
      provider(defaultPasswordSource({ env: {}, keychain: null })).get("k"),
      "SECRETS_PASSWORD_MISSING",
    );
    expect(err.message).toContain("MCPMGR_SECRETS_PASSWORD is not set");
    expect(err.hint).toContain("the password");
    expect(err.hint).toContain("was written with");
    expect(err.hint).not.toContain("random");
  });

  test("a keychain that never answers counts as unavailable", async () => {
    const hanging: Keychain = { get: () => new Promise(() => {}), set: () => new Promise(() => {}) };
    const source = keychainPasswordSource(hanging, 50);
    await expectCode(provider(source).set("k", "v"), "SECRETS_PASSWORD_MISSING");
  });

  test("a keychain that drops writes is caught before anything is encrypted", async () => {
    const forgetful: Keychain = { get: async () => null, set: async () => {} };
    await expectCode(
      provider(defaultPasswordSource({ env: {}, keychain: forgetful })).set("k", "v"),
      "SECRETS_PASSWORD_MISSING",
    );
    expect(await readdir(join(dir, "data"))).toEqual([]);
  });

  test("no keychain support at all", async () => {
    const err = await expectCode(
      provider(defaultPasswordSource({ env: {}, keychain: null })).set("k", "v"),
      "SECRETS_PASSWORD_MISSING",
    );
    expect(err.message).toContain("MCPMGR_SECRETS_PASSWORD");
  });

  test("an empty MCPMGR_SECRETS_PASSWORD counts as unset", async () => {
    const keychain = fakeKeychain();
    await provider(defaultPasswordSource({ env: { MCPMGR_SECRETS_PASSWORD: "" }, keychain })).set("k", "v");
    expect(keychain.calls).toContain("set");
  });
});
