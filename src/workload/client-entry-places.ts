/**
 * Which AI-client files hold a recorded workload's entry, read from the files themselves (read-only):
 * `stop` and `rm` read this before the supervisor stops and again after, to say what it took out
 * (the supervisor says so only in its own log). Split from client-entries.ts, which edits the files.
 */
import { type ClientEntriesContext, readRegistrations } from "./client-entries.ts";

/** A client file mcpmgr wrote a recorded workload's entry into, as `stop` and `rm` name it. */
export interface EntryPlace {
  readonly client: string;
  readonly file: string;
}

/**
 * Where a recorded workload's entries are now: the files mcpmgr's registrations name for it that list
 * it. `stop` and `rm` read this before the supervisor stops, and `entriesGone` after, to say what it
 * took out (it says so only in its own log).
 */
export async function entryPlaces(name: string, ctx: ClientEntriesContext): Promise<EntryPlace[]> {
  const registrations = await readRegistrations(ctx);
  if (registrations === undefined) return [];
  const recorded = Object.entries(registrations.owned).flatMap(([client, files]) =>
    Object.entries(files)
      .filter(([, entries]) => entries[name] !== undefined && entries[name].pid === undefined)
      .map(([file]) => ({ client, file })),
  );
  if (recorded.length === 0) return [];
  const listed = await Promise.all(recorded.map((place) => listedIn(place, name)));
  return recorded.filter((_, i) => listed[i] === true);
}

/**
 * Of the places the entry was in, those whose file no longer lists it, as "client (file)". A file that
 * still lists it (an entry changed by hand, which mcpmgr leaves) or cannot be read is not named.
 */
export async function entriesGone(name: string, places: readonly EntryPlace[]): Promise<string[]> {
  const listed = await Promise.all(places.map((place) => listedIn(place, name)));
  return places.filter((_, i) => listed[i] === false).map(({ client, file }) => `${client} (${file})`);
}

async function listedIn(place: EntryPlace, name: string): Promise<boolean | undefined> {
  const { clientById, isClientId } = await import("../clients/catalog.ts");
  if (!isClientId(place.client)) return undefined;
  const { listsEntry } = await import("../clients/entry-edits.ts");
  return listsEntry(clientById(place.client), place.file, name);
}
