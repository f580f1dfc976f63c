/**
 * The spellings of a secret value that redaction looks for (redact.ts): a value reaches a log or an
 * audit line as it is, or escaped by whoever wrote it there.
 */

/** Shorter values would turn ordinary words and numbers in logs into `***`. */
export const MIN_REDACT_LENGTH = 4;

/** How deep a value may sit in JSON inside JSON: a tool's JSON text in an audit line is two. */
const JSON_DEPTH = 2;

/**
 * Every spelling of one value to look for. Besides the value itself: its percent-encoded form, its JSON
 * string forms (a value with a quote, a backslash or a line break is written escaped by a server that logs
 * its settings as JSON, and escaped again in an audit line's data; Python's json also escapes every
 * non-ASCII character, Go's `<`, `>` and `&`), and each line of a multi-line value (a PEM key, a
 * credentials file), which a server may print one write at a time, so that no chunk of its output holds
 * the whole value. None when the value is shorter than MIN_REDACT_LENGTH.
 */
export function spellingsOf(text: string): string[] {
  const found = new Set<string>();
  const add = (spelled: string) => {
    let level = [spelled];
    for (let depth = 0; depth <= JSON_DEPTH; depth++) {
      const escaped = new Set<string>();
      const dotnet = new Set<string>();
      for (const spelling of level) {
        if (spelling.length < MIN_REDACT_LENGTH) continue;
        found.add(spelling);
        escaped.add(JSON.stringify(spelling).slice(1, -1));
        dotnet.add(dotnetJson(spelling));
      }
      // JSON writers differ beyond JavaScript's: Python's escapes non-ASCII, Go's `<`, `>` and `&`, PHP's `/`
      // too, .NET's its own set in upper-case hex.
      const variants = [...escaped].flatMap((spelling) => [
        spelling,
        asciiOnly(spelling),
        htmlSafe(spelling),
        asciiOnly(spelling).replaceAll("/", "\\/"),
      ]);
      level = [...new Set([...variants, ...dotnet])];
    }
  };
  if (text.length < MIN_REDACT_LENGTH) return [];
  add(text);
  // Percent-encoded, as a URL or a form quotes it (a base64 key's `+`, `/` and `=`, a password's `@`). A lone
  // surrogate (a token from a JSON answer may hold one) is encoded as URL encoders do, as U+FFFD: the bare
  // encodeURIComponent throws on it, and that threw out of a redactor learning a token.
  const encoded = encodeURIComponent(text.toWellFormed());
  if (encoded !== text) add(encoded);
  // A line is looked for without its indentation, and only when it has a letter or a digit: a credentials
  // file's "    }," or an indented blank line is in every pretty-printed JSON and indented text.
  if (/[\r\n]/.test(text)) {
    for (const line of text.split(/\r?\n|\r/)) if (/[\p{L}\p{N}]/u.test(line.trim())) add(line.trim());
  }
  return [...found];
}

/** JSON text with `<`, `>` and `&` written as `\u003c`, `\u003e`, `\u0026`, as Go's encoding/json writes them by default. */
function htmlSafe(text: string): string {
  return text.replace(/[<>&\u2028\u2029]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * A JSON string's inside as .NET's System.Text.Json writes it by default (JavaScriptEncoder.Default): `"`,
 * `&`, `'`, `+`, `<`, `>`, `` ` ``, control characters and every one beyond ASCII as `\uXXXX` in upper-case hex.
 * A base64 key's `+` (the C# MCP SDK's servers log so) was left in clear as `\u002B`.
 */
function dotnetJson(text: string): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const char = text[i] as string;
    if (char === "\\") out += "\\\\";
    else if (SHORT_ESCAPES[char] !== undefined) out += SHORT_ESCAPES[char];
    else if (code < 0x20 || code > 0x7e || `"&'+<>\``.includes(char))
      out += `\\u${code.toString(16).toUpperCase().padStart(4, "0")}`;
    else out += char;
  }
  return out;
}

const SHORT_ESCAPES: Readonly<Record<string, string>> = {
  "\b": "\\b",
  "\t": "\\t",
  "\n": "\\n",
  "\f": "\\f",
  "\r": "\\r",
};

/** JSON text with every character beyond ASCII written as `\uXXXX`, as Python's json.dumps writes it by default. */
function asciiOnly(text: string): string {
  return text.replace(/[^\x00-\x7f]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
