/**
 * What `proxy stdio`'s relay (stdio-relay.ts) makes of a request it could not deliver: the error answer
 * the client gets, and whether the failure means a workload's endpoint went away (it stopped, or moved
 * to another port) so the relay looks the workload up again before answering so.
 */
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { errorMessage, McpmgrError } from "../../errors.ts";
import { AnswerTooLarge } from "../answer-limit.ts";
import { JsonRpcCode } from "../jsonrpc.ts";

export const LOST_ANSWER =
  "the remote ended the MCP session while this request was in progress (it restarted): its answer is lost, and whether it was carried out is not known";

/** The error's message, with its hint when it is mcpmgr's own (a workload stopped): the client's user sees only this. */
export function withHint(err: unknown): string {
  const text = errorMessage(err);
  return err instanceof McpmgrError && err.hint !== undefined ? `${text} (hint: ${err.hint})` : text;
}

/** Refused for want of credentials: a question of authentication, not of eras, nor of reaching the remote. */
export function refusedCredentials(err: unknown): err is StreamableHTTPError {
  return err instanceof StreamableHTTPError && (err.code === 401 || err.code === 403);
}

/**
 * A 400 whose JSON-RPC error speaks of the session: the remote does not know the session the request carried.
 * MCP (2025-06-18) answers a session the server ended with 404, and a request with no session ID at all with
 * 400; server-everything's own streamable HTTP mode answers an unknown ID with 400 too ("Bad Request: No valid
 * session ID provided"). Only the body tells them apart: any other 400 (invalid params, an unsupported protocol
 * version) is the request's own failure, never a reason to open a new session. The caller checks that the
 * request carried a session ID. (The SDK puts a POST's answer in the message; a GET's is not there.)
 */
export function unknownSession400(err: unknown): boolean {
  if (!(err instanceof StreamableHTTPError) || err.code !== 400) return false;
  const body = /Error POSTing to endpoint: (.*)$/s.exec(err.message)?.[1];
  if (body === undefined) return false;
  try {
    const message = (JSON.parse(body) as { error?: { message?: unknown } } | null)?.error?.message;
    return typeof message === "string" && /\bsession\b/i.test(message);
  } catch {
    return false;
  }
}

/** The error answer to request `id`, which could not be delivered (`err`). */
export function undelivered(id: string | number, err: unknown): JSONRPCMessage {
  const text = errorMessage(err);
  return {
    jsonrpc: "2.0",
    id,
    error:
      err instanceof AnswerTooLarge
        ? { code: JsonRpcCode.internalError, message: text }
        : refusedCredentials(err)
          ? { code: -32000, message: `the remote MCP server refused the request (HTTP ${err.code}): ${text}` }
          : { code: -32000, message: `mcpmgr could not reach the remote MCP server: ${withHint(err)}` },
  };
}

/**
 * Whether the endpoint is gone from where the relay sends: a workload no longer served there (stopped, moved:
 * workload/live-workload.ts refuses before connecting) or a port nobody listens on any more.
 */
export function endpointGone(err: unknown): boolean {
  if (err instanceof McpmgrError)
    return (
      err.code === "WORKLOAD_NOT_RUNNING" ||
      err.code === "WORKLOAD_NOT_FOUND" ||
      err.code === "WORKLOAD_ENDED_DURING_REQUEST"
    );
  const code = (err as { code?: unknown } | undefined)?.code;
  return code === "ConnectionRefused" || code === "ECONNREFUSED";
}

/**
 * The workload's supervisor was gone once the answer's headers came (workload/live-workload.ts): the request
 * reached the server, which may have carried it out. It is answered as lost, never sent again in a new session
 * (a tool call would run twice); only a refusal before sending, or a 404 for the session, may be resent.
 */
export function answerLost(err: unknown): boolean {
  return err instanceof McpmgrError && err.code === "WORKLOAD_ENDED_DURING_REQUEST";
}

/** The error answer to request `id`, sent to a workload that ended before its answer came (`answerLost`). */
export function lostAnswer(id: string | number, err: unknown): JSONRPCMessage {
  return {
    jsonrpc: "2.0",
    id,
    error: {
      code: -32000,
      message: `the workload ended while this request was in progress: its answer is lost, and whether it was carried out is not known (${withHint(err)})`,
    },
  };
}
