/**
 * What a background workload's record must not hold. Its options are stored (and exported by
 * `mcpmgr export`) in plain text to restart it, so a credential given on the command line is
 * refused there, with the form that keeps it out: a `-file` option, the secrets store, or
 * `--foreground` (nothing is recorded). The same rule for `run` and `gateway --detach`.
 */
import { McpmgrError } from "../errors.ts";
import { isCredentialHeader, isCredentialValue } from "../secrets/credential-header.ts";

/**
 * In the warning a record made by an earlier version gets when it starts all the same (run-spec.ts):
 * `start`/`restart` show the supervisor's line in the terminal (cli/start-relay.ts).
 */
export const RECORDED_CREDENTIAL_MARKER = "recorded options hold a credential in plain text";

/** The options a recorded command line may hold, as parsed; absent ones are simply not checked. */
export interface RecordedValues {
  readonly env?: readonly { readonly key: string; readonly value: string }[];
  readonly "otel-headers"?: readonly { readonly key: string; readonly value: string }[];
  readonly "remote-forward-headers"?: readonly { readonly name: string; readonly value: string }[];
  readonly "otel-endpoint"?: string | undefined;
}

/**
 * How the command runs in the foreground, where nothing is recorded: `run --foreground`, and a
 * gateway without `--detach` (it has no --foreground option), said in the refusal's hint.
 */
export type ForegroundForm = "with --foreground" | "without --detach";

/**
 * Query parameter names that hold a credential in a URL, beyond what a header's name says
 * (secrets/credential-header.ts): `code` is an OAuth authorization code (redeemable while it is fresh) and the
 * function key of an Azure Functions endpoint (`?code=KEY`, a collector hosted there is reached so). Not
 * for headers: a header named so is rare, and a name part `code` (`X-Status-Code`, `country_code`)
 * holds none; only the whole name counts here too.
 */
const credentialQueryNames: ReadonlySet<string> = new Set(["code"]);

/** Options whose value is a credential, and the form of each that keeps it out of the record. */
const literalSecrets = [
  ["remote-auth-client-secret", "--remote-auth-client-secret-file"],
  ["remote-auth-bearer-token", "--remote-auth-bearer-token-file"],
  ["token-exchange-client-secret", "--token-exchange-client-secret-file"],
  ["oidc-client-secret", "--oidc-client-secret-file"],
] as const;

function plainText(what: string, hint: string): McpmgrError {
  return new McpmgrError(
    "INVALID_OPTION",
    `${what}: a credential would be stored in the workload's configuration in plain text`,
    { hint },
  );
}

/** Refuses the first credential in a background workload's command line (see recordedCredential). */
export function refuseRecordedCredentials(
  values: RecordedValues,
  given: ReadonlySet<string>,
  foreground: ForegroundForm = "with --foreground",
): void {
  const found = recordedCredential(values, given, foreground);
  if (found !== undefined) throw found;
}

/**
 * The refusal for the first credential in a background workload's command line, if any: a
 * literal secret option, a credential-looking forwarded or OTLP header or collector URL query
 * parameter, an environment value in a credential's form. (A remote URL with credentials in it is refused everywhere, in the foreground
 * too: config/url-credentials.ts.)
 */
export function recordedCredential(
  values: RecordedValues,
  given: ReadonlySet<string>,
  foreground: ForegroundForm = "with --foreground",
): McpmgrError | undefined {
  const collectorHint = `run it ${foreground}, where nothing is recorded (the collector's key has no secret form yet)`;
  for (const [option, instead] of literalSecrets) {
    if (given.has(option)) {
      return new McpmgrError(
        "INVALID_OPTION",
        `--${option} would be stored in the workload's configuration in plain text`,
        {
          hint: `use ${instead} for a background workload (or run it ${foreground})`,
        },
      );
    }
  }
  for (const header of values["remote-forward-headers"] ?? []) {
    if (!isCredentialHeader(header.name, header.value)) continue;
    return plainText(
      `--remote-forward-headers ${header.name}=…`,
      `store it with 'mcpmgr secret set NAME' and pass --remote-forward-headers-secret ${header.name}=NAME (or run it ${foreground})`,
    );
  }
  for (const header of values["otel-headers"] ?? []) {
    if (!isCredentialHeader(header.key, header.value)) continue;
    return plainText(`--otel-headers ${header.key}=…`, collectorHint);
  }
  // A collector's key in the endpoint's query (`?api-key=KEY`, as some vendors document it) would be
  // recorded, exported and listed with the URL. Checked by parameter as a header is: name or value form.
  const endpoint = URL.parse(values["otel-endpoint"] ?? "");
  for (const [key, value] of endpoint?.searchParams ?? []) {
    if (!isCredentialHeader(key, value) && !credentialQueryNames.has(key.toLowerCase())) continue;
    return plainText(`--otel-endpoint …?${key}=…`, collectorHint);
  }
  for (const variable of values.env ?? []) {
    if (!isCredentialValue(variable.value)) continue;
    return plainText(
      `-e ${variable.key}=…`,
      `store it with 'mcpmgr secret set NAME' and pass --secret NAME,target=${variable.key} (or run it ${foreground})`,
    );
  }
  return undefined;
}
