/**
 * Which AI clients follow which groups, and which server entries in their configuration
 * files mcpmgr wrote. Layout under stateDir:
 *
 *   client-registrations.json
 *     clients: { "<client>": { "groups": ["default", "team"], "viaGateway": ["team"] } }
 *     owned:   { "<client>": { "<config file>": { "<server name>": { "group": "...", "written": {...}, "pid": 123 } } } }
 *     kept:    { "<client>": { "<config file>": { "<server name>": { "group": "...", "createdAt": "...", "keys": {...} } } } }
 *   .client-registrations.lock
 *
 * `viaGateway` lists the followed groups the client reaches through the group's background
 * gateway (one entry, named after the gateway) instead of one entry per workload.
 * `written` holds the keys mcpmgr set in that entry and their values, exactly as written.
 * It is the proof of ownership: an entry is mcpmgr's only while it is recorded here and
 * still carries those values. `pid` is there for a foreground run (`run --foreground`), which
 * has no workload record: the entry is live while that process is; `createdAt` names the recorded
 * workload the entry was written for. `kept` holds, while a recorded workload is stopped, the keys
 * the user or the client added to its entry (Cline's `autoApprove`, Goose's `enabled: false`): they
 * come back with the entry when that same workload (same `createdAt`) starts again. Anything else in a client's file belongs to the user and is
 * never changed. The lock is held for the whole of a change, including the edits of the
 * client files it leads to, so two mcpmgr processes never lose each other's entries.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { namedRecord } from "../config/named-record.ts";
import { readJsonFile, writeJsonFile } from "./atomic-file.ts";
import { withLock } from "./lock.ts";
import type { McpmgrPaths } from "./paths.ts";

const nonEmpty = v.pipe(v.string(), v.nonEmpty("must not be empty"));

const ownedEntrySchema = v.object({
  group: nonEmpty,
  written: namedRecord(v.string(), v.unknown()),
  pid: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  createdAt: v.optional(nonEmpty),
  /** How the collection was written when this entry went into it empty (`{\n  }`), to leave it so. */
  emptyForm: v.optional(v.string()),
  /** The collection was not there before this entry went in: mcpmgr created it, and takes it out with its last entry. */
  collectionCreated: v.optional(v.literal(true)),
  /** The file held nothing but this (whitespace, most often nothing) before this entry went in: it holds it again once the last entry goes. */
  emptyFile: v.optional(v.pipe(v.string(), v.regex(/^\s*$/, "must be whitespace"))),
});

const keptKeysSchema = v.object({
  group: nonEmpty,
  createdAt: nonEmpty,
  keys: namedRecord(v.string(), v.unknown()),
});

const registrationsSchema = v.object({
  schema_version: v.optional(v.literal(1, "must be 1 (this file was written by a different version of mcpmgr)"), 1),
  clients: v.optional(
    v.record(nonEmpty, v.object({ groups: v.array(nonEmpty), viaGateway: v.optional(v.array(nonEmpty)) })),
    {},
  ),
  owned: v.optional(v.record(nonEmpty, v.record(nonEmpty, namedRecord(nonEmpty, ownedEntrySchema))), {}),
  kept: v.optional(v.record(nonEmpty, v.record(nonEmpty, namedRecord(nonEmpty, keptKeysSchema))), {}),
});

export type OwnedEntry = v.InferOutput<typeof ownedEntrySchema>;
export type KeptKeys = v.InferOutput<typeof keptKeysSchema>;
export type Registrations = v.InferOutput<typeof registrationsSchema>;

function registrationsFile(paths: McpmgrPaths): string {
  return join(paths.stateDir, "client-registrations.json");
}

/**
 * Whether any AI client was ever registered. Without the file there is nothing to keep in
 * step, so `list` need not load the clients code at all (start-up: ARCHITECTURE.md §9).
 */
export function hasClientRegistrations(paths: McpmgrPaths): boolean {
  return existsSync(registrationsFile(paths));
}

export class ClientRegistrationStore {
  readonly #file: string;
  readonly #lockPath: string;

  constructor(paths: McpmgrPaths) {
    this.#file = registrationsFile(paths);
    this.#lockPath = join(paths.stateDir, ".client-registrations.lock");
  }

  get path(): string {
    return this.#file;
  }

  /** A snapshot, for status and listing; changes go through `change`. */
  async read(): Promise<Registrations> {
    const file = await readJsonFile(this.#file, registrationsSchema, {
      hint: `fix ${this.#file} by hand, or delete it and register the clients again (mcpmgr client register)`,
    });
    return file ?? { schema_version: 1, clients: {}, owned: {}, kept: {} };
  }

  /**
   * Runs `fn` under the lock with a mutable copy of the registrations and writes them back
   * if `fn` changed them. `save` writes them in the middle of the change (an entry recorded
   * before it is written into a client's file, so a crash in between cannot leave an entry
   * mcpmgr wrote but has no record of). Long lock timeout: a holder may be editing several
   * client files.
   */
  async change<T>(fn: (registrations: Registrations, save: () => Promise<void>) => Promise<T>): Promise<T> {
    return withLock(
      this.#lockPath,
      async () => {
        const current = await this.read();
        let onDisk = JSON.stringify(current);
        const save = async () => {
          const now = JSON.stringify(current);
          if (now === onDisk) return;
          await writeJsonFile(this.#file, current);
          onDisk = now;
        };
        const result = await fn(current, save);
        await save();
        return result;
      },
      { timeoutMs: 30_000 },
    );
  }
}

/** The groups a client follows (empty when it is not registered). */
export function groupsOf(registrations: Registrations, client: string): readonly string[] {
  return registrations.clients[client]?.groups ?? [];
}

/** Whether the client reaches `group` through the group's background gateway rather than per workload. */
export function viaGateway(registrations: Registrations, client: string, group: string): boolean {
  return registrations.clients[client]?.viaGateway?.includes(group) ?? false;
}

/**
 * The clients that follow `group` per workload (registered without `--gateway`), by name; none when
 * no client was ever registered (the file is then not read at all).
 */
export async function clientsFollowingDirectly(paths: McpmgrPaths, group: string): Promise<string[]> {
  if (!hasClientRegistrations(paths)) return [];
  const registrations = await new ClientRegistrationStore(paths).read();
  return Object.keys(registrations.clients)
    .filter((client) => groupsOf(registrations, client).includes(group) && !viaGateway(registrations, client, group))
    .sort();
}

/** The owned entries of a client in one file, created on demand. */
export function ownedIn(registrations: Registrations, client: string, file: string): Record<string, OwnedEntry> {
  registrations.owned[client] ??= {};
  const files = registrations.owned[client];
  files[file] ??= Object.create(null) as Record<string, OwnedEntry>;
  return files[file];
}

/** The kept keys of a client in one file, created on demand. */
export function keptIn(registrations: Registrations, client: string, file: string): Record<string, KeptKeys> {
  registrations.kept[client] ??= {};
  const files = registrations.kept[client];
  files[file] ??= Object.create(null) as Record<string, KeptKeys>;
  return files[file];
}

/** Drops empty records so the file does not collect clutter. */
export function pruneOwned(registrations: Registrations): void {
  for (const [client, files] of Object.entries(registrations.kept)) {
    for (const [file, entries] of Object.entries(files)) if (Object.keys(entries).length === 0) delete files[file];
    if (Object.keys(files).length === 0) delete registrations.kept[client];
  }
  for (const [client, files] of Object.entries(registrations.owned)) {
    for (const [file, entries] of Object.entries(files)) if (Object.keys(entries).length === 0) delete files[file];
    if (Object.keys(files).length === 0) delete registrations.owned[client];
  }
  for (const [client, record] of Object.entries(registrations.clients)) {
    if (record.viaGateway !== undefined) {
      record.viaGateway = record.viaGateway.filter((group) => record.groups.includes(group));
      if (record.viaGateway.length === 0) delete record.viaGateway;
    }
    if (record.groups.length === 0) delete registrations.clients[client];
  }
}
