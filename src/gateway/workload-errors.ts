/**
 * The errors the gateway answers for a workload it cannot send a request to, or that failed to answer,
 * and for a name several workloads claim (gateway-server.ts routes; these say why it did not).
 */
import { ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/server";
import { JsonRpcCode } from "../proxy/jsonrpc.ts";

type Result = Record<string, unknown>;

/** A JSON-RPC error for a workload that cannot take the call; the other workloads are unaffected. */
export function unavailable(workload: string, why: string): ProtocolError {
  return new ProtocolError(
    ProtocolErrorCode.InternalError,
    `${why}; its tools, prompts and resources are unavailable`,
    {
      workload,
    },
  );
}

/** A workload the gateway could not send the request to at all (stopped, not answering, not reachable). */
export class NotSent extends ProtocolError {}

/**
 * A request for a workload that is not there is no fault of the gateway: not "internal error" (-32603),
 * nor an unknown name (-32602, the name was the workload's). MCP (2025-06-18 and 2026-07-28) gives
 * prompts, resources and completions no error result, only JSON-RPC errors, and JSON-RPC leaves
 * -32000…-32099 to the server: 2026-07-28 keeps -32000…-32019 for implementations, never defining one
 * there. So -32000, the server error mcpmgr's relays already answer when what is behind them cannot be
 * reached (a tools/call gets a tool result with isError instead: toolNotSent).
 */
export function notSent(workload: string, why: string): NotSent {
  const { message, data } = unavailable(workload, why);
  return new NotSent(JsonRpcCode.serverError, message, data);
}

/**
 * A tool call that never reached its workload is answered as a tool execution error (`isError`), which
 * MCP (2025-06-18 and 2026-07-28 alike) has clients give to the model ("API failures"; a protocol error
 * they only MAY pass on): the model can then tell the user which workload to start, rather than the
 * call failing as the gateway's own internal error. Nothing ran, so nothing is hidden by it.
 */
export function toolNotSent(err: NotSent): Result {
  return { content: [{ type: "text", text: err.message }], isError: true };
}

/** A URI or template several workloads claim: refused, never routed to whichever sorts first. */
export function ambiguous(what: string, workloads: readonly string[]): ProtocolError {
  return new ProtocolError(
    ProtocolErrorCode.InvalidParams,
    `${what} is offered by several workloads (${workloads.join(", ")}); the gateway does not route it`,
    { workloads },
  );
}
