/**
 * A server name a client's file holds more than once. Continue's `mcpServers` is a list whose
 * items carry their names, so a user can paste a server twice, or add their own under the name
 * of mcpmgr's entry (a JSON object can hold a key twice too, the last one read); mcpmgr itself
 * never adds a name the file has. Which entry is mcpmgr's is
 * told by its values (the keys it wrote, as recorded): exactly one such entry is kept in step
 * and removed, the user's are left alone with a warning; two or more that look alike cannot be
 * told apart, and all of them are left alone, the record kept for when the user has chosen.
 */
import { SkipEdit } from "./config-file.ts";
import { type FormatEditor, sameValue } from "./formats/editor.ts";
import type { ServerCollection } from "./types.ts";

/** Ours while every key mcpmgr wrote still holds the value it wrote (keys the client added do not matter). */
export function isOurs(current: unknown, written: Readonly<Record<string, unknown>>): boolean {
  if (typeof current !== "object" || current === null || Array.isArray(current)) return false;
  return Object.entries(written).every(([key, value]) => sameValue((current as Record<string, unknown>)[key], value));
}

export interface Picked {
  /** The entry to work on, as plain data (the last of the name when none is mcpmgr's, as before). */
  readonly current: unknown;
  /** Which of the entries of that name it is, when the file has more than one. */
  readonly which?: number;
}

/**
 * The entry named `name` that mcpmgr wrote (`written`), among those the file holds; `current` is
 * the one the editor's `entries` gives. Throws SkipEdit when two or more are as mcpmgr wrote them.
 */
export function pickEntry(
  editor: FormatEditor,
  text: string,
  collection: ServerCollection,
  name: string,
  written: Readonly<Record<string, unknown>> | undefined,
  current: unknown,
  warn: (message: string) => void,
): Picked {
  const all = editor.sameNamed?.(text, collection, name) ?? [];
  if (all.length < 2 || written === undefined) return { current };
  const ours = all.flatMap((value, at) => (isOurs(value, written) ? [at] : []));
  if (ours.length > 1) {
    throw new SkipEdit(
      `it has ${all.length} servers named ${name}, ${ours.length} of them as mcpmgr wrote its own; mcpmgr leaves them all alone (remove the copies you do not want)`,
    );
  }
  const [which] = ours;
  if (which === undefined) return { current };
  const others = all.length - 1;
  warn(
    `it has ${all.length} servers named ${name}: mcpmgr keeps its own in step and leaves ${others === 1 ? "the other" : `the ${others} others`} alone (rename yours; the client may show both or only one)`,
  );
  return { current: all[which], which };
}
