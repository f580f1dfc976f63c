/**
 * TOML (Codex's config.toml) through toml_edit, the Rust crate Cargo edits Cargo.toml with,
 * compiled to WebAssembly (@rainbowatcher/toml-edit-js). It edits by key path and keeps
 * comments, ordering and formatting of everything else; smol-toml and @iarna/toml only
 * re-emit the whole file, dropping comments. The module is instantiated from the .wasm file
 * embedded in the executable, on first use: nothing else in mcpmgr pays for it.
 */
import { readFileSync } from "node:fs";
import { edit, initSync, parse } from "@rainbowatcher/toml-edit-js";
import wasmPath from "@rainbowatcher/toml-edit-js/index_bg.wasm" with { type: "file" };
import type { ServerCollection } from "../types.ts";
import { ConfigParseError, describePath, type EntryMap, type FormatEditor } from "./editor.ts";
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
 * toml_edit writes every line ending as "\n": a file with Windows line endings would come back
 * with all of its lines changed. Its own ending is put back.
 */
function editKeepingEol(text: string, path: string, value: unknown, options?: { inline: boolean }): string {
  const edited = edit(text, path, value, options);
  return text.includes("\r\n") ? edited.replace(/\r?\n/g, "\r\n") : edited;
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
    return editKeepingEol(text, keyPath(collection, name), value, { inline: false });
  },
  setEntryKey: (text, collection, name, key, value) => editKeepingEol(text, keyPath(collection, name, key), value),
  removeEntryKey: (text, collection, name, key) => editKeepingEol(text, keyPath(collection, name, key), undefined),
  removeEntry: (text, collection, name) => editKeepingEol(text, keyPath(collection, name), undefined),
};
