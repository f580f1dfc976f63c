/**
 * TOML (Codex's config.toml) through toml_edit, the Rust crate Cargo edits Cargo.toml with,
 * compiled to WebAssembly (@rainbowatcher/toml-edit-js). It edits by key path and keeps
 * comments, ordering and formatting of everything else; smol-toml and @iarna/toml only
 * re-emit the whole file, dropping comments. The module is instantiated from the .wasm file
 * embedded in the executable, on first use: nothing else in mcpmgr pays for it. Where a server's
 * whole table goes, and what goes with it, is settled by toml-tables.ts from toml_edit's own edit.
 */
import { readFileSync } from "node:fs";
import { edit, initSync, parse } from "@rainbowatcher/toml-edit-js";
import wasmPath from "@rainbowatcher/toml-edit-js/index_bg.wasm" with { type: "file" };
import type { ServerCollection } from "../types.ts";
import { ConfigParseError, describePath, type EntryMap, type FormatEditor, sameValue } from "./editor.ts";
import { placeTable, unplaceTable } from "./toml-tables.ts";
import { errorMessage } from "../../errors.ts";

let ready = false;

export function loadTomlEditor(): FormatEditor {
  if (!ready) {
    initSync({ module: readFileSync(wasmPath) });
    ready = true;
  }
  return tomlEditor;
}

function parseToml(text: string): Record<string, unknown> {
  try {
    return parse(text) as Record<string, unknown>;
  } catch (err) {
    // toml_edit's report spans lines (a caret under the spot): its first and last lines say it all.
    const lines = errorMessage(err)
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line !== "" && !line.startsWith("|") && !/^\d+ \|/.test(line));
    const where = (lines[0] ?? "").replace(/^(Parse Error: )?TOML parse error at /, "");
    const what = lines.length > 1 ? lines.at(-1) : undefined;
    throw new ConfigParseError(`it is not valid TOML (${where}${what ? `: ${what}` : ""})`);
  }
}

function collectionOf(
  root: Record<string, unknown>,
  collection: ServerCollection,
): Record<string, unknown> | undefined {
  if (collection.kind !== "map") throw new Error("TOML clients keep servers in a table");
  let node: unknown = root;
  for (let depth = 0; depth < collection.path.length; depth++) {
    node = (node as Record<string, unknown>)[collection.path[depth] as string];
    if (node === undefined) return undefined;
    if (typeof node !== "object" || node === null || Array.isArray(node)) {
      throw new ConfigParseError(`${describePath(collection.path.slice(0, depth + 1))} is not a table`);
    }
  }
  return node as Record<string, unknown>;
}

/** Workload names are [a-z0-9-], bare keys in TOML: a dotted path needs no quoting. */
function keyPath(collection: ServerCollection, ...rest: string[]): string {
  return [...collection.path, ...rest].join(".");
}

/**
 * toml_edit writes line endings as "\n" (outside multi-line strings): a file with Windows line
 * endings, or a mix of both, would come back with lines changed that the edit never touched. So
 * only the part toml_edit changed is taken from its output, in the file's usual line ending; the
 * text before and after it stays the file's own, byte for byte.
 */
function editKeepingEol(text: string, path: string, value: unknown): string {
  return keepEol(text, tomlEdit(text, path, value, finalNewline(text)));
}

/** toml_edit's edit; what it cannot do (a path through an inline table) is a file mcpmgr cannot edit, not a crash. */
function tomlEdit(
  text: string,
  path: string,
  value: unknown,
  options: { inline?: boolean; finalNewline: boolean },
): string {
  try {
    return edit(text, path, value, options);
  } catch (err) {
    throw new ConfigParseError(`mcpmgr cannot edit "${path}" there (${errorMessage(err)})`);
  }
}

/**
 * One key of an entry set (or removed, `value` undefined). toml_edit cannot reach a key inside an
 * inline table (`mcp_servers = { fetch = { url = "…" } }`): the entry is then set whole, with its
 * other keys as they are.
 */
function setKey(text: string, collection: ServerCollection, name: string, key: string, value: unknown): string {
  const entry = collectionOf(parseToml(text), collection)?.[name];
  const inline = /is not a table/;
  try {
    return keepEol(text, edit(text, keyPath(collection, name, key), value, finalNewline(text)));
  } catch (err) {
    if (!inline.test(errorMessage(err)) || typeof entry !== "object" || entry === null) {
      throw new ConfigParseError(`mcpmgr cannot edit "${keyPath(collection, name, key)}" there (${errorMessage(err)})`);
    }
  }
  const whole: Record<string, unknown> = { ...(entry as Record<string, unknown>), [key]: value };
  if (value === undefined) delete whole[key];
  return editKeepingEol(text, keyPath(collection, name), whole);
}

/** toml_edit ends its output with a line break unless told not to: a file without one keeps none. */
function finalNewline(text: string): { finalNewline: boolean } {
  return { finalNewline: text === "" || text.endsWith("\n") };
}

/** The part of toml_edit's `edited` text that differs from `text`, in the file's usual line ending. */
function keepEol(text: string, edited: string): string {
  if (!text.includes("\r")) return edited;
  const [textStart, editedStart] = sameFromStart(text, edited);
  const [textEnd, editedEnd] = sameFromEnd(text, edited, textStart, editedStart);
  const eol = usualEol(text);
  const changed = edited.slice(editedStart, editedEnd).replace(/\r?\n/g, eol);
  return text.slice(0, textStart) + changed + text.slice(textEnd);
}

/**
 * `placed` (toml-tables.ts: the table moved below the user's comments, or removed without them)
 * when it holds the same data as toml_edit's own edit; undefined otherwise.
 */
function sameDocument(placed: string | undefined, edited: string): string | undefined {
  return placed !== undefined && sameValue(parse(placed), parse(edited)) ? placed : undefined;
}

/**
 * `text` without the entry's sub-tables (`[mcp_servers.fetch.env]`), each taken out on its own as
 * unplaceTable takes a table, its comments kept. A sub-table the user wrote apart from the entry's
 * table (further down the file) made toml_edit's removal two runs of lines, which unplaceTable does
 * not take: its own edit was used, and the comment lines above the entry's header went with it.
 * One that cannot be taken out so (inline, an array of tables) stays for the entry's removal.
 */
function withoutSubTables(text: string, collection: ServerCollection, name: string): string {
  const entry = collectionOf(parseToml(text), collection)?.[name];
  if (typeof entry !== "object" || entry === null) return text;
  let current = text;
  for (const [key, value] of Object.entries(entry)) {
    // A key that needs quoting is no dotted path for toml_edit: left for the entry's removal.
    if (typeof value !== "object" || value === null || Array.isArray(value) || !/^[A-Za-z0-9_-]+$/.test(key)) continue;
    const path = keyPath(collection, name, key);
    const edited = tomlEdit(current, path, undefined, finalNewline(current));
    current = sameDocument(unplaceTable(current, edited, `[${path}]`), edited) ?? current;
  }
  return current;
}

/** Where `text` and `edited` part, reading forwards: a "\r\n" of the text counts as the "\n" toml_edit wrote for it. */
function sameFromStart(text: string, edited: string): [number, number] {
  let i = 0;
  let j = 0;
  while (i < text.length && j < edited.length) {
    if (text[i] === edited[j]) {
      i++;
      j++;
    } else if (text[i] === "\r" && text[i + 1] === "\n" && edited[j] === "\n") {
      i += 2;
      j++;
    } else break;
  }
  return [i, j];
}

/** Where they part reading backwards, not before the offsets `sameFromStart` found. */
function sameFromEnd(text: string, edited: string, textStart: number, editedStart: number): [number, number] {
  let i = text.length;
  let j = edited.length;
  while (i > textStart && j > editedStart) {
    if (text[i - 1] === "\n" && text[i - 2] === "\r" && edited[j - 1] === "\n" && edited[j - 2] !== "\r") {
      if (i - 2 < textStart) break;
      i -= 2;
      j--;
    } else if (text[i - 1] === edited[j - 1]) {
      i--;
      j--;
    } else break;
  }
  return [i, j];
}

/** The line ending most of the file's lines end with. */
function usualEol(text: string): string {
  const crlf = text.split("\r\n").length - 1;
  const lf = text.split("\n").length - 1 - crlf;
  return crlf > lf ? "\r\n" : "\n";
}

const tomlEditor: FormatEditor = {
  parse: (text) => parseToml(text),
  valueAt: (text, path) => {
    let node: unknown = parseToml(text);
    for (const step of path) {
      if (typeof node !== "object" || node === null || Array.isArray(node)) return undefined;
      node = (node as Record<string, unknown>)[step];
    }
    return node;
  },
  entries: (text, collection): EntryMap => new Map(Object.entries(collectionOf(parseToml(text), collection) ?? {})),
  insertEntry: (text, collection, name, value) => {
    collectionOf(parseToml(text), collection);
    const path = keyPath(collection, name);
    const edited = tomlEdit(text, path, value, { inline: false, ...finalNewline(text) });
    return sameDocument(placeTable(text, edited, `[${path}]`, usualEol(text)), edited) ?? keepEol(text, edited);
  },
  setEntryKey: (text, collection, name, key, value) => setKey(text, collection, name, key, value),
  removeEntryKey: (text, collection, name, key) => setKey(text, collection, name, key, undefined),
  removeEntry: (text, collection, name) => {
    const path = keyPath(collection, name);
    const edited = tomlEdit(text, path, undefined, finalNewline(text));
    const apart = withoutSubTables(text, collection, name);
    const placed = unplaceTable(apart, tomlEdit(apart, path, undefined, finalNewline(apart)), `[${path}]`);
    return sameDocument(placed, edited) ?? keepEol(text, edited);
  },
};
