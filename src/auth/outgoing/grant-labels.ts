/**
 * What an `oauth-` record of the secrets store is for. Its name is a hash (grant-store.ts), so each
 * record mcpmgr saves carries a label (`about`): the kind of record, the remote it serves and the
 * authorization server. `mcpmgr secret list` describes a record by it and `mcpmgr rm` finds a
 * remote's records by it. A description never holds a token, a client secret or a code: only the
 * label's URLs and a client id. A record saved before labels is described by its shape, without
 * its remote.
 */
import { printable } from "../../printable.ts";
import type { SecretProvider } from "../../secrets/provider.ts";

/** A login's tokens (and the client mcpmgr registered); a --remote-auth-client-id's first server; a remembered 401. */
export type RecordKind = "grant" | "client-home" | "challenge";

export interface RecordLabel {
  readonly kind: RecordKind;
  /** The remote's URL, origin and path (what the record's key holds of it); absent on an older record. */
  readonly remote?: string | undefined;
  /** The authorization server's issuer; absent for a challenge whose server was not found. */
  readonly issuer?: string | undefined;
  /** A client-home record's --remote-auth-client-id (a client id is not a secret). */
  readonly clientId?: string | undefined;
}

/** The remote as records name it: origin and path, no query (it may carry a key) and no user info. */
export function remoteOf(target: URL): string {
  return `${target.origin}${target.pathname}`;
}

/** The names mcpmgr gives its records (grant-store.ts): `oauth-` and 32 hex digits. */
const RECORD_NAME = /^oauth-[0-9a-f]{32}$/;
const KINDS: ReadonlySet<string> = new Set<RecordKind>(["grant", "client-home", "challenge"]);
/** A label's text longer than this is not shown (a store edited by hand). */
const MAX_FIELD_CHARS = 2_048;

export function isOAuthRecordName(name: string): boolean {
  return RECORD_NAME.test(name);
}

const field = (value: unknown): string | undefined =>
  typeof value === "string" && value.length > 0 && value.length <= MAX_FIELD_CHARS ? value : undefined;

/**
 * The label of a record's stored text: its own, or for an older record the kind its shape shows.
 * undefined when the text is not a record mcpmgr saved.
 */
export function labelOf(text: string): RecordLabel | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const record = value as Record<string, unknown>;
  const about = record.about as Record<string, unknown> | undefined;
  if (typeof about === "object" && about !== null && typeof about.kind === "string" && KINDS.has(about.kind)) {
    const kind = about.kind as RecordKind;
    return {
      kind,
      remote: field(about.remote),
      // A client home holds its server as the record itself (grant-session.ts `StoredGrant.issuer`).
      issuer: field(about.issuer) ?? (kind === "client-home" ? field(record.issuer) : undefined),
      clientId: kind === "client-home" ? field(about.clientId) : undefined,
    };
  }
  if (field(record.challenge) !== undefined) return { kind: "challenge" };
  const grantFields = ["accessToken", "refreshToken", "clientId"];
  if (grantFields.some((name) => field(record[name]) !== undefined)) return { kind: "grant" };
  if (field(record.issuer) !== undefined) return { kind: "client-home", issuer: field(record.issuer) };
  return undefined;
}

/** One line for a person: what the record is, for which remote, at which authorization server. */
export function describeRecord(label: RecordLabel): string {
  const what =
    label.kind === "grant"
      ? "OAuth login grant"
      : label.kind === "challenge"
        ? "remembered login challenge"
        : label.clientId !== undefined
          ? `first authorization server of the client '${label.clientId}'`
          : "first authorization server of a --remote-auth-client-id";
  const remote =
    label.remote !== undefined
      ? `remote ${label.remote}`
      : "remote not recorded (saved by an earlier mcpmgr; named at its next save)";
  const server =
    label.issuer !== undefined
      ? `, authorization server ${label.issuer}`
      : label.kind === "challenge"
        ? ", authorization server not found yet"
        : "";
  return printable(`${what}: ${remote}${server}`);
}

/**
 * mcpmgr's records among `names` (default: every stored name), with their labels. A record that
 * cannot be read, or is not one of mcpmgr's, is left out.
 */
export async function oauthRecords(
  provider: SecretProvider,
  names?: readonly string[],
): Promise<Map<string, RecordLabel>> {
  const found = new Map<string, RecordLabel>();
  const wanted = (names ?? (await provider.list())).filter(isOAuthRecordName);
  if (wanted.length === 0) return found;
  // One read of the store for them all: a big store is read (and decrypted) once, not once per record.
  const secrets = await provider.getMany(wanted).catch(() => new Map<string, never>());
  for (const [name, secret] of secrets) {
    const label = labelOf(secret.reveal());
    if (label !== undefined) found.set(name, label);
  }
  return found;
}
