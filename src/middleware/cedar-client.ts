/**
 * An endpoint's side of the Cedar evaluator (cedar-evaluator.ts): one connection per policy set,
 * over which the set is loaded once and decisions are asked. The evaluator is started (detached,
 * `mcpmgr __cedar-evaluator SOCKET LOG`, cedar-start.ts) when nobody answers on its socket (cedar-reach.ts);
 * several clients starting one at once end with one (the evaluator's lock). Questions asked in the
 * same turn of the event loop go in one frame (several past MAX_DECIDE_FRAME_BYTES): a list
 * filtered by the policies is one round trip.
 *
 * It fails closed and heals: an evaluator that cannot be reached, does not answer within
 * ANSWER_TIMEOUT_MS or goes away (a crash, a `kill -9`) makes the questions in flight denials whose
 * reason says so (`transient`: never remembered); the next question connects again (starting an
 * evaluator when none answers), loads the set again and is decided as usual. Its process goes on
 * serving whatever happens to the evaluator.
 */
import type { Socket } from "node:net";
import type { AuthzConfig } from "../config/authz-config.ts";
import { errorMessage, McpmgrError } from "../errors.ts";
import { type PolicyReads, readsFromWire } from "./cedar-policies.ts";
import { evaluatorLogHint, reachEvaluator, START_WAIT_MS } from "./cedar-reach.ts";
import { type EvaluatorAccess, evaluatorAccess } from "./cedar-start.ts";
import { OVERSIZED_REASON } from "./cedar-cost.ts";
import {
  type Decision,
  type DecisionRequest,
  type EvaluatorFrame,
  LineReader,
  MAX_DECIDE_FRAME_BYTES,
  MAX_FRAME_BYTES,
} from "./cedar-wire.ts";

/** How long a question waits for its answer before it is a denial. */
export const ANSWER_TIMEOUT_MS = 5_000;
/** How long loading the policy set may take (the engine parses them; a large file takes a while). */
const LOAD_TIMEOUT_MS = 20_000;
/** After a failed connection, questions are denied at once for this long (no start per question). */
const RETRY_AFTER_MS = 500;
/** The pause before the second try of a connection dropped before its load was answered (it doubles). */
const RETRY_FIRST_PAUSE_MS = 20;

/** A denial that is not the policies' answer: the evaluator could not be asked. Never remembered. */
export interface TransientDenial extends Decision {
  readonly transient: true;
}

/** The connection closed under a frame: the evaluator exited, crashed or dropped it unread. */
class EvaluatorGone extends Error {
  constructor() {
    super("the evaluator's connection closed: it exited or crashed");
  }
}

interface Asked {
  readonly request: DecisionRequest;
  readonly resolve: (decision: Decision) => void;
}

/** Room for questions in one frame (its envelope aside). */
const FRAME_ROOM = MAX_DECIDE_FRAME_BYTES - 64;

type Waiter = (frame: EvaluatorFrame | Error) => void;

export class PolicySetClient {
  readonly #config: AuthzConfig;
  readonly #access: EvaluatorAccess;
  #reads: PolicyReads | undefined;
  #socket: Socket | undefined;
  #connecting: Promise<Socket> | undefined;
  #failed: { at: number; why: string } | undefined;
  #frames = 0;
  readonly #waiting = new Map<number, Waiter>();
  #batch: Asked[] = [];
  /** Told when the evaluator stops answering (and why, again if that changes), and once when it answers again (the workload's log). */
  readonly #log: ((text: string) => void) | undefined;
  /** Why the evaluator does not answer, as last told (told again when the reason changes). */
  #outage: string | undefined;

  constructor(config: AuthzConfig, access: EvaluatorAccess, log?: (text: string) => void) {
    this.#config = config;
    this.#access = access;
    this.#log = log;
  }

  /** What the policies read (known once `open` resolved). */
  get reads(): PolicyReads {
    if (this.#reads === undefined) throw new Error("the policy set is not open yet");
    return this.#reads;
  }

  /** Connects and loads the set: INVALID_OPTION when the evaluator refuses the policies. */
  async open(): Promise<PolicyReads> {
    try {
      await this.#ready();
    } catch (err) {
      if (err instanceof McpmgrError) throw err;
      throw new McpmgrError("INTERNAL", `the Cedar evaluator could not be reached: ${errorMessage(err)}`, {
        hint: "run the command again; if it fails again, report it with the output of `mcpmgr version`",
        cause: err,
      });
    }
    return this.reads;
  }

  /** A decision; never rejects: what stops the evaluator from answering is a transient denial. */
  decide(request: DecisionRequest): Promise<Decision> {
    return new Promise((resolve) => {
      this.#batch.push({ request, resolve });
      if (this.#batch.length === 1) queueMicrotask(() => void this.#flush());
    });
  }

  /** Closes the connection (the evaluator gives the set's room back). */
  close(): void {
    this.#socket?.destroy();
    this.#socket = undefined;
  }

  /** The questions asked in this turn, in frames of at most MAX_DECIDE_FRAME_BYTES. */
  async #flush(): Promise<void> {
    const batch = this.#batch;
    this.#batch = [];
    const frames: { asked: Asked[]; texts: string[]; bytes: number }[] = [];
    for (const asked of batch) {
      const text = JSON.stringify(asked.request);
      const bytes = Buffer.byteLength(text) + 1;
      if (bytes > FRAME_ROOM) {
        // Far past what the evaluator would evaluate (cedar-cost.ts): the policies' answer is the same denial.
        asked.resolve({ allowed: false, reason: OVERSIZED_REASON, forbidden: true });
        continue;
      }
      let frame = frames.at(-1);
      if (frame === undefined || frame.bytes + bytes > FRAME_ROOM) {
        frame = { asked: [], texts: [], bytes: 0 };
        frames.push(frame);
      }
      frame.asked.push(asked);
      frame.texts.push(text);
      frame.bytes += bytes;
    }
    await Promise.all(frames.map(({ asked, texts }) => this.#ask(asked, `[${texts.join(",")}]`)));
  }

  async #ask(batch: readonly Asked[], requests: string): Promise<void> {
    const deny = (why: string) => {
      const decision: TransientDenial = {
        allowed: false,
        reason: `the Cedar evaluator could not decide (${why})`,
        forbidden: true,
        transient: true,
      };
      for (const { resolve } of batch) resolve(decision);
      if (this.#outage !== why)
        this.#log?.(
          `the Cedar evaluator could not decide (${why}): what it must decide is denied until it answers again`,
        );
      this.#outage = why;
    };
    let answer: EvaluatorFrame;
    try {
      // One budget for the connection and the answer: a stuck evaluator accepts connections (the
      // kernel does) and never answers the load, whose own timeout is for large sets; the load goes
      // on for the next questions.
      const deadline = Date.now() + ANSWER_TIMEOUT_MS;
      const socket = await withinTimeout(this.#ready(), ANSWER_TIMEOUT_MS);
      answer = await this.#exchange(
        socket,
        (n) => `{"op":"decide","n":${n},"requests":${requests}}`,
        Math.max(deadline - Date.now(), 1),
      );
    } catch (err) {
      return deny(errorMessage(err));
    }
    if (!("decisions" in answer) || answer.decisions.length !== batch.length)
      return deny("error" in answer ? answer.error : "an answer that does not fit the questions");
    for (const [i, { resolve }] of batch.entries()) resolve(answer.decisions[i] as Decision);
    if (this.#outage !== undefined)
      this.#log?.("the Cedar evaluator answers again: requests are decided by the policies");
    this.#outage = undefined;
  }

  /** The connection with the set loaded: the open one, the one being made, or a new one. */
  #ready(): Promise<Socket> {
    const socket = this.#socket;
    if (socket !== undefined && !socket.destroyed) return Promise.resolve(socket);
    if (this.#connecting !== undefined) return this.#connecting;
    const failed = this.#failed;
    if (failed !== undefined && Date.now() - failed.at < RETRY_AFTER_MS) return Promise.reject(new Error(failed.why));
    this.#connecting = this.#connect().then(
      (made) => {
        this.#connecting = undefined;
        this.#failed = undefined;
        this.#socket = made;
        return made;
      },
      (err: unknown) => {
        this.#connecting = undefined;
        this.#failed = { at: Date.now(), why: errorMessage(err) };
        throw err;
      },
    );
    return this.#connecting;
  }

  /**
   * A connection with the set loaded (INVALID_OPTION when the evaluator refuses the policies). One
   * that ends before the load is answered is tried again while the start's time lasts: an evaluator
   * leaving idle drops the connections the kernel had queued for it but it had not taken yet
   * (cedar-evaluator.ts), and the next try starts a new one.
   */
  async #connect(): Promise<Socket> {
    const deadline = Date.now() + START_WAIT_MS;
    // The first try again at once (the idle race), then after a growing pause: something on the
    // socket that drops every connection (an evaluator refusing the load) is not hammered for 5 s.
    for (let pause = 0; ; pause = Math.min(Math.max(2 * pause, RETRY_FIRST_PAUSE_MS), RETRY_AFTER_MS)) {
      if (pause > 0) await Bun.sleep(Math.min(pause, Math.max(deadline - Date.now(), 0)));
      const socket = await reachEvaluator(this.#access, deadline);
      try {
        return await this.#load(socket);
      } catch (err) {
        if (!(err instanceof EvaluatorGone)) throw err;
        // Not a fault of this installation to report: whatever holds the socket ends every load.
        if (Date.now() >= deadline)
          throw new McpmgrError(
            "CEDAR_EVALUATOR_UNAVAILABLE",
            `the Cedar evaluator could not be reached: it ended each connection before loading the policies, for ${START_WAIT_MS / 1000} s`,
            { hint: evaluatorLogHint(this.#access), cause: err },
          );
      }
    }
  }

  async #load(socket: Socket): Promise<Socket> {
    this.#attach(socket);
    const { policies, entities, source } = this.#config;
    // A file's policies are checked again there (a supervisor checks nothing itself; the file may have changed).
    const set = `"policies":${JSON.stringify(policies)},"entities":${JSON.stringify(entities)},"check":${source !== undefined}`;
    let answer: EvaluatorFrame;
    try {
      answer = await this.#exchange(socket, (n) => `{"op":"load","n":${n},${set}}`, LOAD_TIMEOUT_MS);
    } catch (err) {
      socket.destroy();
      throw err;
    }
    if ("facts" in answer) {
      this.#reads ??= readsFromWire(answer.facts);
      return socket;
    }
    socket.destroy();
    if ("error" in answer && answer.invalid)
      throw new McpmgrError("INVALID_OPTION", `--authz-config ${source ?? "(policies)"}: ${answer.error}`, {
        hint: answer.hint ?? "check the policy syntax (https://docs.cedarpolicy.com)",
      });
    throw new Error("error" in answer ? answer.error : "the evaluator did not load the policies");
  }

  /** Frames from the evaluator go to whoever waits for their number; its end fails them all. */
  #attach(socket: Socket): void {
    const reader = new LineReader(MAX_FRAME_BYTES, (text) => {
      let frame: EvaluatorFrame;
      try {
        frame = JSON.parse(text) as EvaluatorFrame;
      } catch {
        socket.destroy();
        return;
      }
      const waiter = this.#waiting.get(frame.n);
      this.#waiting.delete(frame.n);
      waiter?.(frame);
    });
    socket.on("data", (chunk: Buffer) => {
      if (!reader.push(chunk)) socket.destroy();
    });
    socket.on("error", () => socket.destroy());
    socket.on("close", () => {
      if (this.#socket === socket) this.#socket = undefined;
      const gone = new EvaluatorGone();
      for (const [n, waiter] of this.#waiting) {
        this.#waiting.delete(n);
        waiter(gone);
      }
    });
    // The connection alone does not keep a process alive.
    socket.unref();
  }

  /** Sends a frame (its number filled in) and waits for its answer; a timeout drops the connection. */
  #exchange(socket: Socket, frame: (n: number) => string, timeoutMs: number): Promise<EvaluatorFrame> {
    const n = ++this.#frames;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(n);
        reject(new Error(`the evaluator did not answer within ${timeoutMs / 1000} s`));
        // A wedged evaluator: the next question connects again.
        socket.destroy();
      }, timeoutMs);
      this.#waiting.set(n, (answer) => {
        clearTimeout(timer);
        if (answer instanceof Error) reject(answer);
        else resolve(answer);
      });
      socket.write(`${frame(n)}\n`);
    });
  }
}

/** `promise`, or a rejection after `ms` (its own outcome then goes unobserved, not unhandled). */
function withinTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  promise.catch(() => {});
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`the evaluator did not answer within ${ANSWER_TIMEOUT_MS / 1000} s`)),
      ms,
    );
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

export { type EvaluatorAccess, evaluatorAccess, type StartingEvaluator, startEvaluator } from "./cedar-start.ts";

const opened = new WeakMap<AuthzConfig, Promise<PolicySetClient>>();

/**
 * The open policy set of a configuration, one per process: the Cedar middleware and a gateway's
 * search mode share its connection. A failed open is forgotten, so the next one tries again.
 */
export function openPolicySet(
  config: AuthzConfig,
  options: { readonly access?: EvaluatorAccess; readonly log?: (text: string) => void } = {},
): Promise<PolicySetClient> {
  let open = opened.get(config);
  if (open === undefined) {
    const client = new PolicySetClient(config, options.access ?? evaluatorAccess(), options.log);
    open = client.open().then(() => client);
    opened.set(config, open);
    open.catch(() => opened.delete(config));
  }
  return open;
}
