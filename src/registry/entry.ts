/**
 * A registry entry once validated (schema.ts makes them): its type and the helpers that read
 * one. Kept apart from the schema so that commands which only read entries (`registry list`
 * from the embedded catalog, `run NAME`) do not build the validation schemas at start-up.
 */
import type { Permissions } from "../config/permission-profile.ts";

export const transports = ["stdio", "sse", "streamable-http"] as const;
export type Transport = (typeof transports)[number];

export const sourceKinds = ["image", "npx", "uvx", "go", "remote"] as const;
export type SourceKind = (typeof sourceKinds)[number];

/** Exactly one key is set. */
export type EntrySource = Readonly<Partial<Record<SourceKind, string>>>;

export interface EnvVarSpec {
  readonly name: string;
  readonly description: string;
  readonly required: boolean;
  readonly secret: boolean;
  readonly default?: string;
}

export interface RegistryEntry {
  readonly name: string;
  readonly description: string;
  readonly transport: Transport;
  readonly source: EntrySource;
  /** The port the server listens on inside its container/sandbox (sse and streamable-http only). */
  readonly targetPort?: number;
  readonly permissions: Permissions;
  readonly env: readonly EnvVarSpec[];
  readonly args: readonly string[];
  readonly tools: readonly string[];
  readonly tags: readonly string[];
  readonly repository?: string;
  readonly version?: string;
  /** The MCP registry name (io.github.owner/server) of entries converted from server.json. */
  readonly qualifiedName?: string;
}

/** The one way this entry's server is obtained, and the `run` argument that means the same thing. */
export interface ResolvedSource {
  readonly kind: SourceKind;
  readonly ref: string;
  /** What `mcpmgr run` would accept for it: an image reference, npx://…, uvx://…, go://… or the URL. */
  readonly runTarget: string;
}

export function sourceOf(entry: RegistryEntry): ResolvedSource {
  for (const kind of sourceKinds) {
    const ref = entry.source[kind];
    if (ref === undefined) continue;
    const runTarget = kind === "image" || kind === "remote" ? ref : `${kind}://${ref}`;
    return { kind, ref, runTarget };
  }
  // The schema guarantees one source; an entry built by hand without one is a programming error.
  throw new Error(`registry entry ${entry.name} has no source`);
}
