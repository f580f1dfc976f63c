/**
 * Positions in a file's text, for editors that splice at offsets a parser reported: where a
 * line starts and ends, how it is indented, and the file's own end-of-line and indent unit.
 */

export interface TextStyle {
  /** "\n" or "\r\n", as the file already uses. */
  readonly eol: string;
  /** One level of indentation as the file already uses ("  ", "    " or "\t"). */
  readonly unit: string;
}

export function detectStyle(text: string, fallbackUnit = "  "): TextStyle {
  const eol = text.includes("\r\n") ? "\r\n" : "\n";
  let unit = fallbackUnit;
  for (const line of text.split("\n")) {
    const content = line.trimStart();
    if (content === "" || content === "\r" || content.length === line.length) continue;
    const indent = line.slice(0, line.length - content.length);
    unit = indent.startsWith("\t") ? "\t" : " ".repeat(indent.length);
    break;
  }
  return { eol, unit };
}

export function lineStart(text: string, offset: number): number {
  return text.lastIndexOf("\n", offset - 1) + 1;
}

/** The offset just past the line break that ends the line holding `offset` (or the end of the text). */
export function nextLineStart(text: string, offset: number): number {
  const at = text.indexOf("\n", offset);
  return at === -1 ? text.length : at + 1;
}

/** The whitespace before `offset` on its line, or undefined when something else precedes it there. */
export function indentBefore(text: string, offset: number): string | undefined {
  const before = text.slice(lineStart(text, offset), offset);
  return before.trim() === "" ? before : undefined;
}

/** The leading whitespace of the line holding `offset`. */
export function lineIndent(text: string, offset: number): string {
  const start = lineStart(text, offset);
  let end = start;
  while (end < text.length && (text[end] === " " || text[end] === "\t")) end++;
  return text.slice(start, end);
}

export function splice(text: string, offset: number, removed: number, inserted: string): string {
  return text.slice(0, offset) + inserted + text.slice(offset + removed);
}

/** Re-indents a multi-line rendering: every line after the first starts with `indent`. */
export function indentLines(rendered: string, indent: string, eol: string): string {
  return rendered.split("\n").join(eol + indent);
}
