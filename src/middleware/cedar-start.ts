/**
 * Where the Cedar evaluator of this environment's mcpmgr home listens and logs, and how a client
 * (cedar-client.ts) starts one: `mcpmgr __cedar-evaluator SOCKET LOG` from this executable,
 * detached, watched only for a failure to spawn or an exit before it answers (the client then says
 * so at once, pointing to the log, instead of waiting out the start).
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { errorMessage } from "../errors.ts";
import { resolvePaths } from "../state/paths.ts";
import { evaluatorSocketPath } from "./cedar-socket.ts";

/** An evaluator being started: why it failed, once it did (its spawn failed, or it exited). */
export interface StartingEvaluator {
  failure(): string | undefined;
}

/** Where the evaluator listens, where it logs, and how to start one. */
export interface EvaluatorAccess {
  readonly socketPath: string;
  readonly logPath: string;
  readonly start: () => StartingEvaluator;
}

/** The evaluator of this environment's mcpmgr home, started from this executable. */
export function evaluatorAccess(env: NodeJS.ProcessEnv = process.env): EvaluatorAccess {
  const paths = resolvePaths(env);
  const socketPath = evaluatorSocketPath(paths, process.getuid?.(), env);
  const logPath = join(paths.logDir, "cedar-evaluator.log");
  return { socketPath, logPath, start: () => startEvaluator([socketPath, logPath], env) };
}

/**
 * `mcpmgr __cedar-evaluator SOCKET LOG` from this executable, detached and with no stdio: it
 * outlives this process while other clients use it. From source, `src/main.ts` is found from this
 * file, not from Bun.main (a test runner's). As workload/self-command.ts tells a compiled binary.
 */
export function startEvaluator(args: readonly string[], env: NodeJS.ProcessEnv): StartingEvaluator {
  const { spawn } = require("node:child_process") as typeof import("node:child_process");
  const compiled = Bun.main.startsWith("/$bunfs/") || /^[A-Z]:\\~BUN\\/.test(Bun.main);
  const entry = compiled ? [] : [fileURLToPath(new URL("../main.ts", import.meta.url))];
  // Only what a Bun program needs, and JavaScriptCore's own settings (the bench's experiments).
  const passed = Object.entries(env).filter(
    ([name]) => name === "PATH" || name === "HOME" || name.startsWith("BUN_JSC_"),
  );
  let failure: string | undefined;
  const child = spawn(process.execPath, [...entry, "__cedar-evaluator", ...args], {
    detached: true,
    stdio: "ignore",
    cwd: "/",
    env: Object.fromEntries(passed),
  });
  child.on("error", (err) => {
    failure = `${process.execPath} could not be run (${errorMessage(err)})`;
  });
  // 0 is an evaluator that found another one answering: not a failure, the socket answers.
  child.on("exit", (code, signal) => {
    if (code !== 0) failure ??= `it exited at once (${signal ?? `exit code ${code}`})`;
  });
  child.unref();
  return { failure: () => failure };
}
