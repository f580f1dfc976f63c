/**
 * What the Cedar evaluator (cedar-evaluator.ts, one process per user) and its clients
 * (cedar-client.ts, in every process that serves policies) say to each other over its Unix
 * socket: one JSON object a line, each way. A client loads its policy set once per connection
 * (`load`, answered with what the policies read), then asks decisions in batches (`decide`,
 * answered with one decision per question, in order). Frames are bounded on both sides; a line
 * past the bound, or one that is not a frame, ends that connection only. Nothing here loads the
 * Cedar engine: the clients' processes must not pay for it.
 */
import type { CedarValue } from "./cedar-context.ts";

/**
 * The frames' version, in the socket's name (state/cedar-socket-path.ts): a client after an upgrade
 * that changes them starts an evaluator of its own instead of speaking to the old one. Raised with
 * any change here (it lives there: the runtimes, below this layer, compute the socket's folder).
 */
export { WIRE_VERSION } from "../state/cedar-socket-path.ts";

/** The longest line either side reads: the policy file (at most 16 MiB) with room to spare. */
export const MAX_FRAME_BYTES = 40 * 2 ** 20;
/**
 * The longest frame of questions: the evaluator reads a frame at once, on the thread that decides
 * for every client, so a client splits a longer batch into several (one question past it is denied
 * unasked: cedar-cost.ts bounds a question far below). Reading 4 MiB takes some 40 ms.
 */
export const MAX_DECIDE_FRAME_BYTES = 4 * 2 ** 20;

export interface Decision {
  readonly allowed: boolean;
  /** Why not, for the audit line. */
  readonly reason?: string;
  /** Why not, for the client too: what in its own request Cedar could not hold. */
  readonly unmappable?: boolean;
  /** Denied by something other than the lack of a permit: a forbid policy, or one that could not be evaluated. */
  readonly forbidden?: boolean;
  /** The forbid policies that matched (a denial Cedar could evaluate in full); absent otherwise. */
  readonly forbiddenBy?: readonly string[];
}

/** One question: `strict` for a call decided with its arguments (a forbid that cannot be evaluated denies). */
export interface DecisionRequest {
  readonly subject: string;
  readonly action: string;
  readonly type: string;
  readonly id: string;
  readonly context: Readonly<Record<string, CedarValue>>;
  readonly strict: boolean;
}

/** What policies read of the context (cedar-policies.ts `ContextReads`), as JSON. */
export interface WireReads {
  readonly whole: boolean;
  readonly attributes: readonly string[];
  readonly nested: readonly string[];
}

/** What every policy reads, and what those scoped to one resource read (with the former). */
export interface WireFacts {
  readonly everywhere: WireReads;
  readonly scoped: readonly (readonly [type: string, id: string, reads: WireReads])[];
}

export type ClientFrame =
  | {
      readonly op: "load";
      readonly n: number;
      readonly policies: string;
      readonly entities: readonly unknown[];
      /** Checked as `--authz-config` checks a file (they come from one), not only parsed. */
      readonly check?: boolean;
    }
  | { readonly op: "decide"; readonly n: number; readonly requests: readonly DecisionRequest[] };

export type EvaluatorFrame =
  | { readonly n: number; readonly facts: WireFacts }
  | { readonly n: number; readonly decisions: readonly Decision[] }
  /** `invalid`: the policies themselves are wrong (an option error, with its hint); otherwise the evaluator failed. */
  | { readonly n: number; readonly error: string; readonly invalid?: true; readonly hint?: string };

/**
 * Splits a byte stream into lines no longer than `max`, handing each one over as text. `push`
 * returns false once a line is too long: the connection must end, nothing more is read from it.
 */
export class LineReader {
  readonly #max: number;
  readonly #onLine: (text: string) => void;
  #parts: Uint8Array[] = [];
  #held = 0;
  readonly #decoder = new TextDecoder();

  constructor(max: number, onLine: (text: string) => void) {
    this.#max = max;
    this.#onLine = onLine;
  }

  push(chunk: Uint8Array): boolean {
    let start = 0;
    for (let end = chunk.indexOf(10); end !== -1; end = chunk.indexOf(10, start)) {
      if (this.#held + end - start > this.#max) return false;
      const piece = chunk.subarray(start, end);
      const line = this.#parts.length === 0 ? piece : Buffer.concat([...this.#parts, piece]);
      this.#parts = [];
      this.#held = 0;
      start = end + 1;
      this.#onLine(this.#decoder.decode(line));
    }
    if (start < chunk.length) {
      this.#held += chunk.length - start;
      if (this.#held > this.#max) return false;
      // Copied: the runtime may reuse the chunk's buffer for the next read.
      this.#parts.push(chunk.slice(start));
    }
    return true;
  }
}
