/**
 * The secrets manager: picks the provider (`MCPMGR_SECRETS_PROVIDER`, default
 * "encrypted") and resolves `--secret NAME,target=ENV` references for a server's
 * environment. Errors name the secret, never a value.
 */
import { closeMatches, didYouMean } from "../close-matches.ts";
import { McpmgrError } from "../errors.ts";
import type { KdfParams } from "./envelope.ts";
import { EncryptedFileProvider } from "./encrypted-file.ts";
import { EnvironmentProvider, environmentVariableFor } from "./environment.ts";
import { defaultPasswordSource, type Keychain, type PasswordSource } from "./password.ts";
import { validateSecretName, type SecretProvider } from "./provider.ts";
import type { Secret } from "./redact.ts";

const PROVIDER_ENV = "MCPMGR_SECRETS_PROVIDER";
const PROVIDER_KINDS = ["encrypted", "environment"] as const;
export type SecretProviderKind = (typeof PROVIDER_KINDS)[number];

/** As produced by config/values.ts `secretReference`. */
export interface SecretReference {
  readonly name: string;
  readonly target: string;
}

export interface SecretManagerOptions {
  /** Overrides MCPMGR_SECRETS_PROVIDER. */
  readonly provider?: SecretProviderKind;
  /** The data directory that holds the encrypted file. */
  readonly dir: string;
  /** The environment to read MCPMGR_SECRETS_* and MCPMGR_SECRET_* from (the CLI passes process.env). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Defaults to MCPMGR_SECRETS_PASSWORD, else the OS keychain. */
  readonly passwordSource?: PasswordSource;
  /** The keychain for the default password source (defaults to Bun.secrets; null = none). */
  readonly keychain?: Keychain | null;
  /** scrypt parameters for new keys (tests). */
  readonly kdf?: KdfParams;
}

export interface SecretManager {
  readonly kind: SecretProviderKind;
  readonly provider: SecretProvider;
  /**
   * One secret; SECRET_NOT_FOUND when missing, its message starting with `usedBy` (the option,
   * or the file and field, that names the secret) when given.
   */
  resolveSecret(name: string, usedBy?: string): Promise<Secret>;
  /** `{ [target]: value }` for a child's environment; one SECRET_NOT_FOUND naming every missing secret. */
  resolveSecretReferences(refs: readonly SecretReference[]): Promise<Readonly<Record<string, string>>>;
}

export function providerKindFrom(env: Readonly<Record<string, string | undefined>>): SecretProviderKind {
  const raw = env[PROVIDER_ENV]?.trim().toLowerCase();
  if (raw === undefined || raw === "") return "encrypted";
  if ((PROVIDER_KINDS as readonly string[]).includes(raw)) return raw as SecretProviderKind;
  throw new McpmgrError(
    "INVALID_ARGUMENT",
    `${PROVIDER_ENV}=${JSON.stringify(env[PROVIDER_ENV])}: must be one of ${PROVIDER_KINDS.join(", ")}`,
    {
      hint: `unset ${PROVIDER_ENV} to use the encrypted file`,
    },
  );
}

export function createSecretManager(options: SecretManagerOptions): SecretManager {
  const kind = options.provider ?? providerKindFrom(options.env);
  const provider: SecretProvider =
    kind === "environment"
      ? new EnvironmentProvider(options.env)
      : new EncryptedFileProvider({
          dir: options.dir,
          password:
            options.passwordSource ??
            defaultPasswordSource({
              env: options.env,
              ...(options.keychain !== undefined ? { keychain: options.keychain } : {}),
            }),
          ...(options.kdf ? { kdf: options.kdf } : {}),
        });

  async function resolveSecret(name: string, usedBy?: string): Promise<Secret> {
    const secret = await provider.get(validateSecretName(name));
    if (secret === undefined) throw notFound(kind, [name], await storedNames(provider), usedBy);
    return secret;
  }

  async function resolveSecretReferences(refs: readonly SecretReference[]): Promise<Readonly<Record<string, string>>> {
    const byTarget = new Map<string, string>();
    for (const ref of refs) {
      validateSecretName(ref.name);
      const earlier = byTarget.get(ref.target);
      if (earlier !== undefined && earlier !== ref.name) {
        throw new McpmgrError(
          "CONFLICTING_OPTIONS",
          `--secret ${earlier} and --secret ${ref.name} both set ${ref.target}`,
          {
            hint: "give each target variable one secret",
          },
        );
      }
      byTarget.set(ref.target, ref.name);
    }
    const out: Record<string, string> = Object.create(null);
    const missing: string[] = [];
    for (const [target, name] of byTarget) {
      const secret = await provider.get(name);
      if (secret === undefined) missing.push(`${name},target=${target}`);
      else out[target] = secret.reveal();
    }
    if (missing.length > 0) {
      const names = missing.map((text) => text.slice(0, text.indexOf(",target=")));
      throw notFound(kind, names, await storedNames(provider), missing.map((text) => `--secret ${text}`).join(", "));
    }
    return Object.freeze(out);
  }

  return Object.freeze({ kind, provider, resolveSecret, resolveSecretReferences });
}

/** The stored names, for a "did you mean" (none when they cannot be listed: the error is about the missing one). */
async function storedNames(provider: SecretProvider): Promise<readonly string[]> {
  return provider.list().catch(() => []);
}

/**
 * The nearest stored name to a missing one, ahead of the hint: told only to store the name as typed, a user
 * would keep the value twice, under the wrong name too.
 */
function nearestSecret(name: string, stored: readonly string[]): string {
  const near = didYouMean(closeMatches(name, stored, { nearestOnly: true }));
  return near === undefined ? "" : `${near} Otherwise `;
}

function notFound(
  kind: SecretProviderKind,
  names: readonly string[],
  stored: readonly string[],
  usedBy?: string,
): McpmgrError {
  const unique = [...new Set(names)];
  const listed = unique.map((name) => `'${name}'`).join(", ");
  const name = unique[0] ?? "NAME";
  const first = name.startsWith("-") ? `-- ${name}` : name;
  const hint =
    kind === "environment"
      ? `set ${unique.map(environmentVariableFor).join(", ")} (the environment provider is in use)`
      : `${unique.length === 1 ? nearestSecret(name, stored) : ""}store it with 'mcpmgr secret set ${first}' (the value is read from stdin); 'mcpmgr secret list' shows the stored names`;
  const what = unique.length === 1 ? `secret ${listed} not found` : `secrets ${listed} not found`;
  return new McpmgrError("SECRET_NOT_FOUND", usedBy === undefined ? what : `${usedBy}: ${what}`, { hint });
}
