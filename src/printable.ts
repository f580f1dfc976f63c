/**
 * Text from outside mcpmgr (a server's output, a remote's error description, a header) made
 * safe for a terminal or a log file: control characters (C0 but tab and line feed, DEL, C1)
 * and the invisible characters that reorder text (bidirectional overrides and isolates) are
 * shown as escapes instead of acting. Otherwise a server could rewrite the user's terminal
 * (escape sequences: titles, colours, cursor moves, hyperlinks), hide text with carriage
 * returns, or make a line read differently than it is.
 */
const unsafe = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

export function printable(text: string): string {
  return text.replace(unsafe, (ch) => {
    const code = ch.charCodeAt(0);
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

/**
 * A word for a command line shown in a hint, which users paste into a shell: left as it is when the
 * shell reads it as one plain word, else in single quotes (a quote inside as '\''), so that a path such
 * as `a b;curl …|sh` is one argument, never a command of its own. Control characters are escaped too.
 */
export function shellWord(text: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(text)) return text;
  return `'${printable(text).replaceAll("'", "'\\''")}'`;
}

/**
 * The start of `text` as one line of at most `max` characters (line breaks shown as `\n`, a cut
 * marked with `…`): what goes into a log line or an error message of a text from outside that may be
 * a whole page, so that a repeated failure cannot flood a log or bury the lines around it.
 */
export function excerpt(text: string, max = 200): string {
  const head = text.length > max ? text.slice(0, max) : text;
  const line = head.replace(/\r\n|\r|\n/g, "\\n");
  return text.length > max ? `${line}…` : line;
}
