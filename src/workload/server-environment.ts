/**
 * A local server's environment. The plain variables are resolved with the RunSpec, once:
 * the registry entry's defaults, then --env-file-dir, --env-file and -e (later wins). Secret
 * values are read from the secrets store at every start (never kept in the spec), and the
 * variables the registry entry requires are checked once everything is known.
 */
import type { ParsedRunArgv } from "../config/run-argv.ts";
import { McpmgrError } from "../errors.ts";
import type { RegistryEntry } from "../registry/entry.ts";
import type { SecretReference } from "../secrets/manager.ts";
import { secretValues } from "../secrets/credential-variables.ts";
import { MIN_REDACT_LENGTH, redactor } from "../secrets/redact.ts";
import type { WorkloadContext } from "./context.ts";

export interface RequiredVariable {
  readonly name: string;
  readonly description: string;
  readonly secret: boolean;
}

export interface ServerVariables {
  /** Plain variables, in the order of precedence above. */
  readonly plain: Readonly<Record<string, string>>;
  /** `--secret NAME,target=VAR`: resolved when the server starts. */
  readonly secrets: readonly SecretReference[];
  /** Variables the registry entry marks required: the start fails early if none of the above sets them. */
  readonly required: readonly RequiredVariable[];
  /** Whose requirements they are, for the message. */
  readonly requiredBy: string;
}

/** What mcpmgr tells an HTTP server: the transport it speaks, and the port it listens on when one is chosen. */
export interface ListenSettings {
  readonly transport: "sse" | "streamable-http";
  readonly port: number | undefined;
}

export function serverVariables(
  values: ParsedRunArgv["values"],
  entry: RegistryEntry | undefined,
  listen?: ListenSettings,
  /**
   * How a conflict is refused: thrown, unless the options are a record's (placement.ts's refuseInert warns;
   * `outcome` says what the start then does with it, "ignored" unless given).
   */
  refuse: (error: McpmgrError, outcome?: string) => void = (error) => {
    throw error;
  },
): ServerVariables {
  // The env-file parser (dotenv) only when a file is named; required, not imported: this is synchronous.
  const envFiles = () => require("../config/env-files.ts") as typeof import("../config/env-files.ts");
  const given: (readonly [string, Readonly<Record<string, string>>])[] = [
    ["--env-file-dir", values["env-file-dir"] ? envFiles().loadEnvDir(values["env-file-dir"]) : {}],
    ["--env-file", values["env-file"] ? envFiles().loadEnvFile(values["env-file"]) : {}],
    ["-e", Object.fromEntries(values.env.map((pair) => [pair.key, pair.value]))],
  ];
  assertSecretTargetsFit(values.secret, listen, refuse);
  if (listen) assertListenVariablesKept(given, listen, refuse);
  const plain: Record<string, string> = {
    ...Object.fromEntries(
      (entry?.env ?? []).filter((e) => e.default !== undefined).map((e) => [e.name, e.default as string]),
    ),
    ...Object.assign({}, ...given.map(([, vars]) => vars)),
  };
  for (const ref of values.secret) {
    if (ref.target in plain) {
      throw new McpmgrError(
        "CONFLICTING_OPTIONS",
        `--secret ${ref.name},target=${ref.target} and a plain variable both set ${ref.target}`,
        { hint: "give the variable one source" },
      );
    }
  }
  return Object.freeze({
    plain: Object.freeze(plain),
    secrets: values.secret,
    required: (entry?.env ?? [])
      .filter((e) => e.required)
      .map((e) => ({ name: e.name, description: e.description, secret: e.secret })),
    requiredBy: entry?.name ?? "",
  });
}

/**
 * A secret's target is the variable the server reads it from. A secret in PATH, HOME or TMPDIR replaced the
 * server's programs' search path, its home or its /tmp (the sandbox's) with no word of why; in LD_PRELOAD or
 * another LD_ variable the dynamic loader read it as libraries to load, in every program the server started.
 * For an HTTP server, mcpmgr sets MCP_TRANSPORT and MCP_PORT over it (a stdio server is told neither: there
 * they are the user's). Each was accepted without a word, so a workload's record may hold one: its start
 * warns and does what that version did (the secret set, or for MCP_* replaced), rather than failing where
 * it used to start. Only a new `run` (and --from-config) is refused.
 */
function assertSecretTargetsFit(
  secrets: readonly SecretReference[],
  listen: ListenSettings | undefined,
  refuse: (error: McpmgrError, outcome?: string) => void,
): void {
  for (const ref of secrets) {
    const as = `--secret ${ref.name},target=${ref.target}`;
    const what = misplacedTarget(ref.target);
    if (what !== undefined) {
      const error = new McpmgrError("INVALID_OPTION", `${as}: ${ref.target} is ${what}, not a secret's place`, {
        hint: "write it as --secret NAME,target=VAR, with VAR the variable the server reads the secret from, such as GITHUB_TOKEN",
      });
      refuse(error, `the secret set as ${ref.target} all the same`);
    } else if (listen && (ref.target === "MCP_TRANSPORT" || ref.target === "MCP_PORT")) {
      const error = new McpmgrError(
        "CONFLICTING_OPTIONS",
        `${as} would be replaced: mcpmgr sets ${ref.target} to tell this ${listen.transport} server ${ref.target === "MCP_PORT" ? "the port to listen on" : "its transport"}`,
        {
          hint: `leave this --secret out; ${ref.target === "MCP_PORT" ? "--target-port sets the port" : "--transport sets it"}`,
        },
      );
      refuse(error);
    }
  }
}

function misplacedTarget(target: string): string | undefined {
  if (target === "PATH") return "where the server finds its programs";
  if (target === "HOME" || target === "TMPDIR") return "the server's own folder (mcpmgr's sandbox gives it one)";
  if (target.startsWith("LD_")) return "read by the dynamic loader of every program the server runs";
  return undefined;
}

/**
 * An HTTP server is told where to listen in MCP_TRANSPORT and MCP_PORT, set by mcpmgr over the user's
 * variables. One the user gave (-e, --env-file, --env-file-dir, and so --from-config's "env") that
 * differs was replaced without a word, and the server listened elsewhere than the user asked: refused,
 * naming the option that sets it. The same value is harmless and kept. A registry entry's default is
 * not the user's to fix and stays overridden. A workload's record may hold such a value from a version that
 * replaced it without a word: its start (after a reboot, `start --all`) is warned about and goes on as
 * that version's did, mcpmgr's value replacing the user's, rather than failing where it used to start.
 */
function assertListenVariablesKept(
  given: readonly (readonly [string, Readonly<Record<string, string>>])[],
  listen: ListenSettings,
  refuse: (error: McpmgrError) => void,
): void {
  const wanted = { MCP_TRANSPORT: listen.transport, MCP_PORT: listen.port?.toString() };
  for (const name of ["MCP_TRANSPORT", "MCP_PORT"] as const) {
    const source = given.findLast(([, vars]) => vars[name] !== undefined);
    if (source === undefined) continue;
    const [option, vars] = source;
    const value = vars[name] as string;
    if (value.trim() === wanted[name]) continue;
    const where = option === "-e" ? `-e ${name}=${value}` : `${name}=${value} in ${option}`;
    const hint =
      name === "MCP_PORT"
        ? /^\d{1,5}$/.test(value.trim())
          ? `leave ${name} out and give --target-port ${value.trim()}`
          : `leave ${name} out; --target-port sets the port`
        : value.trim() === "sse" || value.trim() === "streamable-http"
          ? `leave ${name} out and give --transport ${value.trim()}`
          : `leave ${name} out; --transport sets it`;
    const error = new McpmgrError(
      "CONFLICTING_OPTIONS",
      `${where} would be replaced: mcpmgr sets ${name} to tell this ${listen.transport} server ${name === "MCP_PORT" ? "the port to listen on" : "its transport"}${wanted[name] ? ` (${wanted[name]})` : ""}`,
      { hint },
    );
    refuse(error);
  }
}

/**
 * The environment a start hands to the server, and a redactor for the secret values in it: the
 * `--secret` values, and the plain ones that are secrets by their name or form (an API key given with
 * `-e`, `--env-file` or `--env-file-dir`, or a registry entry's default: secrets/credential-variables.ts).
 * `holdsSecrets`: there are such values (the supervisor says so in its status, for a gateway's membership).
 */
export async function serverEnvironment(
  variables: ServerVariables,
  ctx: WorkloadContext,
): Promise<{ env: Record<string, string>; redact: (text: string) => string; holdsSecrets: boolean }> {
  const secrets = variables.secrets.length > 0 ? await ctx.secrets().resolveSecretReferences(variables.secrets) : {};
  const env = { ...variables.plain, ...secrets };
  assertCarriable(variables, env);
  assertRequiredEnv(variables, env);
  const values = [...Object.values(secrets), ...secretValues(variables.plain)];
  return {
    env,
    redact: redactor(values),
    holdsSecrets: values.some((value) => value.length >= MIN_REDACT_LENGTH),
  };
}

/**
 * No process's environment carries a NUL byte: the launch would fail with an unexpected error that quotes
 * the value (a secret's, stored with one). Refused by the variable's name and where its value comes from.
 */
function assertCarriable(variables: ServerVariables, env: Readonly<Record<string, string>>): void {
  const name = Object.keys(env).find((key) => env[key]?.includes("\0"));
  if (name === undefined) return;
  const secret = variables.secrets.find((ref) => ref.target === name);
  throw new McpmgrError(
    "INVALID_OPTION",
    `${secret ? `the secret '${secret.name}' given as ${name}` : `the variable ${name}`} holds a NUL byte, which no environment variable can carry`,
    {
      hint: secret
        ? `store it again without it ('mcpmgr secret set ${secret.name}'), base64-encoded if it is binary`
        : "take the NUL byte out of its value",
    },
  );
}

/** Refuses to start a server without the variables its registry entry requires. */
function assertRequiredEnv(variables: ServerVariables, env: Readonly<Record<string, string>>): void {
  const missing = variables.required.filter((spec) => env[spec.name] === undefined || env[spec.name] === "");
  const first = missing[0];
  if (first === undefined) return;
  const how = first.secret
    ? `--secret NAME,target=${first.name} (after 'mcpmgr secret set NAME')`
    : `-e ${first.name}=VALUE`;
  throw new McpmgrError(
    "MISSING_OPTION",
    `${variables.requiredBy} needs ${missing.map((m) => m.name).join(", ")}: ${first.description}`,
    { hint: `give it with ${how}` },
  );
}
