/**
 * Editing other programs' configuration files. Every format is parsed by a library made for
 * it and edited in place: the text outside the entry being changed stays byte for byte what
 * the user (or the client) wrote, comments and formatting included. Each operation takes the
 * whole text and returns the new text; the caller compares the two to skip needless writes.
 *
 * The editors are loaded on demand: the TOML one brings a WebAssembly module that only
 * Codex's file needs.
 */
import type { ConfigFormat, ServerCollection } from "../types.ts";

/** The file cannot be parsed, or its servers are not where (or what) the client expects. */
export class ConfigParseError extends Error {
  override readonly name = "ConfigParseError";
}

export type EntryMap = ReadonlyMap<string, unknown>;

/** What the collection was before mcpmgr's first entry went into it, for when its last one goes. */
export interface EmptyCollection {
  /** How it was written empty (the editor's `emptyForm`). */
  readonly form?: string | undefined;
  /** It was not there at all: mcpmgr's first entry created it. */
  readonly created?: boolean | undefined;
}

export interface FormatEditor {
  /** The whole file as plain data (undefined when it holds nothing yet). Throws ConfigParseError. */
  parse(text: string): unknown;
  /**
   * The value at `path` as plain data (undefined when missing), the file checked as `parse`
   * checks it; cheaper than `parse` where the format allows (JSON builds no tree of the rest).
   */
  valueAt(text: string, path: readonly string[]): unknown;
  /** The server entries in the collection, by name; empty when the collection does not exist yet. */
  entries(text: string, collection: ServerCollection): EntryMap;
  /** Adds an entry that does not exist yet, creating the collection if needed. */
  insertEntry(
    text: string,
    collection: ServerCollection,
    name: string,
    value: Readonly<Record<string, unknown>>,
  ): string;
  /**
   * Every entry named `name`, in the file's order, where the format lets a file hold a name more
   * than once (a YAML list such as Continue's: each item carries its name). `which`, below, picks
   * one of them (0: the first, the default).
   */
  sameNamed?(text: string, collection: ServerCollection, name: string): readonly unknown[];
  /** Sets one key of an existing entry (added if missing), leaving its other keys as they are. */
  setEntryKey(
    text: string,
    collection: ServerCollection,
    name: string,
    key: string,
    value: unknown,
    which?: number,
  ): string;
  removeEntryKey(text: string, collection: ServerCollection, name: string, key: string, which?: number): string;
  /**
   * Removes an entry. When it was the last one, the collection goes too if mcpmgr created it
   * (`empty.created`, and nothing of the user's is left in it), else it is left empty in the
   * form recorded before mcpmgr's first entry went in (`empty.form`, see `emptyForm`), else compact.
   */
  removeEntry(
    text: string,
    collection: ServerCollection,
    name: string,
    empty?: EmptyCollection,
    which?: number,
  ): string;
  /**
   * How an existing, empty collection is written, when that is not the compact form the editor
   * leaves by itself (JSON: `{\n  }` or its comments rather than `{}`; YAML: `mcpServers:` rather than `mcpServers: []`).
   */
  emptyForm?(text: string, collection: ServerCollection): string | undefined;
}

export async function loadEditor(format: ConfigFormat): Promise<FormatEditor> {
  switch (format) {
    case "json":
      return (await import("./json-editor.ts")).jsonEditor(false);
    case "jsonc":
      return (await import("./json-editor.ts")).jsonEditor(true);
    case "yaml":
      return (await import("./yaml-editor.ts")).yamlEditor();
    case "toml":
      return (await import("./toml-editor.ts")).loadTomlEditor();
  }
}

/** "line 3, column 7" for an offset, 1-based like editors show it. */
export function lineColumn(text: string, offset: number): string {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text[i] === "\n") {
      line++;
      lineStart = i + 1;
    }
  }
  return `line ${line}, column ${offset - lineStart + 1}`;
}

export function describePath(path: readonly string[]): string {
  return path.length === 0 ? "the top level" : `"${path.join(".")}"`;
}

/** Values as plain data compare equal when their JSON does, with object keys in any order. */
export function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
    );
  }
  return value;
}
