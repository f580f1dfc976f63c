/**
 * 2026-07-28 requests in front of an older (2025-era) stdio server: the bridge speaks the new
 * revision for it. It answers server/discover from the server's initialize result, refuses
 * what the revision removed, passes the caller's log level on as logging/setLevel, strips what
 * the server must not see (translation.ts), turns the server's own requests into input rounds
 * (input-rounds.ts) and shapes the answer (result-shape.ts), or fails the call with -32021
 * when it failed for want of a capability the client did not declare.
 */
import { JsonRpcCode, type JsonRpcId } from "../jsonrpc.ts";
import type { JsonRpcMessage } from "../mcp-message.ts";
import type { Flight } from "./flight.ts";
import type { ServerInit } from "./handshake.ts";
import { InputRoundKeeper, invalidInputResponses, newRounds, type RoundHost } from "./input-rounds.ts";
import { errorResponse, type LogLevel } from "./messages.ts";
import { isRemovedMethod, mayRequireInput } from "./modern.ts";
import { paramsDigest } from "./request-state.ts";
import { shapeForModernClient } from "./result-shape.ts";
import type { ClientSession } from "./session.ts";
import type { Sink } from "./sink.ts";
import { discoverResult, forOlderServer, missingCapabilityError } from "./translation.ts";

export interface OlderServerHost extends RoundHost {
  /** Forwards a request to the server as a 2026-07-28 client's. */
  forward(session: ClientSession, message: JsonRpcMessage, sink: Sink): Flight | undefined;
  /** The server logs at least this verbosely from now on. */
  raiseLogLevel(level: LogLevel): void;
  /** What the server said about itself in the handshake. */
  server(): ServerInit | undefined;
}

export class OlderServerTranslation {
  readonly #rounds: InputRoundKeeper;
  readonly #host: OlderServerHost;

  constructor(host: OlderServerHost) {
    this.#host = host;
    this.#rounds = new InputRoundKeeper(host);
  }

  /** A 2026-07-28 request, its envelope already checked by the front end. */
  request(session: ClientSession, message: JsonRpcMessage, sink: Sink): void {
    const id = message.id as JsonRpcId;
    const method = message.method as string;
    if (method === "server/discover") {
      sink.send({ jsonrpc: "2.0", id, result: discoverResult(this.#host.server() as ServerInit) });
      return;
    }
    if (isRemovedMethod(method) || method === "subscriptions/listen") {
      sink.send(errorResponse(id, JsonRpcCode.methodNotFound, `Method not found: ${method}`));
      return;
    }
    const params = message.params ?? {};
    const invalid = invalidInputResponses(params.inputResponses);
    if (invalid) {
      sink.send(errorResponse(id, JsonRpcCode.invalidParams, `Invalid params: ${invalid}`));
      return;
    }
    if (params.requestState !== undefined) return this.#rounds.resume(session, message, sink);
    if (session.logLevel !== undefined) this.#host.raiseLogLevel(session.logLevel);
    const flight = this.#host.forward(session, { ...message, params: forOlderServer(params) }, sink);
    if (flight && mayRequireInput(method))
      flight.rounds = newRounds(
        paramsDigest(params),
        session.principal,
        params.inputResponses as Record<string, unknown> | undefined,
      );
  }

  /** The server's answer to a 2026-07-28 request, as that revision shapes it. */
  answer(flight: Flight, answer: JsonRpcMessage): JsonRpcMessage {
    if (answer.error?.code === URL_ELICITATION_REQUIRED)
      return urlElicitationRound(flight.clientId, answer.error, flight.session.capabilities);
    const missing = flight.rounds?.missing;
    // The call failed for want of a capability the client did not declare: the revision names that error.
    const failed = answer.error !== undefined || (answer.result as { isError?: unknown } | undefined)?.isError === true;
    return failed && missing !== undefined && missing.size > 0
      ? missingCapabilityError(flight.clientId, missing)
      : shapeForModernClient(answer, flight.method, this.#host.server()?.serverInfo);
  }

  /** A server request made while serving a 2026-07-28 call: it becomes an input round. */
  serverRequest(flight: Flight, message: JsonRpcMessage): void {
    this.#rounds.serverRequest(flight, message);
  }

  /** The call is over: server requests still waiting for it are refused. */
  release(flight: Flight): void {
    this.#rounds.release(flight);
  }
}

/** 2025-11-25's "visit this page, then call again" error; 2026-07-28 forbids the code on its wire. */
export const URL_ELICITATION_REQUIRED = -32042;

/**
 * An older server's -32042 as 2026-07-28 says it: an input round asking the client to open each URL
 * (elicitation/create in URL mode, without 2025-11-25's elicitationId). The server keeps nothing
 * between the calls, so there is no requestState: the client's retry is a new call, as the older
 * revision expected. The keys cannot meet those of the server's own requests in that call
 * (input-rounds.ts), so the answers it carries are never taken for them. A client that did not
 * declare URL-mode elicitation gets -32021 naming it. `id`: the client's request id; `capabilities`:
 * the client capabilities its request declared. (The gateway answers its 2026-07-28 callers with it too.)
 */
export function urlElicitationRound(
  id: JsonRpcId,
  error: NonNullable<JsonRpcMessage["error"]>,
  capabilities: { readonly elicitation?: unknown },
): JsonRpcMessage {
  const asked = (error.data as { elicitations?: unknown } | undefined)?.elicitations;
  const elicitations = Array.isArray(asked)
    ? asked.filter(
        (e): e is Record<string, unknown> => typeof e === "object" && e !== null && typeof e.url === "string",
      )
    : [];
  if (elicitations.length === 0)
    return errorResponse(
      id,
      JsonRpcCode.internalError,
      `the MCP server asked for a URL to be opened: ${error.message}`,
    );
  const elicitation = capabilities.elicitation as { url?: unknown } | undefined;
  if (typeof elicitation?.url !== "object" || elicitation.url === null)
    return missingCapabilityError(id, new Set(["elicitation"]), { elicitation: { url: {} } });
  const inputRequests: Record<string, unknown> = {};
  elicitations.forEach(({ elicitationId: _correlation, ...params }, index) => {
    inputRequests[index === 0 ? "url-elicitation" : `url-elicitation-${index + 1}`] = {
      method: "elicitation/create",
      params: { ...params, mode: "url" },
    };
  });
  return { jsonrpc: "2.0", id, result: { resultType: "input_required", inputRequests } };
}
