/**
 * The one shape every secrets backend has. Values travel as `Secret` wrappers so a
 * stray log line or JSON.stringify prints `[secret]`; `list()` yields names only.
 */
import { McpmgrError } from "../errors.ts";
import type { Secret } from "./redact.ts";

export interface SecretProvider {
  /** "encrypted" or "environment", for messages. */
  readonly kind: string;
  /** false for read-only backends (the environment); set/delete then throw SECRETS_READ_ONLY. */
  readonly writable: boolean;
  /** The value, or undefined when no secret has that name. */
  get(name: string): Promise<Secret | undefined>;
  /**
   * The values of those of `names` that exist, read at once: one read of the store for them all
   * (`secret list` and `rm` read every `oauth-` record; one `get` each would read the whole store each time).
   */
  getMany(names: readonly string[]): Promise<ReadonlyMap<string, Secret>>;
  /** Creates or replaces. */
  set(name: string, value: string | Secret): Promise<void>;
  /** Whether a secret of that name existed. */
  delete(name: string): Promise<boolean>;
  /** Names only, sorted; never values. */
  list(): Promise<readonly string[]>;
}

const SECRET_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;

export function isValidSecretName(name: string): boolean {
  return SECRET_NAME_PATTERN.test(name);
}

/** Throws INVALID_ARGUMENT (exit 2) unless `name` is a valid secret name; returns it. */
export function validateSecretName(name: string): string {
  if (isValidSecretName(name)) return name;
  const shown = name.length > 40 ? `${name.slice(0, 40)}…` : name;
  throw new McpmgrError("INVALID_ARGUMENT", `invalid secret name ${JSON.stringify(shown)}`, {
    hint: "use 1-128 characters from letters, digits, '_', '.' and '-'",
  });
}
