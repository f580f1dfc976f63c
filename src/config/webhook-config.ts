/**
 * `--webhook-config FILE` (repeatable; JSON or YAML, docs/file-formats.md):
 *   {validating: [...], mutating: [...]} with entries
 *   {name, url, failure_policy: fail|ignore, timeout, tls_config, hmac_secret_ref, allow_http}
 * Files are merged by name: a later file's entry replaces an earlier one of the same name.
 * Certificates are read here, so a bad path fails at start-up.
 */
import { FileTooLarge, readCappedFile } from "../bounded-file.ts";
import * as v from "valibot";
import { McpmgrError } from "../errors.ts";
import { decodeConfigFile } from "./config-file.ts";
import { duration } from "./values.ts";

export interface WebhookSpec {
  readonly name: string;
  readonly url: URL;
  readonly failurePolicy: "fail" | "ignore";
  readonly timeoutMs: number;
  readonly tls:
    | { readonly ca?: string; readonly cert?: string; readonly key?: string; readonly insecureSkipVerify: boolean }
    | undefined;
  /** Secret name in the secrets manager; the request body is signed with it (HMAC-SHA256). */
  readonly hmacSecretRef: string | undefined;
  /** Where it was configured, for messages: `--webhook-config FILE: webhook NAME`. */
  readonly origin: string;
}

export interface WebhookConfig {
  readonly validating: readonly WebhookSpec[];
  readonly mutating: readonly WebhookSpec[];
}

const entrySchema = v.strictObject({
  name: v.pipe(
    v.string(),
    v.regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/, "must be a name of letters, digits, '.', '_' or '-'"),
  ),
  url: v.pipe(v.string(), v.url("must be an absolute URL")),
  failure_policy: v.optional(v.picklist(["fail", "ignore"], "must be fail or ignore"), "fail"),
  timeout: v.optional(
    v.union(
      [
        v.pipe(
          v.number(),
          v.minValue(0.001, "must be positive"),
          v.transform((s) => s * 1000),
        ),
        duration,
      ],
      "must be seconds or a duration such as 5s",
    ),
    10_000,
  ),
  tls_config: v.optional(
    v.strictObject({
      ca_bundle_path: v.optional(v.string()),
      client_cert_path: v.optional(v.string()),
      client_key_path: v.optional(v.string()),
      insecure_skip_verify: v.optional(v.boolean(), false),
    }),
  ),
  hmac_secret_ref: v.optional(v.pipe(v.string(), v.nonEmpty("must not be empty"))),
  allow_http: v.optional(v.boolean(), false),
});
const fileSchema = v.strictObject({
  validating: v.optional(v.array(entrySchema), () => []),
  mutating: v.optional(v.array(entrySchema), () => []),
});

function readPem(file: string, field: string, path: string): string {
  try {
    return readCappedFile(path);
  } catch (err) {
    const why = err instanceof FileTooLarge ? err.message : "cannot read the file";
    throw new McpmgrError("INVALID_OPTION", `--webhook-config ${file}: ${field} ${JSON.stringify(path)}: ${why}`, {
      hint: "give the path of a PEM file",
    });
  }
}

function load(file: string): v.InferOutput<typeof fileSchema> {
  return decodeConfigFile(file, fileSchema, {
    option: "--webhook-config",
    yaml: true,
    hint: "entries are {name, url, failure_policy, timeout, tls_config, hmac_secret_ref}",
  });
}

function toSpec(file: string, entry: v.InferOutput<typeof entrySchema>): WebhookSpec {
  const url = new URL(entry.url);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && entry.allow_http)) {
    throw new McpmgrError(
      "INVALID_OPTION",
      `--webhook-config ${file}: webhook ${entry.name}: ${url.protocol}// is refused`,
      { hint: "use https://, or set allow_http: true for a webhook on a trusted network" },
    );
  }
  const tls = entry.tls_config;
  if (tls && (tls.client_cert_path === undefined) !== (tls.client_key_path === undefined)) {
    throw new McpmgrError(
      "INVALID_OPTION",
      `--webhook-config ${file}: webhook ${entry.name}: client_cert_path and client_key_path go together`,
      { hint: "give both, or neither" },
    );
  }
  return {
    name: entry.name,
    url,
    failurePolicy: entry.failure_policy,
    timeoutMs: entry.timeout,
    tls: tls
      ? {
          ...(tls.ca_bundle_path ? { ca: readPem(file, "ca_bundle_path", tls.ca_bundle_path) } : {}),
          ...(tls.client_cert_path ? { cert: readPem(file, "client_cert_path", tls.client_cert_path) } : {}),
          ...(tls.client_key_path ? { key: readPem(file, "client_key_path", tls.client_key_path) } : {}),
          insecureSkipVerify: tls.insecure_skip_verify,
        }
      : undefined,
    hmacSecretRef: entry.hmac_secret_ref,
    origin: `--webhook-config ${file}: webhook ${entry.name}`,
  };
}

/** undefined without --webhook-config. */
export function webhookConfig(files: readonly string[]): WebhookConfig | undefined {
  if (files.length === 0) return undefined;
  const validating = new Map<string, WebhookSpec>();
  const mutating = new Map<string, WebhookSpec>();
  for (const file of files) {
    const parsed = load(file);
    for (const entry of parsed.validating) validating.set(entry.name, toSpec(file, entry));
    for (const entry of parsed.mutating) mutating.set(entry.name, toSpec(file, entry));
  }
  return Object.freeze({ validating: [...validating.values()], mutating: [...mutating.values()] });
}
