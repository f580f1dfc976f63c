/**
 * Read-only secrets from the environment: secret `github-token` is read from
 * `MCPMGR_SECRET_GITHUB_TOKEN` (upper case; '-' and '.' become '_'). For CI and
 * containers, where a keychain or a password file is out of place. An empty
 * variable counts as unset.
 */
import { McpmgrError } from "../errors.ts";
import { isValidSecretName, validateSecretName, type SecretProvider } from "./provider.ts";
import { Secret } from "./redact.ts";

const SECRET_ENV_PREFIX = "MCPMGR_SECRET_";

/** MCPMGR_SECRET_<NAME>: upper case, '-' and '.' become '_'. */
export function environmentVariableFor(name: string): string {
  return SECRET_ENV_PREFIX + name.toUpperCase().replace(/[-.]/g, "_");
}

export class EnvironmentProvider implements SecretProvider {
  readonly kind = "environment";
  readonly writable = false;
  readonly #env: Readonly<Record<string, string | undefined>>;

  constructor(env: Readonly<Record<string, string | undefined>>) {
    this.#env = env;
  }

  async get(name: string): Promise<Secret | undefined> {
    const value = this.#env[environmentVariableFor(validateSecretName(name))];
    return value === undefined || value === "" ? undefined : new Secret(value);
  }

  async getMany(names: readonly string[]): Promise<ReadonlyMap<string, Secret>> {
    const found = new Map<string, Secret>();
    for (const name of names) {
      const value = await this.get(name);
      if (value !== undefined) found.set(name, value);
    }
    return found;
  }

  async set(name: string, _value: string | Secret): Promise<void> {
    throw readOnlyError(validateSecretName(name));
  }

  async delete(name: string): Promise<boolean> {
    throw readOnlyError(validateSecretName(name));
  }

  /**
   * The part after the prefix, as written in the environment (GITHUB_TOKEN); get() accepts it back. A variable
   * no name reads (MCPMGR_SECRET_github_token: get() reads the upper-case one) is no secret: it was listed, and
   * `secret list` named the workloads using `github_token` as its users, which their start then did not find.
   */
  async list(): Promise<readonly string[]> {
    const names = Object.entries(this.#env)
      .filter(
        ([key, value]) =>
          key.startsWith(SECRET_ENV_PREFIX) &&
          key.length > SECRET_ENV_PREFIX.length &&
          value !== undefined &&
          value !== "",
      )
      .map(([key]) => key.slice(SECRET_ENV_PREFIX.length))
      .filter((name) => isValidSecretName(name) && environmentVariableFor(name) === SECRET_ENV_PREFIX + name);
    return Object.freeze(names.sort());
  }
}

/** SECRETS_READ_ONLY (exit 2), also for callers that check `writable` before collecting a value. */
export function readOnlyError(name: string): McpmgrError {
  return new McpmgrError(
    "SECRETS_READ_ONLY",
    `the environment secrets provider is read-only; cannot change secret '${name}'`,
    {
      hint: `set or unset ${environmentVariableFor(name)} in the environment instead, or unset MCPMGR_SECRETS_PROVIDER to use the encrypted file`,
      exitCode: 2,
    },
  );
}
