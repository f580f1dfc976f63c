/**
 * One entry in one client's file: written (added, or brought up to date) and removed, leaving
 * alone what mcpmgr did not write or what was changed by hand since. ClientConfigSync (sync.ts)
 * decides which entries go where, under the registrations lock; this module edits the files.
 */
import { existsSync } from "node:fs";
import { type OwnedEntry, ownedIn, type Registrations } from "../state/client-registrations.ts";
import { warnAboutBrokenFile } from "./broken-file-notice.ts";
import { ConfigParseError, loadEditor, sameValue } from "./formats/editor.ts";
import { editClientFile, type EditResult, SkipEdit } from "./config-file.ts";
import { addedKeys, emptiedFile, takeKeptKeys } from "./entry-memory.ts";
import { transportMismatch } from "./installed.ts";
import { isOurs, pickEntry } from "./same-name.ts";
import { readSettled, UnreadableText } from "./settled-read.ts";
import type { ClientContext, ClientDefinition, ClientId, WorkloadEndpoint } from "./types.ts";

export type SyncAction = "added" | "updated" | "unchanged" | "removed" | "skipped";

export interface SyncReport {
  readonly client: ClientId;
  readonly workload: string;
  readonly file: string;
  readonly action: SyncAction;
  /** Why it was skipped (also logged as a warning). */
  readonly reason?: string;
  /** An entry of another group the client follows, brought up to date by `client register`. */
  readonly otherGroup?: boolean;
}

export async function upsertEntry(
  ctx: ClientContext,
  registrations: Registrations,
  save: () => Promise<void>,
  client: ClientDefinition,
  workload: WorkloadEndpoint,
): Promise<SyncReport> {
  const file = client.configPath(ctx);
  const name = workload.name;
  const mismatch = transportMismatch(client, workload);
  if (mismatch !== undefined) return skipped(ctx, client, name, file, mismatch);
  const shape = client.entry(workload, ctx);
  const written = Object.fromEntries(shape.managed.map((key) => [key, shape.value[key]]));
  const owned = ownedIn(registrations, client.id, file);
  const record = owned[name];
  const recorded = {
    group: workload.group,
    written,
    ...(workload.pid !== undefined ? { pid: workload.pid } : {}),
    ...(workload.createdAt !== undefined ? { createdAt: workload.createdAt } : {}),
  };
  // Keys the user added before the workload last stopped come back with its entry (entry-memory.ts).
  const kept = takeKeptKeys(registrations, client.id, file, workload, shape.managed);
  // Recorded before the file is written: a crash between the two leaves a record of an entry
  // that may not be there (harmless), never an entry of ours that mcpmgr would disown.
  if (record === undefined) {
    owned[name] = recorded;
    await save();
  }
  let action: SyncAction = "unchanged";
  let disowned = false;
  const warn = (message: string) => ctx.log.warn(`${client.displayName} (${file}): ${message}`);
  let emptyForm = record?.emptyForm;
  let created = record?.collectionCreated;
  let emptyFile = record?.emptyFile;
  const result = await editClientFile(ctx, client, file, { create: true }, (text, editor) => {
    const collection = client.collection((path) => editor.valueAt(text, path));
    const entries = editor.entries(text, collection);
    const { current, which } = pickEntry(editor, text, collection, name, record?.written, entries.get(name), warn);
    if (current === undefined) {
      action = "added";
      // The first entry of an empty collection: how it was written (or that it was not there), for when the last one goes.
      emptyForm = entries.size === 0 ? editor.emptyForm?.(text, collection) : undefined;
      created = entries.size === 0 && editor.valueAt(text, collection.path) === undefined ? true : undefined;
      // An empty file the user has (not one mcpmgr creates): empty again when the last entry goes.
      emptyFile = text.trim() === "" && existsSync(file) ? text : undefined;
      return editor.insertEntry(text, collection, name, { ...shape.value, ...kept.restored });
    }
    if (record === undefined) {
      throw new SkipEdit(
        `it already has a server named ${name} that mcpmgr did not write; mcpmgr leaves it alone (rename one of them)`,
      );
    }
    if (!isOurs(current, record.written)) {
      disowned = true;
      throw new SkipEdit(
        `the entry ${name} was changed by hand since mcpmgr wrote it; mcpmgr leaves it alone from now on`,
      );
    }
    const entry = current as Record<string, unknown>;
    let next = text;
    for (const key of shape.managed) {
      if (!sameValue(entry[key], shape.value[key]))
        next = editor.setEntryKey(next, collection, name, key, shape.value[key], which);
    }
    // Keys mcpmgr wrote before that this entry shape no longer has (Gemini CLI's url ↔ httpUrl).
    for (const key of Object.keys(record.written)) {
      if (!shape.managed.includes(key) && key in entry)
        next = editor.removeEntryKey(next, collection, name, key, which);
    }
    action = next === text ? "unchanged" : "updated";
    return next;
  });
  if (disowned || (record === undefined && result.skipped !== undefined)) delete owned[name];
  // Not written this time (the file is busy, read-only, broken): the kept keys wait for the next start.
  if (result.skipped !== undefined && !disowned) kept.giveBack();
  if (result.skipped !== undefined) return await skippedEdit(ctx, client, name, file, result);
  owned[name] = {
    ...recorded,
    ...(emptyForm !== undefined ? { emptyForm } : {}),
    ...(created === true ? { collectionCreated: true } : {}),
    ...(emptyFile !== undefined ? { emptyFile } : {}),
  };
  return { client: client.id, workload: name, file, action };
}

export async function removeEntry(
  ctx: ClientContext,
  client: ClientDefinition,
  file: string,
  name: string,
  entry: OwnedEntry,
): Promise<{ report: SyncReport; keep: boolean; added?: Record<string, unknown> }> {
  let action: SyncAction = "unchanged";
  let disowned = false;
  let added: Record<string, unknown> | undefined;
  const warn = (message: string) => ctx.log.warn(`${client.displayName} (${file}): ${message}`);
  const result = await editClientFile(ctx, client, file, { create: false }, (text, editor) => {
    const collection = client.collection((path) => editor.valueAt(text, path));
    const listed = editor.entries(text, collection).get(name);
    const { current, which } = pickEntry(editor, text, collection, name, entry.written, listed, warn);
    if (current === undefined) return text;
    if (!isOurs(current, entry.written)) {
      disowned = true;
      throw new SkipEdit(`the entry ${name} was changed by hand since mcpmgr wrote it; mcpmgr leaves it there`);
    }
    action = "removed";
    added = addedKeys(current as Record<string, unknown>, entry.written);
    const empty = { form: entry.emptyForm, created: entry.collectionCreated };
    const without = editor.removeEntry(text, collection, name, empty, which);
    return emptiedFile(without, entry.emptyFile, (emptyText) => {
      const fresh = client.collection((path) => editor.valueAt(emptyText, path));
      const filled = editor.insertEntry(emptyText, fresh, name, current as Record<string, unknown>);
      return editor.removeEntry(filled, fresh, name, empty);
    });
  });
  if (result.skipped !== undefined) {
    return { report: await skippedEdit(ctx, client, name, file, result), keep: !disowned };
  }
  const report: SyncReport = { client: client.id, workload: name, file, action };
  return added !== undefined ? { report, keep: false, added } : { report, keep: false };
}

/** A change not made: a one-line warning, and the report says why. */
export function skipped(
  ctx: ClientContext,
  client: ClientDefinition,
  workload: string,
  file: string,
  reason: string,
): SyncReport {
  ctx.log.warn(`${client.displayName} (${file}): ${reason}`);
  return { client: client.id, workload, file, action: "skipped", reason };
}

/** An edit not made: warned about as skipped() is, a broken file's only once per state of the file. */
async function skippedEdit(
  ctx: ClientContext,
  client: ClientDefinition,
  workload: string,
  file: string,
  result: Extract<EditResult, { skipped: string }>,
): Promise<SyncReport> {
  if (result.broken !== true || (await warnAboutBrokenFile(ctx, file, result.skipped)))
    ctx.log.warn(`${client.displayName} (${file}): ${result.skipped}`);
  return { client: client.id, workload, file, action: "skipped", reason: result.skipped };
}

/**
 * Why `file` cannot be read as its client's format, for `client status`, which shows it every time; undefined
 * for a file that reads (or is missing, or cannot be looked at now: a client writing it is not waited for).
 */
export async function brokenFileProblem(client: ClientDefinition, file: string): Promise<string | undefined> {
  try {
    await entriesNow(client, file);
    return undefined;
  } catch (err) {
    if (err instanceof ConfigParseError) return `${err.message}; mcpmgr leaves it unchanged until it is fixed`;
    if (err instanceof UnreadableText) return err.message;
    if (err instanceof RangeError) return `it cannot be read (${err.message}); mcpmgr leaves it unchanged`;
    return undefined;
  }
}

/**
 * Whether `file` lists an entry called `name` now, read without a change: `stop` and `rm` ask it before
 * and after the supervisor stops, to name the clients that lost one. What mcpmgr's registrations say is
 * not enough: they forget an entry changed by hand (left in the file) or already gone as well as one
 * taken out. Undefined when the file cannot be read or parsed (nothing is said of it then).
 */
export async function listsEntry(client: ClientDefinition, file: string, name: string): Promise<boolean | undefined> {
  try {
    return (await entriesNow(client, file))?.has(name) ?? false;
  } catch {
    return undefined;
  }
}

/**
 * The entries `file` holds now, read without a change (undefined: no file); throws when it cannot be read
 * as its client's format. A client writing its file is waited for a moment only: this is for a message.
 */
async function entriesNow(client: ClientDefinition, file: string): Promise<ReadonlyMap<string, unknown> | undefined> {
  const read = await readSettled(file, { deadline: Date.now() + 1_000 });
  if (read === undefined) return undefined;
  const editor = await loadEditor(client.format);
  const text = read.text.replace(/^\uFEFF/, "");
  const collection = client.collection((path) => editor.valueAt(text, path));
  return editor.entries(text, collection);
}
