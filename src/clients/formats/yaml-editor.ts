/**
 * YAML (Goose's config.yaml, Continue's config.yaml). The `yaml` library parses the file and
 * reports every node's source range; edits are spliced in at those ranges, so comments,
 * quoting, blank lines and indentation outside our entry stay exactly as written (the
 * library's own re-stringify would normalise them). Only block-style collections are edited;
 * an empty flow collection (`extensions: {}`) is turned into a block one, a non-empty flow
 * one is refused, since rewriting it would touch the user's entries.
 *
 * Servers live under a top-level key, as in every YAML client mcpmgr knows.
 */
import {
  isMap,
  isScalar,
  isSeq,
  type Node,
  type Pair,
  parseDocument,
  stringify,
  type YAMLMap,
  type YAMLSeq,
} from "yaml";
import type { ServerCollection } from "../types.ts";
import { ConfigParseError, type EmptyCollection, type FormatEditor } from "./editor.ts";
import { detectStyle, indentBefore, lineStart, nextLineStart, splice, type TextStyle } from "./text.ts";

type Range = [number, number, number];
type Ranged = Node & { range: Range };

export function yamlEditor(): FormatEditor {
  const parse = parser();
  return {
    parse: (text) => parse(text).toJS(),
    valueAt: (text, path) => toJS(parse(text).getIn(path, true)),
    entries: (text, collection) => {
      const found = findCollection(parse(text), collection);
      const entries = new Map<string, unknown>();
      if (found.node === undefined) return entries;
      if (collection.kind === "map") {
        for (const pair of (found.node as YAMLMap).items) entries.set(String(scalarValue(pair.key)), toJS(pair.value));
      } else {
        for (const item of (found.node as YAMLSeq).items) {
          const value = toJS(item);
          const name = (value as Record<string, unknown> | null)?.[collection.nameKey];
          if (typeof name === "string") entries.set(name, value);
        }
      }
      return entries;
    },
    insertEntry: (text, collection, name, value) => insertEntry(parse, text, collection, name, value),
    setEntryKey: (text, collection, name, key, value) => setEntryKey(parse, text, collection, name, key, value),
    removeEntryKey: (text, collection, name, key) => {
      const entry = findEntry(parse, text, collection, name);
      const pair = entry?.map.items.find((candidate) => scalarValue(candidate.key) === key);
      if (entry === undefined || pair === undefined) return text;
      if (collection.kind === "list" && pair === entry.map.items[0]) {
        throw new ConfigParseError(`"${key}" shares its line with the list dash in entry "${name}"`);
      }
      return removeLines(text, pairStart(text, pair), pairEnd(text, pair));
    },
    removeEntry: (text, collection, name, empty) => removeEntry(parse, text, collection, name, empty),
    emptyForm: (text, collection) => emptyForm(parse, text, collection),
  };
}

type Doc = ReturnType<typeof parseOnce>;
type Parse = (text: string) => Doc;

/**
 * One edit asks about the same text several times (its entries, then an insert): parsed once
 * per editor, and an editor lives for one edit. The library keeps a node per value, with its
 * source range, so the document is the bulk of an edit's memory (~100 times the file's size).
 */
function parser(): Parse {
  let last: { readonly text: string; readonly doc: Doc } | undefined;
  return (text) => {
    if (last?.text !== text) {
      last = undefined;
      last = { text, doc: parseOnce(text) };
    }
    return last.doc;
  };
}

function parseOnce(text: string) {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: false });
  const [first] = doc.errors;
  // Valid YAML, but not one configuration: no client reads a second document (the library's own message names its API).
  if (first?.code === "MULTIPLE_DOCS") {
    const at = first.linePos?.[0];
    throw new ConfigParseError(
      `it holds more than one YAML document (a second one starts with --- at line ${at?.line ?? "?"}), where the client reads one`,
    );
  }
  if (first !== undefined) {
    const where = first.linePos?.[0];
    const at = where ? `line ${where.line}, column ${where.col}: ` : "";
    const message = (first.message.split("\n")[0] ?? "").replace(/ at line \d+, column \d+:?$/, "");
    throw new ConfigParseError(`it is not valid YAML (${at}${message})`);
  }
  if (doc.contents !== null && !isMap(doc.contents) && !(isScalar(doc.contents) && doc.contents.value === null)) {
    throw new ConfigParseError("its top level is not a mapping");
  }
  return doc;
}

function scalarValue(node: unknown): unknown {
  return isScalar(node) ? node.value : node;
}

function toJS(node: unknown): unknown {
  return node !== null && typeof node === "object" && "toJSON" in node
    ? (node as { toJSON(): unknown }).toJSON()
    : node;
}

interface Found {
  /** The top-level pair holding the collection, if the key is there at all. */
  readonly pair?: Pair<Node, Node | null>;
  /** The collection itself, when it exists and is not empty (a block map or sequence). */
  readonly node?: YAMLMap | YAMLSeq;
}

function topKey(collection: ServerCollection): string {
  const [key, ...rest] = collection.path;
  if (key === undefined || rest.length > 0) throw new Error("YAML clients keep their servers under a top-level key");
  return key;
}

function findCollection(doc: Doc, collection: ServerCollection): Found {
  const key = topKey(collection);
  if (!isMap(doc.contents)) return {};
  // `{"GOOSE_PROVIDER": "openai", "extensions": {}}` (JSON is YAML too): a block written into it,
  // or a key appended after its closing brace, would no longer parse. An empty `{}` (an empty
  // configuration as a YAML library writes it) has nothing of the user's to keep: insertEntry
  // replaces it.
  if (doc.contents.flow === true && doc.contents.items.length > 0) {
    throw new ConfigParseError("its top level is written in flow style ({...}); mcpmgr only edits block style");
  }
  const pair = (doc.contents.items as Pair<Node, Node | null>[]).find(
    (candidate) => scalarValue(candidate.key) === key,
  );
  if (pair === undefined) return {};
  const value = pair.value;
  if (value === null || (isScalar(value) && value.value === null)) return { pair };
  const wanted = collection.kind === "map" ? isMap(value) : isSeq(value);
  if (!wanted) {
    throw new ConfigParseError(`"${key}" is not a ${collection.kind === "map" ? "mapping" : "list"}`);
  }
  const flow = (value as YAMLMap | YAMLSeq).flow === true;
  if (flow && (value as YAMLMap | YAMLSeq).items.length > 0) {
    throw new ConfigParseError(`"${key}" is written in flow style ({...} or [...]); mcpmgr only edits block style`);
  }
  return flow ? { pair } : { pair, node: value as YAMLMap | YAMLSeq };
}

/**
 * Where new top-level lines go: the start of the `...` line that ends the document, when it has
 * one, else the end of the text. The library's range says where the document's content ends and
 * where the document does (past the marker): between the two lie only comments, blank lines and
 * the marker, the one line there that starts with `...`.
 */
function documentEnd(doc: Doc, text: string): number {
  const [, contentEnd, end] = doc.range;
  const marker = /(?:^|\n)\.\.\.(?=[ \t\r\n]|$)/.exec(text.slice(contentEnd, end));
  if (marker === null) return text.length;
  return contentEnd + marker.index + (marker[0].startsWith("\n") ? 1 : 0);
}

/** The column of a node's first character. */
function column(text: string, offset: number): number {
  return offset - lineStart(text, offset);
}

/** `rendered` (several lines, each ending in \n) with every line indented, in the file's line endings. */
function indentBlock(rendered: string, firstPrefix: string, restPrefix: string, style: TextStyle): string {
  const lines = rendered.endsWith("\n") ? rendered.slice(0, -1).split("\n") : rendered.split("\n");
  return lines.map((line, i) => `${i === 0 ? firstPrefix : restPrefix}${line}${style.eol}`).join("");
}

function render(value: unknown, style: TextStyle): string {
  // lineWidth 0: never fold a long URL over two lines.
  return stringify(value, { lineWidth: 0, indent: style.unit === "\t" ? 2 : Math.max(2, style.unit.length) });
}

/** Where new lines go after a block: its range ends after its last line break, or at the end of the text. */
function endOfBlock(text: string, node: Ranged, style: TextStyle): { at: number; prefix: string } {
  const end = node.range[1];
  if (end > 0 && text[end - 1] === "\n") return { at: end, prefix: "" };
  const at = nextLineStart(text, end);
  return { at, prefix: at === text.length && !text.endsWith("\n") ? style.eol : "" };
}

function insertEntry(
  parse: Parse,
  text: string,
  collection: ServerCollection,
  name: string,
  value: Readonly<Record<string, unknown>>,
): string {
  const style = detectStyle(text);
  const found = findCollection(parse(text), collection);
  const isList = collection.kind === "list";
  const body = render(isList ? value : { [name]: value }, style);
  if (found.node !== undefined && found.node.items.length > 0) {
    // A list starts at its first dash; a mapping's entries line up with its first key.
    const first = (isList ? found.node : (found.node.items[0] as Pair).key) as Ranged;
    const { at, prefix } = endOfBlock(text, found.node as unknown as Ranged, style);
    const indent = " ".repeat(column(text, first.range[0]));
    const block = isList
      ? indentBlock(body, `${indent}- `, `${indent}  `, style)
      : indentBlock(body, indent, indent, style);
    return splice(text, at, 0, prefix + block);
  }
  const key = topKey(collection);
  if (found.pair === undefined) {
    const doc = parse(text);
    if (isMap(doc.contents) && doc.contents.flow === true) {
      // `{}`: the braces go (their line too, when nothing else is on it), and the key is added below.
      const [from, to] = (doc.contents as unknown as Ranged).range;
      const start = lineStart(text, from);
      const end = nextLineStart(text, to);
      const alone = text.slice(start, from).trim() === "" && text.slice(to, end).trim() === "";
      let past = to;
      while (text[past] === " " || text[past] === "\t") past++;
      const without = alone ? splice(text, start, end - start, "") : splice(text, from, past - from, "");
      return insertEntry(parse, without, collection, name, value);
    }
    // No such key yet: it goes at the end of the document (the file's end, or its `...` line:
    // after that marker it would start a second document, which no client reads).
    const at = documentEnd(doc, text);
    const prefix = at === 0 || text[at - 1] === "\n" ? "" : style.eol;
    const block = isList
      ? indentBlock(body, `${style.unit}- `, `${style.unit}  `, style)
      : indentBlock(body, style.unit, style.unit, style);
    return splice(text, at, 0, `${prefix}${key}:${style.eol}${block}`);
  }
  // `key:`, `key: ~` or `key: {}`: the empty value goes, the block follows the key's line.
  const keyNode = found.pair.key as Ranged;
  let out = text;
  let lineEnd = keyNode.range[1];
  const empty = found.pair.value as Ranged | null;
  if (empty !== null && empty.range[1] > empty.range[0]) {
    let from = empty.range[0];
    while (from > keyNode.range[1] && (out[from - 1] === " " || out[from - 1] === "\t")) from--;
    out = splice(out, from, empty.range[1] - from, "");
    lineEnd = from;
  }
  const at = nextLineStart(out, lineEnd);
  const prefix = at === out.length && !out.endsWith("\n") ? style.eol : "";
  const indent = " ".repeat(column(out, keyNode.range[0])) + style.unit;
  const block = isList
    ? indentBlock(body, `${indent}- `, `${indent}  `, style)
    : indentBlock(body, indent, indent, style);
  return splice(out, at, 0, prefix + block);
}

interface FoundEntry {
  /** The entry's own mapping. */
  readonly map: YAMLMap;
  /** The node to cut when the entry goes: the pair (map) or the list item. */
  readonly start: number;
  readonly end: number;
  /** How many entries the collection holds. */
  readonly siblings: number;
  readonly collection: YAMLMap | YAMLSeq;
}

function findEntry(parse: Parse, text: string, collection: ServerCollection, name: string): FoundEntry | undefined {
  const found = findCollection(parse(text), collection);
  if (found.node === undefined) return undefined;
  if (collection.kind === "map") {
    const pair = (found.node as YAMLMap).items.find((candidate) => scalarValue(candidate.key) === name) as
      | Pair<Node, Node | null>
      | undefined;
    if (pair === undefined) return undefined;
    if (!isMap(pair.value) || pair.value.flow) throw new ConfigParseError(`the entry "${name}" is not a block mapping`);
    return {
      map: pair.value,
      start: pairStart(text, pair),
      end: pairEnd(text, pair),
      siblings: found.node.items.length,
      collection: found.node,
    };
  }
  const item = (found.node as YAMLSeq).items.find(
    (candidate) => isMap(candidate) && scalarValue(candidate.get(collection.nameKey, true)) === name,
  ) as (YAMLMap & Ranged) | undefined;
  if (item === undefined) return undefined;
  if (item.flow) throw new ConfigParseError(`the entry "${name}" is not a block mapping`);
  // The dash sits two columns before the item's content, on the same line.
  return {
    map: item,
    start: lineStart(text, item.range[0]),
    end: blockEnd(text, item.range[1]),
    siblings: found.node.items.length,
    collection: found.node,
  };
}

function pairStart(text: string, pair: Pair): number {
  const key = pair.key as Ranged;
  return indentBefore(text, key.range[0]) !== undefined ? lineStart(text, key.range[0]) : key.range[0];
}

function pairEnd(text: string, pair: Pair): number {
  const value = pair.value as Ranged | null;
  const key = pair.key as Ranged;
  return blockEnd(text, value !== null && value.range[1] > key.range[1] ? value.range[1] : key.range[1]);
}

/** A block's range ends after its last line break; a scalar's ends before it. */
function blockEnd(text: string, end: number): number {
  return end > 0 && text[end - 1] === "\n" ? end : nextLineStart(text, end);
}

function removeLines(text: string, start: number, end: number): string {
  return splice(text, start, end - start, "");
}

function removeEntry(
  parse: Parse,
  text: string,
  collection: ServerCollection,
  name: string,
  empty: EmptyCollection = {},
): string {
  const entry = findEntry(parse, text, collection, name);
  if (entry === undefined) return text;
  if (entry.siblings > 1) return removeLines(text, entry.start, entry.end);
  const key = topKey(collection);
  const doc = parse(text);
  const pair = (doc.contents as YAMLMap).items.find((candidate) => scalarValue(candidate.key) === key) as Pair;
  const keyNode = pair.key as Ranged;
  const emptied = removeLines(text, entry.start, entry.end);
  // The last one, in a collection mcpmgr added: the key's line goes too, unless a comment shares it.
  const keyLine = lineStart(text, keyNode.range[0]);
  const keyLineEnd = nextLineStart(emptied, keyNode.range[1]);
  const alone = emptied.slice(keyNode.range[1] + 1, keyLineEnd).trim() === "";
  // A comment indented under the key is the user's, about the collection: the key stays for it.
  const commented = /^(?:[ \t]*\r?\n)*[ \t]+#/.test(emptied.slice(keyLineEnd));
  if (empty.created === true && keyLine === keyNode.range[0] && alone && !commented) {
    return removeLines(emptied, keyLine, keyLineEnd);
  }
  // Else the collection stays, empty as it was written before mcpmgr's first entry (`extensions:`), or
  // `extensions: {}`, so the client still finds the key it expects.
  return splice(emptied, keyNode.range[1] + 1, 0, empty.form ?? (collection.kind === "map" ? " {}" : " []"));
}

/** How the empty value of an existing, empty collection is written after its key's colon (` []`, ` ~`, or nothing). */
function emptyForm(parse: Parse, text: string, collection: ServerCollection): string | undefined {
  const found = findCollection(parse(text), collection);
  if (found.pair === undefined || found.node !== undefined) return undefined;
  const keyNode = found.pair.key as Ranged;
  const value = found.pair.value as Ranged | null;
  if (text[keyNode.range[1]] !== ":") return undefined;
  const end = value === null || value.range[1] <= value.range[0] ? keyNode.range[1] + 1 : value.range[1];
  const form = text.slice(keyNode.range[1] + 1, end);
  // Only what insertEntry takes away: spaces and the empty value, on the key's line.
  return form.includes("\n") || form.includes("#") ? undefined : form;
}

function setEntryKey(
  parse: Parse,
  text: string,
  collection: ServerCollection,
  name: string,
  key: string,
  value: unknown,
): string {
  const entry = findEntry(parse, text, collection, name);
  if (entry === undefined) throw new ConfigParseError(`the entry "${name}" is gone`);
  const style = detectStyle(text);
  const pair = entry.map.items.find((candidate) => scalarValue(candidate.key) === key) as Pair<Node, Node | null>;
  const scalarNew = value === null || typeof value !== "object";
  if (pair !== undefined && isScalar(pair.value) && scalarNew) {
    const old = pair.value as Ranged;
    return splice(text, old.range[0], old.range[1] - old.range[0], render(value, style).trimEnd());
  }
  const first = entry.map.items[0]?.key as Ranged | undefined;
  if (first === undefined) throw new ConfigParseError(`the entry "${name}" is empty`);
  const indent = " ".repeat(column(text, first.range[0]));
  const line = indentBlock(render({ [key]: value }, style), indent, indent, style);
  if (pair !== undefined) {
    // A structured value is replaced whole: its lines go, the new ones take their place.
    if (collection.kind === "list" && pair === entry.map.items[0]) {
      throw new ConfigParseError(`"${key}" shares its line with the list dash in entry "${name}"`);
    }
    const start = pairStart(text, pair);
    return splice(text, start, pairEnd(text, pair) - start, line);
  }
  return splice(text, entry.end, 0, line);
}
