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
import { currentStopSignals, signalExitCode } from "./signals.ts";

const PASTE_START = "\u001b[200~";
const PASTE_END = "\u001b[201~";
/** Escape sequences (arrow keys and the like) are no part of a value. */
const ESCAPES = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b[O]?./g;

/**
 * An escape sequence the read ended inside: a lone ESC, a CSI not yet at its final byte (`ESC [`, `ESC [1;5`,
 * `ESC [20`, a paste marker's start among them) or SS3 without its key (`ESC O`). Bounded, as no key's
 * sequence is long: an ESC [ followed by endless digits is not held for ever.
 */
const UNFINISHED_ESCAPE = /\u001b(?:\[[0-9;?]{0,16}[ -/]{0,2}|O)?$/;

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
  /**
   * An escape sequence the terminal's read cut off (a paste marker, an arrow key: UNFINISHED_ESCAPE), kept
   * for the next read, where it is whole again. Dropped instead, its end would be read as typed text
   * (`ESC [1;5` | `D` put "1;5D" in the value). A lone ESC whose next read goes on with no `[` or `O`
   * was the Escape key, and goes as before.
   */
  #pending = "";
  /** A paste's read ended with CR: an LF starting the next one is the same CRLF line break, not another. */
  #pastedCR = false;

  feed(chunk: string): PromptStep {
    let rest = this.#pending === "\u001b" && !/^[[O]/.test(chunk) ? chunk : this.#pending + chunk;
    this.#pending = "";
    const unfinished = UNFINISHED_ESCAPE.exec(rest);
    if (unfinished !== null) {
      this.#pending = unfinished[0];
      rest = rest.slice(0, unfinished.index);
    }
    while (rest.length > 0) {
      if (this.#inPaste) {
        const end = rest.indexOf(PASTE_END);
        const pasted = end === -1 ? rest : rest.slice(0, end);
        // Ctrl-C still cancels: a paste whose end marker never comes (a terminal's fault, a paste cut off)
        // kept every key inside it, and the prompt could only be killed. No text copied holds one.
        if (pasted.includes("\u0003")) return { kind: "cancelled" };
        this.#addPasted(pasted);
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
      this.#pastedCR = false;
      rest = rest.slice(start + PASTE_START.length);
    }
    return { kind: "more" };
  }

  /** Inside a bracketed paste: line breaks (CR, LF, CRLF) are the value's own, as LF. */
  #addPasted(text: string): void {
    const own = this.#pastedCR && text.startsWith("\n") ? text.slice(1) : text;
    if (text.length > 0) this.#pastedCR = text.endsWith("\r");
    for (const ch of own.replace(/\r\n?/g, "\n").replace(ESCAPES, "")) {
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
      for (const signal of currentStopSignals()) process.off(signal, onSignal);
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
    // Killed at the prompt (SIGTERM, a closed terminal): the terminal is put back first. Left in bracketed
    // paste, a shell without its own handling of it (sh, dash) and programs run after it got every
    // paste wrapped in ESC [200~ … ESC [201~.
    const onSignal = (signal: NodeJS.Signals) => {
      finish();
      reject(new McpmgrError("CANCELLED", `${signal}: cancelled`, { exitCode: signalExitCode(signal) }));
    };
    for (const signal of currentStopSignals()) process.on(signal, onSignal);
    stdin.on("data", onData);
  });
}
