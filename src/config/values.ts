/**
 * valibot schemas for single flag values. Each takes the raw string from argv and
 * yields a typed value; messages are written to be read after "--option VALUE: ". Also the
 * port number of a JSON or YAML document (a profile's allow_port, a registry entry's targetPort).
 */
import * as v from "valibot";
import { ipVersion } from "./ip-address.ts";
import { listenAddress } from "./loopback.ts";

export type ValueSchema<T> = v.GenericSchema<string, T>;

const trimmed = v.pipe(v.string(), v.trim());

export const nonEmpty = v.pipe(trimmed, v.nonEmpty("must not be empty"));

export const port = v.pipe(
  trimmed,
  v.regex(/^\d{1,5}$/, "must be a port number (1-65535)"),
  v.transform(Number),
  v.minValue(1, "must be a port number (1-65535)"),
  v.maxValue(65535, "must be a port number (1-65535)"),
);

/** A port given as a number in a document (not as text on the command line). */
export const portNumber = v.pipe(
  v.number(),
  v.integer("must be a whole number"),
  v.minValue(1, "must be a port number (1-65535)"),
  v.maxValue(65535, "must be a port number (1-65535)"),
);

export const unitInterval = v.pipe(
  trimmed,
  v.regex(/^(\d+(\.\d*)?|\.\d+)$/, "must be a number from 0.0 to 1.0"),
  v.transform(Number),
  v.maxValue(1, "must be a number from 0.0 to 1.0"),
);

/** Go-style durations as users know them from other MCP tools: 30s, 1m, 2m30s, 1h, 500ms. */
const durationUnitsMs: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
/**
 * The longest timer a JavaScript runtime keeps (2^31 - 1 ms, about 24.8 days). Longer delays fire
 * after 1 ms instead, so `720h` meant as "never" would time out everything at once: a longer
 * duration is taken as this one, which is "never" for any request or session.
 */
export const LONGEST_DURATION_MS = 2_147_483_647;
const durationPattern = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/;
export const duration = v.pipe(
  trimmed,
  v.regex(durationPattern, "must be a duration such as 30s, 1m or 2m30s"),
  v.transform((text) => {
    let total = 0;
    for (const [, amount, unit] of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) {
      total += Number(amount) * (durationUnitsMs[unit as string] ?? 0);
    }
    return Math.min(Math.round(total), LONGEST_DURATION_MS);
  }),
  v.minValue(1, "must be longer than zero"),
);

export function oneOf<const T extends readonly [string, ...string[]]>(choices: T) {
  return v.pipe(trimmed, v.picklist(choices, `must be one of ${choices.join(", ")}`));
}

/** The values a schema made by oneOf() accepts (for "did you mean" and shell completion); none for others. */
export function choicesOf(schema: ValueSchema<unknown>): readonly string[] {
  const steps = (schema as { readonly pipe?: readonly { readonly type: string; readonly options?: unknown }[] }).pipe;
  const picklist = steps?.find((step) => step.type === "picklist")?.options;
  return Array.isArray(picklist) ? picklist.filter((item): item is string => typeof item === "string") : [];
}

/**
 * An MCP server's URL (`--target-uri`): its user name or password are refused where it is used, with the
 * header that carries them instead (config/url-credentials.ts).
 */
export const serverHttpUrl = v.pipe(
  trimmed,
  v.url("must be an absolute URL such as https://example.com/mcp"),
  v.check((text) => /^https?:$/i.test(new URL(text).protocol), "must be an http:// or https:// URL"),
);

/**
 * Any other URL option (an issuer, a token or JWKS endpoint, a collector): no user name or password in
 * it. Options are recorded for background workloads (and exported), shown by ps and written in errors
 * and logs; a password in a URL would be all of those. Their own options (a client secret file, a header)
 * carry credentials instead.
 */
const noUserInfo = v.check((text: string) => {
  const url = new URL(text);
  return url.username === "" && url.password === "";
}, "must not hold a user name or password (user:password@): it would be recorded, listed and logged; give the credential with its own option");

export const httpUrl = v.pipe(serverHttpUrl, noUserInfo);

/** An OTLP/HTTP collector (`--otel-endpoint`): as httpUrl, with a collector's URL as the example, not an MCP server's. */
export const collectorUrl = v.pipe(
  trimmed,
  v.url("must be an absolute URL such as https://otel-collector.example.com:4318"),
  v.check((text) => /^https?:$/i.test(new URL(text).protocol), "must be an http:// or https:// URL"),
  noUserInfo,
);

const hostLabel = /^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$/;

/** A last label of digits only makes a dotted name an IPv4 address (no top-level domain is numeric). */
const numericLabel = /^\d+$/;

function isHostName(text: string): boolean {
  const bare = text.replace(/^\[(.*)\]$/, "$1");
  const labels = text.split(".");
  if (
    bare === text &&
    text.length <= 253 &&
    labels.every((label) => hostLabel.test(label)) &&
    !numericLabel.test(labels.at(-1) as string)
  )
    return true;
  // 256.1.1.1 is neither: refused here rather than by the operating system when the proxy binds.
  return ipVersion(bare) !== 0;
}

export const hostName = v.pipe(
  trimmed,
  v.check(isHostName, "must be an IP address or a host name"),
  // "[::1]" and "::1" both name the IPv6 loopback; Bun.serve wants the bare form.
  v.transform((text) => text.replace(/^\[(.*)\]$/, "$1")),
);

/**
 * A listener's `--host`: a loopback name is bound, and named in its URLs, as its address (loopback.ts
 * `listenAddress`: `localhost` as 127.0.0.1, `ip6-localhost` as ::1), before the check, so that
 * `localhost.` (the final dot RFC 6761 names it with) is one too.
 */
export const listenHost = v.pipe(trimmed, v.transform(listenAddress), hostName);

/** The items of a comma-separated list ("a,b, c"), trimmed; empty items are dropped. */
function commaItems(text: string): string[] {
  return text
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item.length > 0);
}

/** Comma-separated lists ("a,b, c"); empty items are dropped. */
export const commaList = v.pipe(v.string(), v.transform(commaItems), v.minLength(1, "must list at least one value"));

const envName = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** KEY=VALUE where KEY is a valid environment variable name; VALUE may be empty. */
export const envAssignment = v.pipe(
  v.string(),
  v.regex(/^[^=]+=/, "must look like KEY=VALUE"),
  v.transform((text) => {
    const at = text.indexOf("=");
    return { key: text.slice(0, at).trim(), value: text.slice(at + 1) } as const;
  }),
  v.check((pair) => envName.test(pair.key), "the name before '=' must be a valid variable name (letters, digits, _)"),
);

/** key=value for labels, OTLP headers and resource attributes. */
export const keyValue = v.pipe(
  v.string(),
  v.regex(/^[^=]+=/, "must look like key=value"),
  v.transform((text) => {
    const at = text.indexOf("=");
    return { key: text.slice(0, at).trim(), value: text.slice(at + 1).trim() } as const;
  }),
  v.check((pair) => pair.key.length > 0, "the key before '=' must not be empty"),
);

/** HTTP header token (RFC 9110 §5.6.2). */
const headerToken = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
export const headerAssignment = v.pipe(
  v.string(),
  v.regex(/^[^=]+=/, "must look like Name=Value"),
  v.transform((text) => {
    const at = text.indexOf("=");
    return { name: text.slice(0, at).trim(), value: text.slice(at + 1).trim() } as const;
  }),
  v.check((pair) => headerToken.test(pair.name), "the header name is not a valid HTTP token"),
  v.check((pair) => !/[\r\n\0]/.test(pair.value), "the header value must not contain line breaks"),
);

/** Comma-separated key=value pairs in one string ("a=1,b=2"). */
export const keyValueList = v.pipe(
  v.string(),
  v.transform(commaItems),
  v.minLength(1, "must hold at least one key=value pair"),
  v.check((items) => items.every((item) => /^[^=]+=/.test(item)), "every item must look like key=value"),
  v.transform((items) =>
    items.map((item) => ({
      key: item.slice(0, item.indexOf("=")).trim(),
      value: item.slice(item.indexOf("=") + 1).trim(),
    })),
  ),
);

/**
 * hostPort:containerPort, published on 127.0.0.1; `127.0.0.1:hostPort:containerPort`, as Docker users
 * write it to stay on loopback, says the same. Another address is refused: mcpmgr never publishes there.
 */
export const portMapping = v.pipe(
  trimmed,
  v.regex(
    /^(?:127\.0\.0\.1:)?\d{1,5}:\d{1,5}$/,
    "must look like hostPort:containerPort, e.g. 8080:8080 (always published on 127.0.0.1; no other address)",
  ),
  v.transform((text) => {
    const [host, container] = text
      .replace(/^127\.0\.0\.1:/, "")
      .split(":")
      .map(Number) as [number, number];
    return { hostPort: host, containerPort: container } as const;
  }),
  v.check(
    (m) => m.hostPort >= 1 && m.hostPort <= 65535 && m.containerPort >= 1 && m.containerPort <= 65535,
    "ports must be between 1 and 65535",
  ),
);

/** host-path:container-path[:ro]; a Windows drive letter in the host path is kept whole. */
export const volumeMount = v.pipe(
  v.string(),
  v.rawCheck(({ dataset, addIssue }) => {
    if (dataset.typed && parseVolume(dataset.value) === undefined) {
      addIssue({
        message: "must look like host-path:container-path or host-path:container-path:ro (container path absolute)",
      });
    }
  }),
  v.transform((text) => parseVolume(text) as VolumeMount),
);

export interface VolumeMount {
  readonly hostPath: string;
  readonly containerPath: string;
  readonly readOnly: boolean;
}

function parseVolume(text: string): VolumeMount | undefined {
  const drive = /^[A-Za-z]:[\\/]/.test(text) ? text.slice(0, 2) : "";
  const parts = text.slice(drive.length).split(":");
  let readOnly = false;
  if (parts.length === 3) {
    if (parts[2] !== "ro" && parts[2] !== "rw") return undefined;
    readOnly = parts[2] === "ro";
    parts.pop();
  }
  if (parts.length !== 2) return undefined;
  const hostPath = drive + (parts[0] ?? "");
  const containerPath = parts[1] ?? "";
  if (hostPath.length === 0 || !containerPath.startsWith("/")) return undefined;
  return { hostPath, containerPath, readOnly };
}

/** NAME,target=TARGET for --secret. */
export const secretReference = v.pipe(
  v.string(),
  v.regex(/^[^,]+,target=[^,]+$/, "must look like NAME,target=ENV_VAR"),
  v.transform((text) => {
    const [name, target] = text.split(",") as [string, string];
    return { name: name.trim(), target: target.slice("target=".length).trim() } as const;
  }),
  v.check((ref) => envName.test(ref.target), "the target must be a valid environment variable name"),
);

/**
 * The KEY=VALUE forms (`-e`, `--remote-forward-headers`, `--otel-headers`, labels): their values are
 * often a credential, so a refused one is quoted by its keys alone (`1TOKEN=…`). An item without `=`
 * is a name whose value was left out (`-e NOVALUE`, quoted: the user looks for it) or a token pasted
 * without its name (not quoted): quoted only in a name's form and length (a token is longer, or has
 * other characters).
 */
export const assignmentSchemas: ReadonlySet<unknown> = new Set([
  envAssignment,
  keyValue,
  headerAssignment,
  keyValueList,
]);

export function withValuesHidden(schema: unknown, text: string): string {
  const hide = (item: string) =>
    item.includes("=") ? `${item.slice(0, item.indexOf("="))}=…` : /^[A-Za-z_][\w.-]{0,31}$/.test(item) ? item : "…";
  return schema === keyValueList ? text.split(",").map(hide).join(",") : hide(text);
}

/**
 * valibot's message quotes the value it refused (`Expected Array but received "ghp_…"`), and a value
 * in the wrong place of a file (an option file, an exported workload) is often a token or password
 * pasted one line off: say what kind of value it was, never the value.
 */
export function issueWithoutValue(issue: v.BaseIssue<unknown>): string {
  const { message, received } = issue;
  if (!received.startsWith('"')) return message; // numbers, booleans, null, types: nothing secret
  return message.split(received).join("a string");
}

/** First issue as "message", for one-line errors. */
export function firstIssueMessage(issues: readonly v.BaseIssue<unknown>[]): string {
  return issues[0]?.message ?? "is not valid";
}

/** A URL path prefix such as /api/mcp: leading slash added, trailing slash dropped. */
export const pathPrefix = v.pipe(
  trimmed,
  v.regex(/^\/?[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$/, "must be a URL path such as /api/mcp"),
  v.transform((text) => `/${text.replace(/^\/+/, "")}`.replace(/\/+$/, "")),
);
