/**
 * Where the encrypted file's password comes from.
 *
 * 1. `MCPMGR_SECRETS_PASSWORD`, when set: an explicit choice wins, and it keeps tests
 *    and CI from ever touching the user's real keychain.
 * 2. The OS keychain through `Bun.secrets` (service "mcpmgr", name "secrets-password"),
 *    when it works: a random password is made and stored there on the first write.
 *    On a headless Linux without a Secret Service, Bun.secrets throws, and a locked
 *    keyring may never answer; both count as "not available" (the probe has a timeout).
 * 3. Otherwise an error that explains both options.
 *
 * Everything is lazy: nothing is probed until a password is actually needed.
 */
import { randomBytes } from "node:crypto";
import { McpmgrError, errorMessage } from "../errors.ts";

const PASSWORD_ENV = "MCPMGR_SECRETS_PASSWORD";
export const KEYCHAIN_SERVICE = "mcpmgr";
export const KEYCHAIN_NAME = "secrets-password";

export interface PasswordSource {
  /** For messages: "the MCPMGR_SECRETS_PASSWORD environment variable", "the OS keychain". */
  readonly description: string;
  /** The existing password, or undefined when this source holds none yet. Throws when there is no usable source. */
  get(): Promise<string | undefined>;
  /** Makes and keeps a new password (first write). Absent when the source cannot create one. */
  readonly create?: () => Promise<string>;
}

/** The part of `Bun.secrets` used here; injectable for tests. */
export interface Keychain {
  get(options: { service: string; name: string }): Promise<string | null>;
  set(options: { service: string; name: string; value: string }): Promise<void>;
}

export interface DefaultPasswordSourceOptions {
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Defaults to Bun.secrets when the runtime has it; `null` means "no keychain". */
  readonly keychain?: Keychain | null;
  /** How long a keychain call may take before it counts as unavailable. Generous: an unlock or "allow access" dialog may be waiting for the user. */
  readonly keychainTimeoutMs?: number;
}

/** A fixed password (the environment variable, or tests). */
export function fixedPasswordSource(
  password: string,
  description = `the ${PASSWORD_ENV} environment variable`,
): PasswordSource {
  return { description, get: async () => password };
}

export function defaultPasswordSource(options: DefaultPasswordSourceOptions): PasswordSource {
  const fromEnv = options.env[PASSWORD_ENV];
  if (fromEnv !== undefined && fromEnv.length > 0) return fixedPasswordSource(fromEnv);
  const keychain = options.keychain === undefined ? bunKeychain() : options.keychain;
  if (keychain === null) return unavailable("this runtime has no OS keychain support");
  return keychainPasswordSource(keychain, options.keychainTimeoutMs ?? 30_000);
}

/** The OS keychain; falls back to an explanatory error when it does not work here. */
export function keychainPasswordSource(keychain: Keychain, timeoutMs = 30_000): PasswordSource {
  const key = { service: KEYCHAIN_SERVICE, name: KEYCHAIN_NAME };
  let probed: Promise<{ ok: true; password: string | undefined } | { ok: false; reason: string }> | undefined;
  const probe = () =>
    (probed ??= withTimeout(() => keychain.get(key), timeoutMs).then(
      (value) => ({ ok: true as const, password: value === null || value === "" ? undefined : value }),
      (err: unknown) => ({ ok: false as const, reason: describe(err) }),
    ));

  return {
    description: `the OS keychain (service "${KEYCHAIN_SERVICE}", name "${KEYCHAIN_NAME}")`,
    async get() {
      const result = await probe();
      if (!result.ok) throw noPasswordError(`the OS keychain is not available (${result.reason})`);
      return result.password;
    },
    async create() {
      const result = await probe();
      if (!result.ok) throw noPasswordError(`the OS keychain is not available (${result.reason})`);
      if (result.password !== undefined) return result.password;
      const password = randomBytes(32).toString("base64url");
      try {
        await withTimeout(() => keychain.set({ ...key, value: password }), timeoutMs);
        // Some keyrings accept a write and drop it; a password we cannot read back would lock the file for good.
        const stored = await withTimeout(() => keychain.get(key), timeoutMs);
        if (stored !== password) throw new Error("the stored password could not be read back");
      } catch (err) {
        throw noPasswordError(`the OS keychain did not keep a new password (${describe(err)})`, err);
      }
      probed = Promise.resolve({ ok: true, password });
      return password;
    },
  };
}

function unavailable(reason: string): PasswordSource {
  return {
    description: "no password source",
    get: async () => {
      throw noPasswordError(reason);
    },
  };
}

function noPasswordError(reason: string, cause?: unknown): McpmgrError {
  return new McpmgrError(
    "SECRETS_PASSWORD_MISSING",
    `no password for the encrypted secrets file: ${reason} and ${PASSWORD_ENV} is not set`,
    {
      hint: `set ${PASSWORD_ENV} to a long random password (and keep it safe), or run a keyring service (Secret Service, e.g. gnome-keyring or KeePassXC) so mcpmgr can keep one there`,
      cause,
    },
  );
}

function bunKeychain(): Keychain | null {
  try {
    const secrets = (globalThis as { Bun?: { secrets?: Keychain } }).Bun?.secrets;
    return secrets !== undefined && typeof secrets.get === "function" && typeof secrets.set === "function"
      ? secrets
      : null;
  } catch {
    return null;
  }
}

/** Runs `call`; a synchronous throw, a rejection and a missing answer all reject. */
async function withTimeout<T>(call: () => Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    (timer as { unref?: () => void }).unref?.();
  });
  try {
    return await Promise.race([Promise.resolve().then(call), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function describe(err: unknown): string {
  const message = errorMessage(err);
  return message.split("\n")[0]?.slice(0, 200) || "unknown error";
}
