/**
 * JSON and JSONC (comments, trailing commas: VS Code's mcp.json, Zed's settings.json). The
 * file is parsed with jsonc-parser, and edits are spliced in at the offsets of its syntax
 * tree and scanner tokens. jsonc-parser's own modify() re-formats every line an edit touches,
 * which would rewrite a user's neighbouring entry; splicing leaves every byte outside our
 * entry as it was. New text follows the file's indentation, line endings and (in JSONC) its
 * trailing-comma habit.
 */
import { createScanner, getNodeValue, type Node, type ParseError, parseTree, printParseErrorCode } from "jsonc-parser";
import { locate, PARSE_OPTIONS } from "./json-locate.ts";
import type { ServerCollection } from "../types.ts";
import { ConfigParseError, describePath, type EntryMap, type FormatEditor, lineColumn } from "./editor.ts";
import { detectStyle, indentBefore, indentLines, lineIndent, lineStart, splice, type TextStyle } from "./text.ts";

export function jsonEditor(jsonc: boolean): FormatEditor {
  const parse = (text: string): Node | undefined => parseJson(text, jsonc);
  // One edit asks about the same text several times (its entries, then an insert): located once.
  let last: { text: string; path: string; root: Node | undefined } | undefined;
  const at = (text: string, path: readonly string[]): Node | undefined => {
    const key = JSON.stringify(path);
    if (last?.text !== text || last.path !== key) last = { text, path: key, root: locateJson(text, path, jsonc) };
    return last.root;
  };
  const collectionAt = (text: string, collection: ServerCollection) => at(text, mapPath(collection));
  return {
    parse: (text) => {
      const root = parse(text);
      return root === undefined ? undefined : getNodeValue(root);
    },
    valueAt: (text, path) => {
      let node = at(text, path);
      for (const step of path) {
        if (node?.type !== "object") return undefined;
        node = propertyOf(node, step)?.children?.[1];
      }
      return node === undefined ? undefined : getNodeValue(node);
    },
    entries: (text, collection) => readEntries(collectionAt(text, collection), collection),
    insertEntry: (text, collection, name, value) =>
      setProperty(text, collectionAt(text, collection), mapPath(collection), name, value),
    sameNamed: (text, collection, name) =>
      (objectAt(collectionAt(text, collection), mapPath(collection))?.children ?? [])
        .filter((property) => property.children?.[0]?.value === name)
        .map((property) => (property.children?.[1] === undefined ? undefined : getNodeValue(property.children[1]))),
    setEntryKey: (text, collection, name, key, value, which) =>
      setProperty(text, collectionAt(text, collection), [...mapPath(collection), name], key, value, which),
    removeEntryKey: (text, collection, name, key, which) =>
      removeProperty(text, collectionAt(text, collection), [...mapPath(collection), name], key, "", { path: which }),
    removeEntry: (text, collection, name, empty, which) => {
      const path = mapPath(collection);
      const without = removeProperty(text, collectionAt(text, collection), path, name, empty?.form, { key: which });
      if (empty?.created !== true || without === text || path.length === 0) return without;
      // mcpmgr made the collection: it goes with its last entry, unless something of the user's is in it (a comment).
      const object = objectAt(collectionAt(without, collection), path);
      if (object === undefined || (object.children?.length ?? 0) > 0) return without;
      if (without.slice(object.offset + 1, object.offset + object.length - 1).trim() !== "") return without;
      const parent = path.slice(0, -1);
      return removeProperty(without, collectionAt(without, collection), parent, path.at(-1) as string, empty.form);
    },
    emptyForm: (text, collection) => {
      const path = mapPath(collection);
      const root = collectionAt(text, collection);
      // The collection's; when it is not there yet, that of the object mcpmgr adds it to (`{\n}` stays so).
      const object = objectAt(root, path) ?? (path.length > 0 ? objectAt(root, path.slice(0, -1)) : undefined);
      if (object === undefined || (object.children?.length ?? 0) > 0) return undefined;
      const inner = text.slice(object.offset + 1, object.offset + object.length - 1);
      return inner !== "" ? inner : undefined;
    },
  };
}

function mapPath(collection: ServerCollection): readonly string[] {
  // Every JSON client keeps its servers in an object keyed by name.
  if (collection.kind !== "map") throw new Error("JSON clients keep servers in an object");
  return collection.path;
}

/**
 * Comments and trailing commas are accepted in every client's file, even where the client
 * documents plain JSON: if they are there, the user put them there (and their client reads
 * them); mcpmgr only adds them where the file already uses them.
 */
function parseJson(text: string, jsonc: boolean): Node | undefined {
  refuseTooDeep(text);
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, PARSE_OPTIONS);
  const [first] = errors;
  if (first !== undefined) throw syntaxError(text, first, jsonc);
  return root;
}

/** The file as far as an edit of the collection at `path` needs it (json-locate.ts), checked as parseJson checks. */
function locateJson(text: string, path: readonly string[], jsonc: boolean): Node | undefined {
  refuseTooDeep(text);
  const { root, error } = locate(text, path);
  if (error !== undefined) throw syntaxError(text, error, jsonc);
  return root;
}

function refuseTooDeep(text: string): void {
  const tooDeep = deeperThan(text, maxDepth);
  if (tooDeep !== undefined) {
    throw new ConfigParseError(
      `it nests arrays and objects deeper than ${maxDepth} levels (${lineColumn(text, tooDeep)}), which no client's settings do`,
    );
  }
}

function syntaxError(text: string, error: ParseError, jsonc: boolean): ConfigParseError {
  return new ConfigParseError(
    `it is not valid ${jsonc ? "JSON with comments" : "JSON"} (${lineColumn(text, error.offset)}: ${describeError(error)})`,
  );
}

/**
 * Deeper than any client's settings, far below what overflows the stack: jsonc-parser builds
 * its tree recursively, and a file nested 20,000 levels deep would throw a RangeError from
 * the middle of an update (review L4) instead of being refused like any broken file.
 */
const maxDepth = 512;

/**
 * The offset where arrays and objects first nest deeper than `max`, told by the scanner (strings and comments skipped, no recursion).
 * Not proxy/stdio-bridge/json-text.ts `nestsDeeperThan`, the bridge's scanner for JSON.parse, though both count
 * brackets: a depth check must read the text as the parser it guards does, and jsonc-parser reads it otherwise.
 * It skips comments (a `"` or a `[` in one opens nothing), and it ends a string at the end of its line and goes on
 * parsing after it, so a plain JSON scanner would count a user's commented brackets as nesting, or find a file that
 * is broken at one quote no deeper than one level while parseTree overflows the stack on what follows (clients-editors.test.ts).
 * This scanner on the bridge instead would cost each message 1.5 to 2.5 times as much (measured on 300-byte and 2 KB bodies).
 */
function deeperThan(text: string, max: number): number | undefined {
  // Fewer characters than twice the depth cannot nest that deep.
  if (text.length <= max * 2) return undefined;
  const scanner = createScanner(text, false);
  let depth = 0;
  for (;;) {
    const token = scanner.scan() as number;
    if (token === Token.EOF) return undefined;
    if (token === Token.OpenBrace || token === Token.OpenBracket) {
      if (++depth > max) return scanner.getTokenOffset();
    } else if (token === Token.CloseBrace || token === Token.CloseBracket) depth--;
  }
}

function describeError(error: ParseError): string {
  const code = printParseErrorCode(error.error);
  // "InvalidCommentToken" → "invalid comment token": the code names read as a sentence.
  return code.replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase();
}

/**
 * The property `key` of an object. Should a key be there twice, the last one wins, as in JSON.parse
 * and the clients; `which` picks another (0: the first), as same-name.ts tells which one is mcpmgr's.
 */
function propertyOf(object: Node, key: string, which?: number): Node | undefined {
  const named = (property: Node) => property.children?.[0]?.value === key;
  return which === undefined ? object.children?.findLast(named) : object.children?.filter(named)[which];
}

/**
 * The object at `path` (`which` picks among same-named properties at its last step), undefined when
 * a step is missing; ConfigParseError when a step is not an object.
 */
function objectAt(root: Node | undefined, path: readonly string[], which?: number): Node | undefined {
  let node = root;
  for (let depth = 0; depth <= path.length; depth++) {
    if (node === undefined) return undefined;
    if (node.type !== "object") throw new ConfigParseError(`${describePath(path.slice(0, depth))} is not an object`);
    if (depth === path.length) return node;
    node = propertyOf(node, path[depth] as string, depth === path.length - 1 ? which : undefined)?.children?.[1];
  }
  return undefined;
}

function readEntries(root: Node | undefined, collection: ServerCollection): EntryMap {
  const object = objectAt(root, mapPath(collection));
  const entries = new Map<string, unknown>();
  for (const property of object?.children ?? []) {
    const [key, value] = property.children ?? [];
    if (key !== undefined && value !== undefined) entries.set(String(key.value), getNodeValue(value));
  }
  return entries;
}

function render(value: unknown, indent: string, style: TextStyle): string {
  return indentLines(JSON.stringify(value, null, style.unit), indent, style.eol);
}

/** `{a: {b: {key: value}}}` for the part of the path that does not exist yet. */
function nest(path: readonly string[], key: string, value: unknown): unknown {
  return path.reduceRight<unknown>((inner, step) => ({ [step]: inner }), { [key]: value });
}

function setProperty(
  text: string,
  root: Node | undefined,
  path: readonly string[],
  key: string,
  value: unknown,
  which?: number,
): string {
  const style = detectStyle(text);
  if (root === undefined) {
    // Nothing but whitespace or comments: the whole object goes after them.
    const separator = text === "" || text.endsWith("\n") ? "" : style.eol;
    return `${text}${separator}${render(nest(path, key, value), "", style)}${style.eol}`;
  }
  let object = objectAt(root, []) as Node;
  for (let depth = 0; depth < path.length; depth++) {
    const step = path[depth] as string;
    const next = propertyOf(object, step, depth === path.length - 1 ? which : undefined)?.children?.[1];
    if (next === undefined) return insertProperty(text, object, step, nest(path.slice(depth + 1), key, value), style);
    if (next.type !== "object")
      throw new ConfigParseError(`${describePath(path.slice(0, depth + 1))} is not an object`);
    object = next;
  }
  const existing = propertyOf(object, key);
  const current = existing?.children?.[1];
  if (existing === undefined || current === undefined) return insertProperty(text, object, key, value, style);
  return splice(text, current.offset, current.length, render(value, indentBefore(text, existing.offset) ?? "", style));
}

/** jsonc-parser's SyntaxKind values (a const enum, which isolated modules cannot import). */
const Token = {
  OpenBrace: 1,
  CloseBrace: 2,
  OpenBracket: 3,
  CloseBracket: 4,
  Comma: 5,
  LineComment: 12,
  BlockComment: 13,
  LineBreak: 14,
  Trivia: 15,
  EOF: 17,
} as const;

interface After {
  /** Offset just past a comma that follows the value, if one does. */
  readonly commaEnd?: number;
  /** Offset just past the line break that ends the value's line, if the object goes on after it. */
  readonly nextLine?: number;
}

/** What follows a property's value on its line: a comma, comments, then a line break or the closing brace. */
function scanAfter(text: string, offset: number): After {
  const scanner = createScanner(text, false);
  scanner.setPosition(offset);
  let commaEnd: number | undefined;
  for (;;) {
    const kind = scanner.scan();
    const token = kind as number;
    if (token === Token.Trivia || token === Token.BlockComment || token === Token.LineComment) continue;
    if (token === Token.Comma && commaEnd === undefined) {
      commaEnd = scanner.getTokenOffset() + scanner.getTokenLength();
      continue;
    }
    if (token === Token.LineBreak) {
      return {
        ...(commaEnd !== undefined ? { commaEnd } : {}),
        nextLine: scanner.getTokenOffset() + scanner.getTokenLength(),
      };
    }
    return commaEnd !== undefined ? { commaEnd } : {};
  }
}

function insertProperty(text: string, object: Node, key: string, value: unknown, style: TextStyle): string {
  const name = JSON.stringify(key);
  const properties = object.children ?? [];
  const last = properties.at(-1);
  if (last === undefined) {
    // `{}` or `{ <whitespace, comments> }`: the property goes on its own line right after the brace.
    const open = object.offset;
    const close = object.offset + object.length - 1;
    const outer = lineIndent(text, open);
    const inner = outer + style.unit;
    // After a comment on the brace's line (`{ // none yet`), not before it: the comment would trail
    // mcpmgr's entry, and go with it when the entry is removed.
    const braceLineEnd = scanAfter(text, open + 1).nextLine;
    if (braceLineEnd !== undefined && braceLineEnd <= close) {
      return splice(text, braceLineEnd, 0, `${inner}${name}: ${render(value, inner, style)}${style.eol}`);
    }
    const multiLine = text.slice(open + 1, close).includes("\n");
    const property = `${style.eol}${inner}${name}: ${render(value, inner, style)}`;
    return splice(text, open + 1, 0, multiLine ? property : `${property}${style.eol}${outer}`);
  }
  const lastEnd = last.offset + last.length;
  const after = scanAfter(text, lastEnd);
  const indent = indentBefore(text, last.offset);
  if (after.nextLine !== undefined && indent !== undefined) {
    // One property per line: a new line after the last one (and after its comment), same indentation.
    const trailingComma = after.commaEnd !== undefined;
    const line = `${indent}${name}: ${render(value, indent, style)}${trailingComma ? "," : ""}${style.eol}`;
    const withLine = splice(text, after.nextLine, 0, line);
    return trailingComma ? withLine : splice(withLine, lastEnd, 0, ",");
  }
  // An object written on one line stays on one line.
  const compact = `${name}: ${JSON.stringify(value)}`;
  return after.commaEnd !== undefined
    ? splice(text, after.commaEnd, 0, ` ${compact},`)
    : splice(text, lastEnd, 0, `, ${compact}`);
}

function removeProperty(
  text: string,
  root: Node | undefined,
  path: readonly string[],
  key: string,
  emptyForm = "",
  which: { readonly path?: number | undefined; readonly key?: number | undefined } = {},
): string {
  const object = objectAt(root, path, which.path);
  const properties = object?.children ?? [];
  const chosen = object === undefined ? undefined : propertyOf(object, key, which.key);
  const index = chosen === undefined ? -1 : properties.indexOf(chosen);
  const property = properties[index];
  if (property === undefined) return text;
  const end = property.offset + property.length;
  const after = scanAfter(text, end);
  const previous = properties[index - 1];
  const isLast = index === properties.length - 1;
  const previousComma =
    previous === undefined ? undefined : scanAfter(text, previous.offset + previous.length).commaEnd;

  if (indentBefore(text, property.offset) !== undefined && after.nextLine !== undefined) {
    // Its own line(s), with whatever comment trails it: those lines go.
    const start = lineStart(text, property.offset);
    const without = splice(text, start, after.nextLine - start, "");
    if (properties.length === 1) return emptied(without, object as Node, after.nextLine - start, emptyForm);
    // Without a comma of its own it was the last one: the one before it must not keep a dangling comma.
    return isLast && after.commaEnd === undefined && previousComma !== undefined
      ? splice(without, previousComma - 1, 1, "")
      : without;
  }
  if (isLast && after.commaEnd === undefined && previousComma !== undefined) {
    // `{"a": 1, "b": 2}` → `{"a": 1}`: from the comma before it to its end.
    return splice(text, previousComma - 1, end - (previousComma - 1), "");
  }
  if (isLast && after.commaEnd !== undefined && previousComma !== undefined) {
    // `{"a": 1, "b": 2,}` → `{"a": 1,}`: from the comma before it to its own, as insertProperty put it there.
    return splice(text, previousComma, after.commaEnd - previousComma, "");
  }
  // `{"a": 1, "b": 2}` → `{"b": 2}`: it, its comma and the spaces after it.
  let stop = after.commaEnd ?? end;
  while (text[stop] === " " || text[stop] === "\t") stop++;
  const without = splice(text, property.offset, stop - property.offset, "");
  // The only one, on the line of a comment or a brace: the object is left as it was before it (`emptied`).
  return properties.length === 1 ? emptied(without, object as Node, stop - property.offset, emptyForm) : without;
}

/**
 * An object left with nothing between its braces but whitespace and the comments it held before
 * mcpmgr's first entry went in is written exactly as it was then (`emptyForm`: `{\n  }`, or braces
 * around a comment on one line, though the entry went on a line of its own), `{}` when that is not known.
 */
function emptied(text: string, object: Node, removed: number, emptyForm: string): string {
  const open = object.offset;
  const close = object.offset + object.length - 1 - removed;
  const squashed = (inner: string) => inner.replace(/\s+/g, "");
  return squashed(text.slice(open + 1, close)) === squashed(emptyForm)
    ? splice(text, open, close - open + 1, `{${emptyForm}}`)
    : text;
}
