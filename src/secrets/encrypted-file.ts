/**
 * Secrets in one encrypted file (format in envelope.ts), mode 0600 in a 0700 directory,
 * replaced atomically (write a temp file, fsync, rename) under a lock. Reading a store
 * that does not exist yet needs no password; the first write creates the password
 * (in the keychain) when the source can.
 */
import { randomUUID } from "node:crypto";
import { chmod, mkdir, open, readFile, rename, unlink } from "node:fs/promises";
import { basename, join } from "node:path";
import { McpmgrError, errorMessage, isMcpmgrError } from "../errors.ts";
import {
  DEFAULT_KDF,
  parseEnvelope,
  seal,
  SecretsKey,
  serializeEnvelope,
  unseal,
  type Envelope,
  type KdfParams,
} from "./envelope.ts";
import { storeFailed, withFileLock } from "./file-lock.ts";
import type { PasswordSource } from "./password.ts";
import { isValidSecretName, validateSecretName, type SecretProvider } from "./provider.ts";
import { Secret } from "./redact.ts";

export const SECRETS_FILE_NAME = "secrets.enc.json";

export interface EncryptedFileProviderOptions {
  /** The data directory; the file is `<dir>/secrets.enc.json`. */
  readonly dir: string;
  readonly password: PasswordSource;
  readonly fileName?: string;
  /** scrypt parameters for new keys; tests use a small N. */
  readonly kdf?: KdfParams;
}

interface Store {
  readonly secrets: Map<string, string>;
  readonly key: SecretsKey;
  readonly password: string;
}

export class EncryptedFileProvider implements SecretProvider {
  readonly kind = "encrypted";
  readonly writable = true;
  readonly path: string;
  readonly #dir: string;
  readonly #source: PasswordSource;
  readonly #kdf: KdfParams;
  #password: Promise<string | undefined> | undefined;
  #key: SecretsKey | undefined;

  constructor(options: EncryptedFileProviderOptions) {
    this.#dir = options.dir;
    this.path = join(options.dir, options.fileName ?? SECRETS_FILE_NAME);
    this.#source = options.password;
    this.#kdf = options.kdf ?? DEFAULT_KDF;
  }

  async get(name: string): Promise<Secret | undefined> {
    validateSecretName(name);
    const value = (await this.#read())?.secrets.get(name);
    return value === undefined ? undefined : new Secret(value);
  }

  async getMany(names: readonly string[]): Promise<ReadonlyMap<string, Secret>> {
    for (const name of names) validateSecretName(name);
    const secrets = (await this.#read())?.secrets;
    const found = new Map<string, Secret>();
    for (const name of names) {
      const value = secrets?.get(name);
      if (value !== undefined) found.set(name, new Secret(value));
    }
    return found;
  }

  async list(): Promise<readonly string[]> {
    const store = await this.#read();
    return Object.freeze([...(store?.secrets.keys() ?? [])].sort());
  }

  async set(name: string, value: string | Secret): Promise<void> {
    validateSecretName(name);
    const plain = value instanceof Secret ? value.reveal() : value;
    if (typeof plain !== "string" || plain.length === 0) {
      throw new McpmgrError("INVALID_ARGUMENT", `the value for secret '${name}' is empty`, {
        hint: "give a non-empty value",
      });
    }
    await this.#update((secrets) => {
      secrets.set(name, plain);
      return true;
    });
  }

  async delete(name: string): Promise<boolean> {
    validateSecretName(name);
    let existed = false;
    await this.#update((secrets) => (existed = secrets.delete(name)));
    return existed;
  }

  async #update(change: (secrets: Map<string, string>) => boolean): Promise<void> {
    try {
      await mkdir(this.#dir, { recursive: true, mode: 0o700 });
    } catch (err) {
      throw storeFailed(`cannot create the directory ${this.#dir}`, err);
    }
    await withFileLock(this.path, async () => {
      const store = await this.#read();
      const secrets = store?.secrets ?? new Map<string, string>();
      if (!change(secrets)) return;
      const password = store?.password ?? (await this.#newStorePassword());
      // The salt stays for the life of the file (the IV is what must be fresh); new parameters get a new salt.
      const key =
        store !== undefined && sameParams(store.key.params, this.#kdf)
          ? store.key
          : await SecretsKey.create(password, this.#kdf);
      this.#key = key;
      const entries = Object.fromEntries([...secrets].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
      const plaintext = Buffer.from(JSON.stringify({ secrets: entries }), "utf8");
      const envelope = seal(plaintext, key);
      plaintext.fill(0);
      await this.#writeAtomically(serializeEnvelope(envelope));
    });
  }

  async #read(): Promise<Store | undefined> {
    let text: string;
    try {
      text = await readFile(this.path, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw storeFailed(`cannot read the secrets file ${this.path}`, err);
    }
    const envelope = parseEnvelope(text, this.path);
    const password = await this.#existingPassword();
    const key = await this.#keyFor(envelope, password);
    const plaintext = unseal(envelope, key, this.path, this.#source.description);
    try {
      return { secrets: parseSecrets(plaintext, this.path), key, password };
    } finally {
      plaintext.fill(0);
    }
  }

  async #keyFor(envelope: Envelope, password: string): Promise<SecretsKey> {
    if (this.#key?.matches(envelope)) return this.#key;
    try {
      this.#key = await SecretsKey.derive(password, envelope.kdf.salt, envelope.kdf);
    } catch (err) {
      throw new McpmgrError("SECRETS_FILE_CORRUPT", `cannot derive the key for ${this.path}: ${errorMessage(err)}`, {
        hint: "the key derivation parameters in the file are not usable here; restore the file from a backup",
        cause: err,
      });
    }
    return this.#key;
  }

  async #existingPassword(): Promise<string> {
    const password = await (this.#password ??= this.#source.get()).catch((err: unknown) => {
      this.#password = undefined;
      // The file exists: a new random password (the source's advice for a first secret) would not open it.
      if (isMcpmgrError(err) && err.code === "SECRETS_PASSWORD_MISSING")
        throw new McpmgrError("SECRETS_PASSWORD_MISSING", err.message, {
          hint: `set MCPMGR_SECRETS_PASSWORD to the password ${this.path} was written with (a service or a shell without a keychain needs it in its environment)`,
          cause: err,
        });
      throw err;
    });
    if (password !== undefined) return password;
    throw new McpmgrError(
      "SECRETS_PASSWORD_MISSING",
      `the secrets file ${this.path} exists but ${this.#source.description} holds no password for it`,
      {
        hint: `set MCPMGR_SECRETS_PASSWORD to the password it was written with, or move the file away to start over (its secrets are then lost)`,
      },
    );
  }

  async #newStorePassword(): Promise<string> {
    const existing = await (this.#password ??= this.#source.get());
    if (existing !== undefined) return existing;
    if (this.#source.create === undefined) {
      throw new McpmgrError(
        "SECRETS_PASSWORD_MISSING",
        `${this.#source.description} holds no password for the secrets file`,
        {
          hint: "set MCPMGR_SECRETS_PASSWORD to a long random password (and keep it safe)",
        },
      );
    }
    const created = await this.#source.create();
    this.#password = Promise.resolve(created);
    return created;
  }

  async #writeAtomically(text: string): Promise<void> {
    const temp = join(this.#dir, `.${basename(this.path)}.${process.pid}.${randomUUID()}.tmp`);
    try {
      const handle = await open(temp, "wx", 0o600);
      try {
        await handle.writeFile(text, "utf8");
        await handle.sync();
      } finally {
        await handle.close();
      }
      // The umask can only take bits away from 0600; make it exact anyway (no-op on Windows).
      await chmod(temp, 0o600).catch(() => {});
      await rename(temp, this.path);
    } catch (err) {
      await unlink(temp).catch(() => {});
      throw storeFailed(`cannot write the secrets file ${this.path}`, err);
    }
  }
}

function sameParams(a: KdfParams, b: KdfParams): boolean {
  return a.N === b.N && a.r === b.r && a.p === b.p;
}

/** `{"secrets": {"name": "value"}}`, read without valibot's record (which skips keys like "constructor"). */
function parseSecrets(plaintext: Buffer, where: string): Map<string, string> {
  const damaged = (reason: string) =>
    new McpmgrError("SECRETS_FILE_CORRUPT", `the secrets file ${where} is damaged: ${reason}`, {
      hint: "restore it from a backup, or move it away to start over (its secrets are then lost)",
    });
  let json: unknown;
  try {
    json = JSON.parse(plaintext.toString("utf8"));
  } catch {
    throw damaged("the decrypted contents are not JSON");
  }
  const secrets = (json as { secrets?: unknown } | null)?.secrets;
  if (typeof secrets !== "object" || secrets === null || Array.isArray(secrets))
    throw damaged("the decrypted contents have no secrets object");
  const out = new Map<string, string>();
  for (const [name, value] of Object.entries(secrets)) {
    if (!isValidSecretName(name) || typeof value !== "string")
      throw damaged("an entry has an invalid name or a non-string value");
    out.set(name, value);
  }
  return out;
}
