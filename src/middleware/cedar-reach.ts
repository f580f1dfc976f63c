/**
 * Reaching the Cedar evaluator's socket for a client (cedar-client.ts): a connection to the one that
 * answers there, or a new evaluator started (cedar-start.ts) and waited for when nobody does, with
 * typed errors that point at the evaluator's log when it cannot be started.
 */
import { accessSync, constants } from "node:fs";
import type { Socket } from "node:net";
import { dirname } from "node:path";
import { errorMessage, McpmgrError } from "../errors.ts";
import { privateSocketFolder } from "./cedar-socket.ts";
import type { EvaluatorAccess, StartingEvaluator } from "./cedar-start.ts";

/** How long a client waits for the evaluator it started to listen. */
export const START_WAIT_MS = 5_000;

/** A connection to the evaluator, started when none answers. */
export async function reachEvaluator(access: EvaluatorAccess, deadline: number): Promise<Socket> {
  const path = access.socketPath;
  privateSocketFolder(path);
  let socket = await tryConnect(path);
  if (socket === undefined) {
    const starting = start(access);
    while (socket === undefined && Date.now() < deadline) {
      const failure = starting.failure();
      if (failure !== undefined) throw unavailable(access, failure);
      await Bun.sleep(20);
      socket = await tryConnect(path);
    }
  }
  if (socket === undefined) throw unavailable(access, `nothing answers on ${path} within ${START_WAIT_MS / 1000} s`);
  return socket;
}

/** Where to look when the evaluator cannot be reached. */
export function evaluatorLogHint(access: EvaluatorAccess): string {
  return `its log says why: ${access.logPath}; \`mcpmgr version\` checks the installation`;
}

/** Starts an evaluator; one that could not make its socket would fail unseen: that is told first. */
function start(access: EvaluatorAccess): StartingEvaluator {
  const folder = dirname(access.socketPath);
  try {
    accessSync(folder, constants.W_OK | constants.X_OK);
  } catch (err) {
    throw new McpmgrError(
      "CEDAR_EVALUATOR_UNAVAILABLE",
      `the Cedar evaluator cannot make its socket in ${folder} (${errorMessage(err)})`,
      { hint: `make ${folder} writable for you (chmod 700 ${folder}), or remove it: mcpmgr makes it again` },
    );
  }
  return access.start();
}

function unavailable(access: EvaluatorAccess, why: string): McpmgrError {
  return new McpmgrError("CEDAR_EVALUATOR_UNAVAILABLE", `the Cedar evaluator could not be started: ${why}`, {
    hint: evaluatorLogHint(access),
  });
}

/** A connection to the socket, or undefined when nobody answers there. */
function tryConnect(path: string): Promise<Socket | undefined> {
  const { createConnection } = require("node:net") as typeof import("node:net");
  return new Promise((resolve) => {
    const socket = createConnection(path);
    socket.once("connect", () => {
      socket.removeAllListeners("error");
      resolve(socket);
    });
    socket.once("error", () => {
      socket.destroy();
      resolve(undefined);
    });
  });
}
