/**
 * The layout of `--help`'s ARGUMENTS and OPTIONS tables. citty right-aligns every option to the
 * longest one and pads every description to the longest one: with mcpmgr's long options
 * (`--token-exchange-subject-token-type=<access_token|id_token>`) and descriptions, each row was
 * some 300 characters, mostly spaces, so an 80-column terminal showed each option on four rows,
 * three of them blank or a fragment. Here options start at the left margin and descriptions follow
 * at a fixed column (after a longer option, two spaces on), wrapped to the
 * terminal's width when one is known, and no row ends in spaces.
 */

/** Where descriptions start: wide enough for most options, narrow enough for an 80-column terminal. */
const OPTION_COLUMN = 34;
const INDENT = "  ";
const ANSI = /\x1b\[[0-9;]*m/g;

const visible = (text: string) => text.replace(ANSI, "").length;

/** A table row: the option (no run of two spaces in it), two or more spaces, the description. */
const ROW = /^\s*(\S(?:\S| (?! ))*) {2,}(\S.*?)\s*$/;

/** Cuts `text` into lines of at most `width` visible characters, at spaces (a longer word stays whole). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line !== "" && visible(line) + 1 + visible(word) > width) {
      lines.push(line);
      line = word;
    } else line = line === "" ? word : `${line} ${word}`;
  }
  if (line !== "") lines.push(line);
  return lines;
}

/** A terminal narrower than this gets descriptions under their option at NARROW_COLUMN. */
const NARROW_BELOW = OPTION_COLUMN + 21;
const NARROW_COLUMN = 6;

function layoutRow(option: string, description: string, columns: number | undefined): string[] {
  const head = `${INDENT}${option}`;
  // Below NARROW_BELOW, 34 columns of indent and a 20-character line would be wider than the terminal,
  // which folds every row of the description into two or three.
  if (columns !== undefined && columns < NARROW_BELOW)
    return [
      head,
      ...wrap(description, Math.max(10, columns - NARROW_COLUMN - 1)).map(
        (text) => `${" ".repeat(NARROW_COLUMN)}${text}`,
      ),
    ];
  const pad = " ".repeat(OPTION_COLUMN);
  // An option too long for the column keeps its description on its own row all the same, two spaces
  // on: `mcpmgr run --help | grep otel` shows what each option does.
  const start = Math.max(OPTION_COLUMN, visible(head) + 2);
  const width = columns === undefined ? Number.POSITIVE_INFINITY : Math.max(20, columns - OPTION_COLUMN - 1);
  // In a terminal too narrow for a few words after the option, the description starts on the next row.
  if (columns !== undefined && columns - start - 1 < 20)
    return [head, ...wrap(description, width).map((text) => `${pad}${text}`)];
  const first = columns === undefined ? Number.POSITIVE_INFINITY : columns - start - 1;
  const [line = "", ...rest] = wrap(description, first);
  const more = rest.length === 0 ? [] : wrap(rest.join(" "), width);
  return [`${head}${" ".repeat(start - visible(head))}${line}`, ...more.map((text) => `${pad}${text}`)];
}

/**
 * `usage` (citty's rendering) with its ARGUMENTS and OPTIONS tables laid out as above, and every
 * line's trailing spaces gone; `columns`: the terminal's width (undefined: no wrapping, as for a pipe).
 */
export function layoutHelp(usage: string, columns: number | undefined): string {
  const out: string[] = [];
  // A table is its heading, a blank line, its rows, and the blank line that ends it.
  let table: "heading" | "rows" | undefined;
  for (const line of usage.split("\n")) {
    const plain = line.replace(ANSI, "").trim();
    if (plain === "ARGUMENTS" || plain === "OPTIONS") table = "heading";
    else if (plain === "") table = table === "heading" ? "rows" : undefined;
    const row = table === "rows" && plain !== "" ? ROW.exec(line) : null;
    if (row === null) out.push(line.trimEnd());
    else out.push(...layoutRow(row[1] as string, row[2] as string, columns));
  }
  return out.join("\n");
}
