/**
 * A value typed in the terminal without echo (`secret set` in a terminal). Enter ends it, Ctrl-C
 * cancels, Backspace and Ctrl-U edit.
 *
 * Values are pasted as often as typed, and some have several lines (a PEM key, a pretty-printed JSON
 * key file). Without care the first line break of a paste ends the prompt: the first line alone was
 * saved, reported as a success, and the rest of the paste went to the shell after mcpmgr exited. So the
 * terminal is asked for bracketed paste (`ESC [?2004h`): a paste arrives between `ESC [200~` and
 * `ESC [201~`, and its line breaks are part of the value. A terminal without bracketed paste sends a
 * paste like typing; a line break with more text after it in the same read is then a paste of several
 * lines, and is refused rather than cut.
 */
import { McpmgrError } from "../errors.ts";

const PASTE_START = "\u001b[200~";
const PASTE_END = "\u001b[201~";
/** Escape sequences (arrow keys and the like) are no part of a value. */
const ESCAPES = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b[O]?./g;

export type PromptStep =
  | { readonly kind: "more" }
  | { readonly kind: "done"; readonly value: string }
  | { readonly kind: "cancelled" }
  | { readonly kind: "several-lines" };

/** What the keys read so far make of the value; fed each chunk the terminal sends. */
export class HiddenLine {
  #value = "";
  #inPaste = false;
  #pasted = false;
  /** The start of a paste marker the terminal's read cut off, kept for the next read (a lone ESC key is not held). */
  #pending = "";

  feed(chunk: string): PromptStep {
    let rest = this.#pending + chunk;
    this.#pending = "";
    const lastEscape = rest.lastIndexOf("\u001b");
    const tail = rest.slice(lastEscape);
    if (
      lastEscape !== -1 &&
      tail.length >= 2 &&
      tail.length < PASTE_START.length &&
      (PASTE_START.startsWith(tail) || PASTE_END.startsWith(tail))
    ) {
      this.#pending = tail;
      rest = rest.slice(0, lastEscape);
    }
    while (rest.length > 0) {
      if (this.#inPaste) {
        const end = rest.indexOf(PASTE_END);
        this.#addPasted(end === -1 ? rest : rest.slice(0, end));
        if (end === -1) return { kind: "more" };
        this.#inPaste = false;
        rest = rest.slice(end + PASTE_END.length);
        continue;
      }
      const start = rest.indexOf(PASTE_START);
      const typed = start === -1 ? rest : rest.slice(0, start);
      const step = this.#addTyped(typed);
      if (step.kind !== "more") return step;
      if (start === -1) return step;
      this.#inPaste = true;
      this.#pasted = true;
      rest = rest.slice(start + PASTE_START.length);
    }
    return { kind: "more" };
  }

  /** Inside a bracketed paste: line breaks (CR, LF, CRLF) are the value's own, as LF. */
  #addPasted(text: string): void {
    for (const ch of text.replace(/\r\n?/g, "\n").replace(ESCAPES, "")) {
      if (ch === "\n" || ch === "\t" || ch >= " ") this.#value += ch;
    }
  }

  #addTyped(text: string): PromptStep {
    const chars = Array.from(text.replace(ESCAPES, ""));
    for (const [index, ch] of chars.entries()) {
      if (ch === "\r" || ch === "\n" || ch === "\u0004") {
        // More text after the line break in the same read: a paste of several lines, not Enter.
        const after = chars.slice(index + 1).join("");
        if (ch !== "\u0004" && /[^\r\n]/.test(after)) return { kind: "several-lines" };
        // A paste's last line break (copied with the text) is not part of it, as with a piped value.
        return { kind: "done", value: this.#pasted ? this.#value.replace(/\n$/, "") : this.#value };
      }
      if (ch === "\u0003") return { kind: "cancelled" };
      if (ch === "\u007f" || ch === "\b") this.#value = Array.from(this.#value).slice(0, -1).join("");
      else if (ch === "\u0015") this.#value = "";
      else if (ch >= " ") this.#value += ch;
    }
    return { kind: "more" };
  }
}

/** Prompts on stderr and reads a value from the terminal on stdin, without echo. */
export function promptHidden(prompt: string): Promise<string> {
  const stdin = process.stdin;
  const terminal = process.stderr.isTTY === true;
  // Raw mode (no echo) before the prompt, so nothing typed after the prompt can be echoed.
  stdin.setRawMode(true);
  stdin.setEncoding("utf8");
  stdin.resume();
  process.stderr.write(`${terminal ? "\u001b[?2004h" : ""}${prompt}`);
  return new Promise((resolve, reject) => {
    const line = new HiddenLine();
    const finish = () => {
      stdin.off("data", onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write(`${terminal ? "\u001b[?2004l" : ""}\n`);
    };
    const onData = (chunk: string) => {
      const step = line.feed(chunk);
      if (step.kind === "more") return;
      finish();
      if (step.kind === "done") resolve(step.value);
      else if (step.kind === "cancelled") reject(new McpmgrError("CANCELLED", "cancelled", { exitCode: 130 }));
      else
        reject(
          new McpmgrError(
            "INVALID_ARGUMENT",
            "the value pasted has several lines, and this terminal sent them as typed lines: nothing was saved",
            {
              hint: "pipe a value of several lines in instead: mcpmgr secret set NAME < FILE",
              exitCode: 2,
            },
          ),
        );
    };
    stdin.on("data", onData);
  });
}
