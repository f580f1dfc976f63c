/**
 * What the option files' fast parsers (Bun's YAML parser, JSON.parse) leave unsaid, read again with a
 * library that says it (`yaml`, `jsonc-parser`, each loaded only when called): where and why a file does
 * not parse, and a key given twice in one object, which both fast parsers take silently (the last one
 * wins), so that a second `policies:` or `network` block would drop the first without a word. Nothing
 * here quotes the file's text but a duplicated key's name.
 */
import type { ParseError } from "jsonc-parser";
import { excerpt, printable } from "../printable.ts";

// jsonc-parser is required by its ES module's path (literal, for the bundler): `require("jsonc-parser")`
// takes its `main`, a UMD bundle whose inner requires the compiled executable cannot resolve
// ("Cannot find module './impl/format'"): a JSON option file that did not parse was an unexpected error.
import type { Document, LineCounter as YamlLineCounter } from "yaml";

/** A key given twice in one object: its name and the line of its second appearance (1-based). */
export interface DuplicateKey {
  readonly key: string;
  readonly line: number;
}

/**
 * The refusal of a key given twice, in the words every reader uses (option files, `--from-config`): the
 * key's name only, printable and cut at 60 characters (a key may be anything a user pasted).
 */
export function duplicateKeyText(duplicate: DuplicateKey): string {
  return `the key ${JSON.stringify(printable(excerpt(duplicate.key, 60)))} is given twice in one object (line ${duplicate.line}); the later would silently replace the earlier`;
}

/** Where and why YAML text does not parse: Bun's parser says only "Unexpected token" (or no place). */
export function yamlProblem(text: string): string | undefined {
  const { document, lines } = readYaml(text);
  const [first] = document.errors;
  if (first === undefined) return unresolvedAlias(document, lines);
  const where = first.linePos?.[0];
  const message = (first.message.split("\n")[0] ?? "").replace(/ at line \d+, column \d+:?$/, "");
  return `${where ? `line ${where.line}, column ${where.col}: ` : ""}${message}`;
}

/**
 * An alias (`*name`) with no anchor before it: Bun refuses it, the `yaml` library finds it only when it
 * converts the document (and then quotes its name), so the aliases are looked up here.
 */
function unresolvedAlias(document: Document, lines: YamlLineCounter): string | undefined {
  const { isAlias, visit } = require("yaml") as typeof import("yaml");
  let found: string | undefined;
  visit(document, {
    Alias(_key, node) {
      if (!isAlias(node) || node.resolve(document) !== undefined) return undefined;
      const where = lines.linePos(node.range?.[0] ?? 0);
      found = `line ${where.line}, column ${where.col}: an alias (*) with no anchor (&) of its name before it`;
      return visit.BREAK;
    },
  });
  return found;
}

/**
 * Bun's JSON.parse quotes the token it stopped at (`Unexpected identifier "ghp_…"`, a token pasted
 * unquoted) and has no position; jsonc-parser's errors are codes at an offset. Comments and trailing
 * commas are refused, as JSON.parse refuses them.
 */
export function jsonProblem(text: string): string | undefined {
  const { parse, printParseErrorCode } = require("jsonc-parser/lib/esm/main.js") as typeof import("jsonc-parser");
  const errors: ParseError[] = [];
  parse(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  const [first] = errors;
  if (first === undefined) return undefined;
  const before = text.slice(0, first.offset);
  const line = before.split("\n").length;
  const column = first.offset - (before.lastIndexOf("\n") + 1) + 1;
  // "CloseBraceExpected" → "close brace expected".
  const why = printParseErrorCode(first.error)
    .replace(/([a-z])([A-Z])/g, "$1 $2")
    .toLowerCase();
  return `line ${line}, column ${column}: ${why}`;
}

/** The first key given twice in one mapping of YAML text that Bun's parser took; undefined: none. */
export function yamlDuplicateKey(text: string): DuplicateKey | undefined {
  const { isPair, isScalar, visit } = require("yaml") as typeof import("yaml");
  const { document, lines } = readYaml(text);
  const duplicate = document.errors.find((error) => error.code === "DUPLICATE_KEY");
  if (duplicate === undefined) return undefined;
  let key = "?";
  visit(document, {
    Pair(_key, pair) {
      if (!isPair(pair) || !isScalar(pair.key) || pair.key.range?.[0] !== duplicate.pos[0]) return undefined;
      key = String(pair.key.value);
      return visit.BREAK;
    },
  });
  return { key, line: lines.linePos(duplicate.pos[0]).line };
}

/** The first key given twice in one object of JSON text that JSON.parse took; undefined: none. */
export function jsonDuplicateKey(text: string): DuplicateKey | undefined {
  const { visit } = require("jsonc-parser/lib/esm/main.js") as typeof import("jsonc-parser");
  const open: Set<string>[] = [];
  let found: DuplicateKey | undefined;
  visit(text, {
    onObjectBegin: () => {
      open.push(new Set());
    },
    onObjectEnd: () => {
      open.pop();
    },
    onObjectProperty: (property, _offset, _length, startLine) => {
      const keys = open.at(-1);
      if (found !== undefined || keys === undefined) return;
      if (keys.has(property)) found = { key: property, line: startLine + 1 };
      keys.add(property);
    },
  });
  return found;
}

function readYaml(text: string): { document: Document; lines: YamlLineCounter } {
  const { LineCounter, isScalar, parseDocument } = require("yaml") as typeof import("yaml");
  const lines = new LineCounter();
  // Keys compared as the JavaScript object Bun's parser builds compares them: `1` and `"1"` are one key.
  // A merge key (plain `<<`, which Bun's parser applies: each `<<: *base` adds its keys, none replaces
  // another) is read as one too (`merge`), and its value is a Symbol, never equal to another merge key's.
  const document = parseDocument(text, {
    prettyErrors: true,
    lineCounter: lines,
    merge: true,
    uniqueKeys: (a, b) =>
      a === b ||
      (isScalar(a) &&
        isScalar(b) &&
        typeof a.value !== "symbol" &&
        typeof b.value !== "symbol" &&
        String(a.value) === String(b.value)),
  });
  return { document, lines };
}
