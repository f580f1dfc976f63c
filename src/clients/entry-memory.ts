/**
 * What mcpmgr remembers of its entries beyond the keys it writes (client-registrations.json):
 *
 * - the keys the user or the client added to an entry of a recorded workload, kept while it is
 *   stopped and put back when the same workload (same createdAt) starts again (review 9 F5): a
 *   workload removed and run again under its name is another server, whose tools nobody approved;
 * - how an empty collection was written when mcpmgr's first entry went in (`{\n  }`), or that it
 *   was not there at all (mcpmgr created it), for when its last entry goes (review 9 F10, walk 4).
 */
import type { KeptKeys, OwnedEntry, Registrations } from "../state/client-registrations.ts";
import { keptIn } from "../state/client-registrations.ts";
import type { WorkloadEndpoint } from "./types.ts";

/** The keys of an entry mcpmgr did not write, undefined when there are none. */
export function addedKeys(
  current: Readonly<Record<string, unknown>>,
  written: Readonly<Record<string, unknown>>,
): Record<string, unknown> | undefined {
  const added = Object.entries(current).filter(([key]) => !(key in written));
  return added.length > 0 ? Object.fromEntries(added) : undefined;
}

/** A recorded workload's entry went on a stop (it may start again): what was added to it is kept for then. */
export function keepAddedKeys(
  registrations: Registrations,
  client: string,
  file: string,
  name: string,
  entry: OwnedEntry,
  added: Readonly<Record<string, unknown>>,
): void {
  if (entry.pid !== undefined || entry.createdAt === undefined) return;
  keptIn(registrations, client, file)[name] = { group: entry.group, createdAt: entry.createdAt, keys: { ...added } };
}

export interface TakenKeys {
  /** The keys to put into the new entry (none of mcpmgr's own). */
  readonly restored: Readonly<Record<string, unknown>>;
  /** Puts them back for a later start, when the entry could not be written this time. */
  readonly giveBack: () => void;
}

/** The kept keys of the workload's entry, taken out of the record (once; another workload's are dropped). */
export function takeKeptKeys(
  registrations: Registrations,
  client: string,
  file: string,
  workload: WorkloadEndpoint,
  managed: readonly string[],
): TakenKeys {
  const kept = keptIn(registrations, client, file);
  const taken: KeptKeys | undefined = kept[workload.name];
  delete kept[workload.name];
  const same = taken !== undefined && taken.group === workload.group && taken.createdAt === workload.createdAt;
  return {
    restored: same ? Object.fromEntries(Object.entries(taken.keys).filter(([key]) => !managed.includes(key))) : {},
    giveBack: () => {
      if (same) keptIn(registrations, client, file)[workload.name] = taken;
    },
  };
}

/**
 * Drops the kept keys `matches` picks (the client no longer follows their group, the group is gone, the
 * workload was removed: a header kept there may hold a token, which must not outlive its entry's workload).
 */
export function forgetKept(
  registrations: Registrations,
  matches: (client: string, kept: KeptKeys, name: string) => boolean,
): void {
  for (const [id, files] of Object.entries(registrations.kept)) {
    for (const entries of Object.values(files)) {
      for (const [name, kept] of Object.entries(entries)) if (matches(id, kept, name)) delete entries[name];
    }
  }
}

/**
 * What the collection was before mcpmgr's first entry (its empty form, or that mcpmgr created it) goes
 * from a removed entry to another of mcpmgr's in the file, which may be the last.
 */
export function passOnEmptyCollection(entries: Record<string, OwnedEntry>, name: string, removed: OwnedEntry): void {
  if (removed.emptyForm === undefined && removed.collectionCreated === undefined && removed.emptyFile === undefined)
    return;
  const heir = Object.entries(entries).find(
    ([other, owned]) =>
      other !== name &&
      owned.emptyForm === undefined &&
      owned.collectionCreated === undefined &&
      owned.emptyFile === undefined,
  );
  if (heir === undefined) return;
  if (removed.emptyForm !== undefined) heir[1].emptyForm = removed.emptyForm;
  if (removed.collectionCreated !== undefined) heir[1].collectionCreated = removed.collectionCreated;
  if (removed.emptyFile !== undefined) heir[1].emptyFile = removed.emptyFile;
}

/**
 * The file as it goes back when mcpmgr's last entry leaves it: an empty file that mcpmgr's first entry
 * filled (a 0-byte file is an empty configuration to every client) is empty again, as it was, when
 * `without` is exactly what mcpmgr's entry alone leaves of it (`untouched`: the entry put into the empty
 * file and taken out again, the objects down to the empty server collection, `{}` or `mcpServers: []`).
 * Anything else in it was written since, by the user or the client (a comment, a setting), and stays:
 * `without` (its comments went with the file before, review clientred73).
 */
export function emptiedFile(
  without: string,
  emptyFile: string | undefined,
  untouched: (empty: string) => string,
): string {
  if (emptyFile === undefined) return without;
  return without === untouched(emptyFile) ? emptyFile : without;
}
