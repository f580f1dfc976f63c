/**
 * YAML (Goose's config.yaml, Continue's config.yaml). The `yaml` library parses the file and
 * reports every node's source range; edits are spliced in at those ranges, so comments,
 * quoting, blank lines and indentation outside our entry stay exactly as written (the
 * library's own re-stringify would normalise them). Only block-style collections are edited;
 * an empty flow collection (`extensions: {}`) is turned into a block one, a non-empty flow
 * one is refused, since rewriting it would touch the user's entries.
 *
 * Servers live under a top-level key, as in every YAML client mcpmgr knows; yaml-document.ts
 * finds it, and the entries in it.
 */
import { isMap, isScalar, type Node, type Pair, stringify, type YAMLMap, type YAMLSeq } from "yaml";
import type { ServerCollection } from "../types.ts";
import { ConfigParseError, type EmptyCollection, type FormatEditor } from "./editor.ts";
import { detectStyle, lineStart, nextLineStart, splice, type TextStyle } from "./text.ts";
import {
  type Doc,
  findCollection,
  findEntry,
  named,
  type Parse,
  pairEnd,
  pairStart,
  parser,
  type Ranged,
  scalarValue,
  toJS,
  topKey,
} from "./yaml-document.ts";

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
    sameNamed: (text, collection, name) =>
      named(findCollection(parse(text), collection), collection, name).map((match) =>
        toJS(isMap(match) ? match : match.value),
      ),
    insertEntry: (text, collection, name, value) => insertEntry(parse, text, collection, name, value),
    setEntryKey: (text, collection, name, key, value, which) =>
      setEntryKey(parse, text, collection, { name, which }, key, value),
    removeEntryKey: (text, collection, name, key, which) => {
      const entry = findEntry(parse, text, collection, name, which);
      const pair = entry?.map.items.find((candidate) => scalarValue(candidate.key) === key);
      if (entry === undefined || pair === undefined) return text;
      if (collection.kind === "list" && pair === entry.map.items[0]) {
        throw new ConfigParseError(`"${key}" shares its line with the list dash in entry "${name}"`);
      }
      return removeLines(text, pairStart(text, pair), pairEnd(text, pair));
    },
    removeEntry: (text, collection, name, empty, which) => removeEntry(parse, text, collection, { name, which }, empty),
    emptyForm: (text, collection) => emptyForm(parse, text, collection),
  };
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
    return splice(text, at, 0, atEnd(prefix, block, style));
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
    return splice(text, at, 0, atEnd(prefix, `${key}:${style.eol}${block}`, style));
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
  return splice(out, at, 0, atEnd(prefix, block, style));
}

/**
 * Lines added after the last one of a file without a final line break (`prefix` is then that
 * line break): the file keeps none, so that taking them out again gives it back as it was.
 */
function atEnd(prefix: string, lines: string, style: TextStyle): string {
  return prefix === "" ? lines : prefix + lines.slice(0, -style.eol.length);
}

function removeLines(text: string, start: number, end: number): string {
  // The file's last lines, without a final line break (see atEnd): the break before them goes with them.
  if (end === text.length && text[start - 1] === "\n" && !text.endsWith("\n")) {
    return text.slice(0, start - (text[start - 2] === "\r" ? 2 : 1));
  }
  return splice(text, start, end - start, "");
}

/** An entry by its name and, when the file repeats the name, which of those it is (0: the first). */
interface EntryRef {
  readonly name: string;
  readonly which?: number | undefined;
}

function removeEntry(
  parse: Parse,
  text: string,
  collection: ServerCollection,
  { name, which }: EntryRef,
  empty: EmptyCollection = {},
): string {
  const entry = findEntry(parse, text, collection, name, which);
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
  // Not the file's only key: an empty file is no mapping (it was `{}`, or empty, or only comments: the key stays).
  const others = (doc.contents as YAMLMap).items.length > 1;
  if (empty.created === true && others && keyLine === keyNode.range[0] && alone && !commented) {
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
  { name, which }: EntryRef,
  key: string,
  value: unknown,
): string {
  const entry = findEntry(parse, text, collection, name, which);
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
