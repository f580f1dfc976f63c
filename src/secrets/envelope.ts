/**
 * The encrypted secrets file format, and nothing else (no file I/O):
 *
 *   { "version": 1,
 *     "kdf": { "name": "scrypt", "N": 32768, "r": 8, "p": 1, "salt": "<base64>" },
 *     "cipher": "aes-256-gcm", "iv": "<base64, 12 bytes>", "tag": "<base64, 16 bytes>",
 *     "check": "<base64, 32 bytes>", "data": "<base64>" }
 *
 * scrypt(password, salt) gives 64 bytes: the AES-256-GCM key and a key-check key.
 * `check` = HMAC-SHA256(check key, constant) tells a wrong password apart from a
 * damaged file (GCM alone fails the same way for both). The header (version, kdf,
 * cipher) is the GCM additional data, so editing the parameters fails authentication.
 * Every seal uses a fresh random IV.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes, scrypt, timingSafeEqual } from "node:crypto";
import * as v from "valibot";
import { McpmgrError } from "../errors.ts";

const ENVELOPE_VERSION = 1;
const CIPHER = "aes-256-gcm";

export interface KdfParams {
  readonly N: number;
  readonly r: number;
  readonly p: number;
}

/** 2^15 × 8 × 128 bytes = 32 MiB of memory, ~50-100 ms on a laptop. */
export const DEFAULT_KDF: KdfParams = Object.freeze({ N: 2 ** 15, r: 8, p: 1 });

const SALT_BYTES = 16;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const CHECK_CONTEXT = "mcpmgr secrets key check v1";
/** Bound on scrypt's main buffer (128·N·r) for parameters read from a file, so a crafted file cannot exhaust memory. */
const MAX_SCRYPT_BUFFER = 128 * 1024 * 1024;

const base64 = v.pipe(
  v.string(),
  v.regex(/^[A-Za-z0-9+/]*={0,2}$/, "must be base64"),
  v.check((text) => text.length % 4 === 0, "must be base64"),
);

const envelopeSchema = v.object({
  version: v.number(),
  kdf: v.object({
    name: v.literal("scrypt"),
    N: v.pipe(
      v.number(),
      v.integer(),
      v.minValue(2),
      v.check((n) => (n & (n - 1)) === 0, "must be a power of two"),
    ),
    r: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(32)),
    p: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(16)),
    salt: base64,
  }),
  cipher: v.literal(CIPHER),
  iv: base64,
  tag: base64,
  check: base64,
  data: base64,
});

export type Envelope = v.InferOutput<typeof envelopeSchema>;

/** A derived key, bound to the salt and parameters it came from. Opaque: the bytes stay private. */
export class SecretsKey {
  readonly salt: string;
  readonly params: KdfParams;
  readonly #encryption: Buffer;
  readonly #check: Buffer;

  private constructor(salt: string, params: KdfParams, material: Buffer) {
    this.salt = salt;
    this.params = Object.freeze({ N: params.N, r: params.r, p: params.p });
    this.#encryption = material.subarray(0, 32);
    this.#check = material.subarray(32, 64);
  }

  /** A new random salt (a new file, or new parameters). */
  static create(password: string, params: KdfParams = DEFAULT_KDF): Promise<SecretsKey> {
    return SecretsKey.derive(password, randomBytes(SALT_BYTES).toString("base64"), params);
  }

  static async derive(password: string, salt: string, params: KdfParams): Promise<SecretsKey> {
    const material = await new Promise<Buffer>((resolve, reject) => {
      scrypt(
        password.normalize("NFC"),
        Buffer.from(salt, "base64"),
        64,
        { N: params.N, r: params.r, p: params.p, maxmem: scryptMemory(params) },
        (err, key) => (err ? reject(err) : resolve(key)),
      );
    });
    return new SecretsKey(salt, params, material);
  }

  matches(envelope: Envelope): boolean {
    return (
      envelope.kdf.salt === this.salt &&
      envelope.kdf.N === this.params.N &&
      envelope.kdf.r === this.params.r &&
      envelope.kdf.p === this.params.p
    );
  }

  /** @internal */
  _encryptionKey(): Buffer {
    return this.#encryption;
  }

  /** @internal */
  _checkValue(): Buffer {
    return createHmac("sha256", this.#check).update(CHECK_CONTEXT).digest();
  }

  toJSON(): string {
    return "[key]";
  }
}

/** What scrypt needs (128·N·r for V, 128·r·p for B) with headroom, within the bound. */
function scryptMemory(params: KdfParams): number {
  return 2 * 128 * params.N * params.r + 128 * params.r * params.p + 1024 * 1024;
}

export function seal(plaintext: Uint8Array, key: SecretsKey): Envelope {
  const header = {
    version: ENVELOPE_VERSION,
    kdf: { name: "scrypt" as const, ...key.params, salt: key.salt },
    cipher: CIPHER,
  } as const;
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(CIPHER, key._encryptionKey(), iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(additionalData(header));
  const data = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return {
    ...header,
    iv: iv.toString("base64"),
    tag: cipher.getAuthTag().toString("base64"),
    check: key._checkValue().toString("base64"),
    data: data.toString("base64"),
  };
}

/** Decrypts; SECRETS_PASSWORD_WRONG when the key check fails, SECRETS_FILE_CORRUPT when authentication does. */
export function unseal(envelope: Envelope, key: SecretsKey, where: string, passwordFrom: string): Buffer {
  const expected = key._checkValue();
  const check = Buffer.from(envelope.check, "base64");
  if (check.length !== expected.length || !timingSafeEqual(check, expected)) {
    throw new McpmgrError("SECRETS_PASSWORD_WRONG", `wrong password for the secrets file ${where}`, {
      hint: `the password came from ${passwordFrom}; use the password the file was written with, or move the file away to start over (its secrets are then lost)`,
    });
  }
  const iv = Buffer.from(envelope.iv, "base64");
  const tag = Buffer.from(envelope.tag, "base64");
  if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) throw corrupt(where, "the iv or tag has the wrong length");
  try {
    const decipher = createDecipheriv(CIPHER, key._encryptionKey(), iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(additionalData(envelope));
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(Buffer.from(envelope.data, "base64")), decipher.final()]);
  } catch (err) {
    throw corrupt(where, "the contents fail authentication (the file was modified or damaged)", err);
  }
}

/** JSON text → a checked envelope, or SECRETS_FILE_CORRUPT. */
export function parseEnvelope(text: string, where: string): Envelope {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw corrupt(where, "it is not JSON", err);
  }
  const version = (json as { version?: unknown } | null)?.version;
  if (typeof version === "number" && version > ENVELOPE_VERSION) {
    throw new McpmgrError(
      "SECRETS_FILE_CORRUPT",
      `the secrets file ${where} has format version ${version}, newer than this mcpmgr understands`,
      {
        hint: "upgrade mcpmgr",
      },
    );
  }
  const result = v.safeParse(envelopeSchema, json);
  if (!result.success) {
    const issue = result.issues[0];
    const path = issue?.path?.map((item) => String(item.key)).join(".") ?? "";
    throw corrupt(where, `${path ? `${path}: ` : ""}${issue?.message ?? "unexpected shape"}`);
  }
  const envelope = result.output;
  if (envelope.version !== ENVELOPE_VERSION) throw corrupt(where, `unknown format version ${envelope.version}`);
  if (128 * envelope.kdf.N * envelope.kdf.r > MAX_SCRYPT_BUFFER) {
    throw corrupt(where, "the key derivation parameters are out of bounds");
  }
  return envelope;
}

export function serializeEnvelope(envelope: Envelope): string {
  return `${JSON.stringify(envelope, null, 2)}\n`;
}

function additionalData(header: {
  version: number;
  kdf: { name: string; N: number; r: number; p: number; salt: string };
  cipher: string;
}): Buffer {
  const { version, kdf, cipher } = header;
  return Buffer.from(JSON.stringify(["mcpmgr-secrets", version, kdf.name, kdf.N, kdf.r, kdf.p, kdf.salt, cipher]));
}

function corrupt(where: string, reason: string, cause?: unknown): McpmgrError {
  return new McpmgrError("SECRETS_FILE_CORRUPT", `the secrets file ${where} is damaged: ${reason}`, {
    hint: "restore it from a backup, or move it away to start over (its secrets are then lost)",
    cause,
  });
}
