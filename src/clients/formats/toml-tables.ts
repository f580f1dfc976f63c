/**
 * Where a server's table goes in a TOML file, and what goes with it when it is removed, so
 * that the user's comments stay where they were and adding then removing a table gives the
 * file back byte for byte.
 *
 * toml_edit decides what a table is (it parses; nothing here does): it is asked to add or
 * remove the table, and its output is compared line by line with the text to learn where the
 * table goes, or which lines it spans with its decor (the blank and comment lines above its
 * header, which toml_edit counts as the table's). Only those lines, that toml_edit reported as
 * decor, are then looked at, and only for being blank or a comment:
 *
 * - toml_edit puts a new table right after the last table's key/values, above the comments
 *   that follow them. Those comments are the previous table's (`# enabled = false`, a server
 *   commented out) or the next header's (a heading comment right above `[projects]`); so the
 *   new table goes after the previous table's comments and before the next header's own block
 *   (the comment lines right above it), and at the end of the file after every comment there.
 * - toml_edit writes a new `[mcp_servers]` parent header with the first server and leaves it
 *   behind when the last one goes: the table is written without it (TOML makes the parent).
 * - toml_edit removes a table with its decor: comment lines there are the user's and stay; the
 *   blank lines after them and the table go.
 *
 * The caller checks that the result parses to what toml_edit's own edit does, and uses that
 * edit when it does not (or when these functions return undefined).
 */

/** The text's lines, each with its own line ending (the last one may have none). */
function linesOf(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

function bare(line: string): string {
  return line.replace(/\r?\n$/, "");
}

const isBlank = (line: string): boolean => bare(line).trim() === "";
const isComment = (line: string): boolean => bare(line).trimStart().startsWith("#");
const sameLine = (a: string | undefined, b: string | undefined): boolean =>
  a !== undefined && b !== undefined && bare(a) === bare(b);

/** The lines `before` and `after` share at their start and at their end (line endings aside), not overlapping. */
function common(before: string[], after: string[]): { start: number; end: number } {
  let start = 0;
  while (start < before.length && start < after.length && sameLine(before[start], after[start])) start++;
  let end = 0;
  const most = Math.min(before.length, after.length) - start;
  while (end < most && sameLine(before[before.length - 1 - end], after[after.length - 1 - end])) end++;
  return { start, end };
}

const isHeaderOf = (line: string, header: string): boolean => {
  const content = bare(line).trimStart();
  return content === header || (content.startsWith(header) && /^[ \t#]/.test(content.slice(header.length)));
};

/** Past the last comment line of `lines[from..to)`, or `from` when there is none. */
function afterLastComment(lines: readonly string[], from: number, to: number): number {
  for (let at = to; at > from; at--) if (isComment(lines[at - 1] as string)) return at;
  return from;
}

/**
 * `text` with the table `header` (`[mcp_servers.fetch]`) added, from toml_edit's `edited` text
 * that added it; undefined when that edit was not one new table.
 */
export function placeTable(text: string, edited: string, header: string, eol: string): string | undefined {
  const before = linesOf(text);
  const after = linesOf(edited);
  const { start, end } = common(before, after);
  if (before.length - end !== start) return undefined;
  const added = after.slice(start, after.length - end);
  const at = added.findIndex((line) => isHeaderOf(line, header));
  if (at === -1) return undefined;
  const table = added.slice(at);
  while (table.length > 0 && isBlank(table.at(-1) as string)) table.pop();
  // The previous table's key/values end here: toml_edit's new lines may start with blank lines the text had too.
  let last = start;
  while (last > 0 && isBlank(before[last - 1] as string)) last--;
  // Then only blank and comment lines, up to the next header or the end of the file.
  let next = last;
  while (next < before.length && (isBlank(before[next] as string) || isComment(before[next] as string))) next++;
  if (
    next < before.length &&
    !bare(before[next] as string)
      .trimStart()
      .startsWith("[")
  )
    return undefined;
  let headBlock = next;
  if (next < before.length) while (headBlock > last && isComment(before[headBlock - 1] as string)) headBlock--;
  const place = afterLastComment(before, last, headBlock);
  const block = table.map((line) => bare(line) + eol).join("");
  const prefix = before.slice(0, place).join("");
  const rest = before.slice(place).join("");
  if (prefix === "") return block + rest;
  // A file without a final line break keeps none.
  if (rest === "" && !prefix.endsWith("\n")) return `${prefix}${eol}${eol}${block.slice(0, -eol.length)}`;
  return `${prefix}${eol}${block}${rest}`;
}

/**
 * `text` without the table `header`, from toml_edit's `edited` text that removed it, keeping
 * the comment lines of its decor; undefined when that edit did not remove the lines of a table.
 */
export function unplaceTable(text: string, edited: string, header: string): string | undefined {
  const before = linesOf(text);
  const after = linesOf(edited);
  const found = common(before, after);
  if (after.length - found.end !== found.start) return undefined;
  let start = found.start;
  let stop = before.length - found.end;
  // The same lines may be told apart from either end: the earliest reading puts the decor before the header.
  while (start > 0 && sameLine(before[start - 1], before[stop - 1])) {
    start--;
    stop--;
  }
  const removed = before.slice(start, stop);
  const at = removed.findIndex((line) => isHeaderOf(line, header));
  if (at === -1) return undefined;
  const kept = removed.slice(0, afterLastComment(removed, 0, at));
  const result = [...before.slice(0, start), ...kept, ...before.slice(stop)].join("");
  return !text.endsWith("\n") && result.endsWith("\n") ? result.replace(/\r?\n$/, "") : result;
}
