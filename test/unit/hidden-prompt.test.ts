/**
 * The hidden prompt's keys (src/cli/hidden-prompt.ts): a bracketed paste keeps its line breaks, also when
 * the terminal's reads split it; Enter after typed text, or a paste of one line with its line break, ends
 * the value as before; several lines sent as typed (no bracketed paste) are refused, never cut.
 */
import { expect, test } from "bun:test";
import { HiddenLine } from "../../src/cli/hidden-prompt.ts";

const feed = (...chunks: string[]) => {
  const line = new HiddenLine();
  return chunks.map((chunk) => line.feed(chunk)).at(-1);
};

test("typed keys: Enter ends, Backspace and Ctrl-U edit, arrow keys are no part of the value", () => {
  expect(feed("tokk\u007f", "en\u001b[D\r")).toEqual({ kind: "done", value: "token" });
  expect(feed("wrong\u0015right\r")).toEqual({ kind: "done", value: "right" });
  // One line pasted with its CRLF, without bracketed paste: still that line.
  expect(feed("ghp_value\r\n")).toEqual({ kind: "done", value: "ghp_value" });
  expect(feed("abc\u0003")).toEqual({ kind: "cancelled" });
});

test("a bracketed paste keeps its line breaks, across reads; its own last line break goes", () => {
  expect(feed("\u001b[200~a\r", "b\r\nc\n\u001b[2", "01~", "\r")).toEqual({ kind: "done", value: "a\nb\nc" });
  expect(feed("pre-\u001b[200~x\ry\u001b[201~-post\r")).toEqual({ kind: "done", value: "pre-x\ny-post" });
});

test("several lines sent as typed are refused", () => {
  expect(feed("line one\rline two\r")).toEqual({ kind: "several-lines" });
});

test("a read that ends inside a CRLF or after a marker's ESC cuts nothing into the value", () => {
  // A CRLF paste read in two (CR | LF) is one line break, not a blank line in the middle of a key.
  expect(feed("\u001b[200~line1\r", "\nline2\u001b[201~", "\r")).toEqual({ kind: "done", value: "line1\nline2" });
  // The end marker's ESC alone at a read's end: the paste still ends (the prompt waited for ever).
  expect(feed("\u001b[200~abc\u001b", "[201~", "\r")).toEqual({ kind: "done", value: "abc" });
  // The start marker's ESC alone: "[200~" was saved as part of the value.
  expect(feed("\u001b", "[200~abc\u001b[201~", "\r")).toEqual({ kind: "done", value: "abc" });
  // The Escape key alone still takes nothing from the next key.
  expect(feed("ab\u001b", "c\r")).toEqual({ kind: "done", value: "abc" });
});

test("Ctrl-C cancels inside a paste whose end never comes", () => {
  expect(feed("\u001b[200~line1\rline2", "\u0003")).toEqual({ kind: "cancelled" });
});

test("an arrow key (CSI or SS3) split across reads leaves nothing of itself in the value", () => {
  // Ctrl-Left (ESC [1;5D) cut after its parameters: "1;5D" was typed into the value.
  expect(feed("tok\u001b[1;5", "Den\r")).toEqual({ kind: "done", value: "token" });
  // Cut after ESC: "[D" was typed into it.
  expect(feed("tok\u001b", "[Den\r")).toEqual({ kind: "done", value: "token" });
  // Cut after ESC [ (and the same inside a paste).
  expect(feed("tok\u001b[", "Aen\r")).toEqual({ kind: "done", value: "token" });
  expect(feed("\u001b[200~a\u001b[", "Cb\u001b[201~", "\r")).toEqual({ kind: "done", value: "ab" });
  // SS3 (application cursor keys: ESC O A), cut after ESC O, and after its ESC.
  expect(feed("tok\u001bO", "Ben\r")).toEqual({ kind: "done", value: "token" });
  expect(feed("tok\u001b", "OBen\r")).toEqual({ kind: "done", value: "token" });
  // A key split over three reads.
  expect(feed("tok\u001b", "[1;", "5Cen\r")).toEqual({ kind: "done", value: "token" });
});
