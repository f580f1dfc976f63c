/**
 * A YAML client file as the \`yaml\` library parses it (once per edit), and where in it a server
 * collection and its entries are: nodes with their source ranges, for yaml-editor.ts to splice at.
 */
import { isMap, isScalar, isSeq, type Node, type Pair, parseDocument, type YAMLMap, type YAMLSeq } from "yaml";
import type { ServerCollection } from "../types.ts";
import { ConfigParseError } from "./editor.ts";
import { indentBefore, lineStart, nextLineStart } from "./text.ts";

type Range = [number, number, number];
export type Ranged = Node & { range: Range };

export type Doc = ReturnType<typeof parseOnce>;
export type Parse = (text: string) => Doc;

/**
 * One edit asks about the same text several times (its entries, then an insert): parsed once
 * per editor, and an editor lives for one edit. The library keeps a node per value, with its
 * source range, so the document is the bulk of an edit's memory (~100 times the file's size).
 */
export function parser(): Parse {
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
  // A key given twice is an error, as for the clients' own readers (the yaml package's default, serde_yaml):
  // an edit of the first `mcpServers` of two would go where no client reads. The library's own warnings
  // (a mapping used as a key) would reach the user's terminal as a process warning naming its API.
  const doc = parseDocument(text, { prettyErrors: true, logLevel: "error" });
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

export function scalarValue(node: unknown): unknown {
  return isScalar(node) ? node.value : node;
}

export function toJS(node: unknown): unknown {
  return node !== null && typeof node === "object" && "toJSON" in node
    ? (node as { toJSON(): unknown }).toJSON()
    : node;
}

export interface Found {
  /** The top-level pair holding the collection, if the key is there at all. */
  readonly pair?: Pair<Node, Node | null>;
  /** The collection itself, when it exists and is not empty (a block map or sequence). */
  readonly node?: YAMLMap | YAMLSeq;
}

export function topKey(collection: ServerCollection): string {
  const [key, ...rest] = collection.path;
  if (key === undefined || rest.length > 0) throw new Error("YAML clients keep their servers under a top-level key");
  return key;
}

export function findCollection(doc: Doc, collection: ServerCollection): Found {
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

export interface FoundEntry {
  /** The entry's own mapping. */
  readonly map: YAMLMap;
  /** The node to cut when the entry goes: the pair (map) or the list item. */
  readonly start: number;
  readonly end: number;
  /** How many entries the collection holds. */
  readonly siblings: number;
  readonly collection: YAMLMap | YAMLSeq;
}

/** The collection's pairs (map) or items (list) named `name`, in the file's order: more than one when the user repeated it. */
export function named(found: Found, collection: ServerCollection, name: string): (Pair<Node, Node | null> | YAMLMap)[] {
  if (found.node === undefined) return [];
  if (collection.kind === "map") {
    return (found.node as YAMLMap).items.filter((candidate) => scalarValue(candidate.key) === name) as Pair<
      Node,
      Node | null
    >[];
  }
  return (found.node as YAMLSeq).items.filter(
    (candidate) => isMap(candidate) && scalarValue(candidate.get(collection.nameKey, true)) === name,
  ) as YAMLMap[];
}

export function findEntry(
  parse: Parse,
  text: string,
  collection: ServerCollection,
  name: string,
  which = 0,
): FoundEntry | undefined {
  const found = findCollection(parse(text), collection);
  if (found.node === undefined) return undefined;
  const match = named(found, collection, name)[which];
  if (collection.kind === "map") {
    const pair = match as Pair<Node, Node | null> | undefined;
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
  const item = match as (YAMLMap & Ranged) | undefined;
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

export function pairStart(text: string, pair: Pair): number {
  const key = pair.key as Ranged;
  return indentBefore(text, key.range[0]) !== undefined ? lineStart(text, key.range[0]) : key.range[0];
}

export function pairEnd(text: string, pair: Pair): number {
  const value = pair.value as Ranged | null;
  const key = pair.key as Ranged;
  return blockEnd(text, value !== null && value.range[1] > key.range[1] ? value.range[1] : key.range[1]);
}

/** A block's range ends after its last line break; a scalar's ends before it. */
export function blockEnd(text: string, end: number): number {
  return end > 0 && text[end - 1] === "\n" ? end : nextLineStart(text, end);
}
