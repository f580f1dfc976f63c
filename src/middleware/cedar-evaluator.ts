/**
 * The Cedar evaluator: one process per user (per mcpmgr home) that holds the Cedar engine and decides
 * for every workload, gateway or foreground run with `--authz-config` (`mcpmgr __cedar-evaluator`,
 * started by the first client that finds none, cedar-client.ts). The engine's WebAssembly costs
 * JavaScriptCore about 20 MiB once compiled and tiered up; paid here once instead of in each supervisor.
 *
 * Each connection is one endpoint: it loads its policy set (kept under an id of its own, given back
 * when it closes), then asks decisions (cedar-wire.ts). A frame that is too long, not JSON or not a
 * frame ends that connection only. The evaluator exits on its own a few seconds after its last
 * connection closes, and at once after the engine traps (cedar-engine.ts `EngineTrap`): the
 * request is answered as a failure, and the next client starts a clean evaluator. It logs no
 * policies, contexts, claims or arguments: they may hold secrets.
 *
 * Starting: the socket's folder must be private (cedar-socket.ts). Under a lock, an evaluator that
 * finds another one answering on the socket leaves (two clients that started one each end with
 * one), and one that finds a socket nobody answers on (a crashed evaluator's) takes its place.
 */
import { lstatSync, unlinkSync } from "node:fs";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { engineTrapped, type PolicyProblem } from "../config/authz-config.ts";
import { errorMessage } from "../errors.ts";
import { maxJsonDepth, nestsDeeperThan, parseExactJson } from "../proxy/stdio-bridge/json-text.ts";
import { withLock } from "../state/lock.ts";
import { isObject } from "../objects.ts";
import { contextSize, MAX_CONTEXT_ITEMS, OVERSIZED_REASON } from "./cedar-cost.ts";
import type { EngineTrap, LoadedSet } from "./cedar-engine.ts";
import { privateSocketFolder } from "./cedar-socket.ts";
import { Turns } from "./cedar-turns.ts";
import {
  type Decision,
  type DecisionRequest,
  type EvaluatorFrame,
  LineReader,
  MAX_DECIDE_FRAME_BYTES,
  MAX_FRAME_BYTES,
} from "./cedar-wire.ts";

/** How long the evaluator stays without connections before it exits. */
export const IDLE_EXIT_MS = 3_000;
/** Answers a client has not read yet, past which it is cut off (it asks and never reads). */
const MAX_UNREAD_BYTES = 2 * MAX_FRAME_BYTES;
/** Frames of one connection waiting for their turn, past which its socket is not read until they are answered. */
const MAX_QUEUED_FRAMES = 8;

export interface EvaluatorOptions {
  readonly socketPath: string;
  /** Lifecycle lines only (started, idle, a trap): never a policy or a request. */
  readonly log: (text: string) => void;
  readonly idleExitMs?: number;
}

type Engine = typeof import("./cedar-engine.ts");

/**
 * Serves until idle; resolves "another" when an evaluator already answers on the socket, "idle" when
 * this one served and its last client left, "trapped" after an engine trap.
 */
export async function serveEvaluator(options: EvaluatorOptions): Promise<"another" | "idle" | "trapped"> {
  const folder = privateSocketFolder(options.socketPath);
  const lockPath = join(folder, "evaluator.lock");
  // Loaded before listening: a connection is served as soon as it comes (the engine compiles in ~100 ms).
  const engine: Engine = await import("./cedar-engine.ts");
  // Handled from the first connection on, which may come before the lock is given back.
  const server = createServer();
  let ours: number | undefined;
  let started!: () => void;
  const served = new Promise<"idle" | "trapped">((resolve) => {
    const connections = new Set<Socket>();
    const freeIds: string[] = [];
    let nextId = 0;
    let idleTimer: ReturnType<typeof setTimeout> | undefined;
    let closing: "idle" | "trapped" | undefined;
    /**
     * Set the moment the engine traps, not when the trapping socket's end lets `stopListening` run
     * (up to a second later): other connections' frames already waiting for their turn are denied
     * without a call into the instance, whose memory is no longer vouched for.
     */
    let broken = false;
    /** No longer listening: the last client to leave ends the evaluator. */
    let shut = false;
    // A frame that throws ends its own connection (its client denies what it waits for: fails closed).
    const turns = new Turns(undefined, (socket, error) => {
      options.log(`cedar evaluator: a frame failed unexpectedly (${errorMessage(error)}); its connection is closed`);
      (socket as Socket).destroy();
    });
    /** Questions denied for their size: one log line a second at most, with how many. */
    let oversizedSince = 0;
    let oversizedLoggedAt = Number.NEGATIVE_INFINITY;
    const oversized = (size: { items: number; text: number }) => {
      oversizedSince++;
      const now = performance.now();
      if (now - oversizedLoggedAt < 1_000) return;
      options.log(
        `cedar evaluator: denied ${oversizedSince} question(s) too large to evaluate (the last: ${size.items > MAX_CONTEXT_ITEMS ? "over " : ""}${Math.min(size.items, MAX_CONTEXT_ITEMS + 1)} values, ${size.text} characters counted)`,
      );
      oversizedSince = 0;
      oversizedLoggedAt = now;
    };

    /**
     * Stops taking clients: a new one starts another evaluator; those connected are served to their
     * end. Idle, it first looks again, under the lock a starting evaluator takes, for a client that
     * connected while it waited for the lock: that one stays served here, on the socket (it would
     * otherwise be served by an evaluator nobody else reaches, and the next client start a second).
     * From the look to the socket's end nothing runs in between that could accept another.
     */
    const stopListening = async (why: "idle" | "trapped") => {
      if (closing !== undefined) return;
      closing = why;
      if (why === "idle") options.log("cedar evaluator: no client for a while; leaving");
      let stays = false;
      await withLock(lockPath, () => {
        if (why === "idle" && connections.size > 0) {
          stays = true;
          return;
        }
        if (lstatSync(options.socketPath, { throwIfNoEntry: false })?.ino === ours) unlinkIfPresent(options.socketPath);
        server.close();
        shut = true;
      }).catch((err: unknown) => {
        options.log(`cedar evaluator: could not take its lock to leave (${errorMessage(err)}); leaving all the same`);
        server.close();
        shut = true;
      });
      if (stays) {
        closing = undefined;
        options.log("cedar evaluator: a client came meanwhile; staying");
        if (connections.size === 0) armIdle();
        return;
      }
      if (why === "trapped" || connections.size === 0) resolve(why);
    };
    const armIdle = () => {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => void stopListening("idle"), options.idleExitMs ?? IDLE_EXIT_MS);
    };
    started = armIdle;

    server.on("connection", (socket) => {
      clearTimeout(idleTimer);
      connections.add(socket);
      options.log(`cedar evaluator: a client connected (${connections.size} connected)`);
      let set: LoadedSet | undefined;
      const send = (frame: EvaluatorFrame) => {
        if (socket.destroyed) return;
        socket.write(`${JSON.stringify(frame)}\n`);
        if (socket.writableLength > MAX_UNREAD_BYTES) refuse("it does not read its answers");
      };
      /** Ends a connection that broke the protocol (its frames are forgotten). */
      const refuse = (why: string) => {
        if (socket.destroyed) return;
        options.log(`cedar evaluator: a client's connection was ended: ${why}`);
        turns.drop(socket);
        socket.destroy();
      };
      /** The instance is not trusted after a trap: this request fails, and the evaluator leaves for a clean one. */
      const trapped = (n: number, err: EngineTrap, loading = false) => {
        broken = true;
        options.log(`cedar evaluator: ${err.message}; exiting so that the next client starts a clean one`);
        const cause = err.cause instanceof Error ? err.cause : err;
        if (loading) send({ n, ...invalidFrame(engineTrapped(cause)) });
        else send({ n, error: "the Cedar engine failed on this request; the evaluator restarts" });
        socket.end(() => void stopListening("trapped"));
        setTimeout(() => void stopListening("trapped"), 1_000).unref();
      };
      const free = () => {
        if (set === undefined || broken) return;
        const { id } = set;
        set = undefined;
        try {
          engine.freePolicySet(id);
          freeIds.push(id);
        } catch {
          // An id the engine could not reset is not reused.
        }
      };
      const load = (frame: Extract<ClientRequest, { op: "load" }>) => {
        free();
        const id = freeIds.pop() ?? `mcpmgr-${++nextId}`;
        try {
          const outcome = engine.loadPolicySet(id, frame.policies, frame.entities, frame.check === true);
          if ("invalid" in outcome) {
            freeIds.push(id);
            send({ n: frame.n, ...invalidFrame({ why: outcome.invalid, hint: outcome.hint }) });
            return;
          }
          set = outcome.set;
          send({ n: frame.n, facts: outcome.facts });
        } catch (err) {
          if (err instanceof engine.EngineTrap) trapped(frame.n, err, true);
          else send({ n: frame.n, error: `the policies could not be loaded: ${errorMessage(err)}` });
        }
      };
      /** A batch, decided a slice at a time (cedar-turns.ts): true once answered. */
      const decider = (frame: Extract<ClientRequest, { op: "decide" }>) => {
        const decisions: Decision[] = [];
        return (until: number): boolean => {
          if (socket.destroyed) return true;
          if (broken) {
            send({ n: frame.n, error: "the Cedar engine failed; the evaluator restarts" });
            return true;
          }
          if (set === undefined) {
            send({ n: frame.n, error: "no policy set loaded on this connection" });
            return true;
          }
          // At least one question a slice, checked before it is read: a frame may hold none at all.
          while (decisions.length < frame.requests.length) {
            const request = frame.requests[decisions.length] as DecisionRequest;
            const size = contextSize(request.context);
            if (size.over) {
              oversized(size);
              decisions.push({ allowed: false, reason: OVERSIZED_REASON, forbidden: true });
            } else {
              try {
                decisions.push(engine.evaluate(set, request));
              } catch (err) {
                if (err instanceof engine.EngineTrap) trapped(frame.n, err);
                else send({ n: frame.n, error: `the evaluator failed: ${errorMessage(err)}` });
                return true;
              }
            }
            if (performance.now() >= until) break;
          }
          if (decisions.length < frame.requests.length) return false;
          send({ n: frame.n, decisions });
          return true;
        };
      };
      let paused = false;
      const onFrame = (text: string) => {
        // Only a load may be longer (cedar-wire.ts): a longer frame is refused before it is read.
        if (text.length > MAX_DECIDE_FRAME_BYTES && !text.startsWith('{"op":"load"'))
          return refuse(`a frame of questions longer than ${MAX_DECIDE_FRAME_BYTES} bytes`);
        const frame = readFrame(text);
        if (frame === undefined) return refuse("a frame that is not JSON or not one of the protocol's");
        // In order, in this connection's turns: a load changes the set the next questions are asked of.
        const job =
          frame.op === "decide"
            ? decider(frame)
            : () => {
                // A client loading now (one that connected after the trap, before the socket is let
                // go) is dropped unanswered: it tries again, as when an evaluator leaves idle, and
                // reaches the clean one the next start makes, instead of failing its open.
                if (broken) refuse("the engine trapped; the next evaluator loads its policies");
                else load(frame);
                return true;
              };
        turns.add(socket, (until) => {
          const done = job(until);
          if (done && paused && turns.waiting(socket) <= MAX_QUEUED_FRAMES) {
            paused = false;
            socket.resume();
          }
          return done;
        });
        // A client that sends faster than it is answered waits: its socket is read no further for now.
        if (!paused && turns.waiting(socket) >= MAX_QUEUED_FRAMES) {
          paused = true;
          socket.pause();
        }
      };
      const reader = new LineReader(MAX_FRAME_BYTES, onFrame);
      socket.on("data", (chunk: Buffer) => {
        if (!reader.push(chunk)) refuse(`a frame longer than ${MAX_FRAME_BYTES} bytes`);
      });
      socket.on("error", () => socket.destroy());
      socket.on("close", () => {
        connections.delete(socket);
        turns.drop(socket);
        free();
        options.log(`cedar evaluator: a client left (${connections.size} connected)`);
        if (connections.size > 0) return;
        if (shut && closing !== undefined) resolve(closing);
        // Leaving but not done with the lock yet: stopListening ends it (or stays for a newcomer).
        else if (closing === undefined) armIdle();
      });
    });
  });
  const listening = await withLock(lockPath, async () => {
    if (await answers(options.socketPath)) return false;
    unlinkIfPresent(options.socketPath);
    await listen(server, options.socketPath);
    // Said in the same turn as listen resolves, before any connection event is handled, so that a
    // client's "connected" line always comes after it in the log.
    options.log(`cedar evaluator: listening on ${options.socketPath} (pid ${process.pid})`);
    return true;
  });
  if (!listening) {
    options.log("cedar evaluator: another evaluator answers on the socket; leaving it that one");
    return "another";
  }
  ours = lstatSync(options.socketPath).ino;
  started();
  return served;
}

const invalidFrame = (problem: PolicyProblem) => ({ error: problem.why, invalid: true as const, hint: problem.hint });

type ClientRequest =
  | { op: "load"; n: number; policies: string; entities: unknown[]; check?: unknown }
  | { op: "decide"; n: number; requests: DecisionRequest[] };

/** A line as a frame, or undefined when it is not one (the connection ends). */
function readFrame(text: string): ClientRequest | undefined {
  // Bounded before parsing, as every body mcpmgr reads: a deep enough one would overflow the stack.
  if (nestsDeeperThan(text, maxJsonDepth)) return undefined;
  let value: unknown;
  try {
    value = parseExactJson(text);
  } catch {
    return undefined;
  }
  if (!isObject(value) || typeof value.n !== "number") return undefined;
  if (value.op === "load" && typeof value.policies === "string" && Array.isArray(value.entities))
    return value as ClientRequest;
  if (value.op === "decide" && Array.isArray(value.requests) && value.requests.every(isRequest))
    return value as ClientRequest;
  return undefined;
}

function isRequest(value: unknown): value is DecisionRequest {
  return (
    isObject(value) &&
    typeof value.subject === "string" &&
    typeof value.action === "string" &&
    typeof value.type === "string" &&
    typeof value.id === "string" &&
    isObject(value.context) &&
    typeof value.strict === "boolean"
  );
}

/** Whether something answers on the socket (an evaluator already serving it). */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection(path);
    const done = (yes: boolean) => {
      socket.destroy();
      resolve(yes);
    };
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
    setTimeout(() => done(false), 1_000).unref();
  });
}

function unlinkIfPresent(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Not there: nothing to take the place of.
  }
}

function listen(server: Server, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    // The folder is 0700: only this user reaches the socket, whatever its own mode.
    server.listen(path, () => {
      server.off("error", reject);
      resolve();
    });
  });
}
