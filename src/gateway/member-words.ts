/**
 * What of a member's own words an error the gateway returns to its client may carry. A member that
 * holds secrets (membership.ts holdsSecrets) may quote them in its errors (an error page printing the
 * request's headers, a tool's exception naming its key), and only it knows them to redact: the
 * gateway's log and notices give such a member's failures by HTTP status or JSON-RPC error code alone
 * (member-failure-log.ts `failureText`), and so do the errors its clients get. A member's results
 * (a tool's content, `isError` included) are its answer and reach the client as they are; its -32042
 * (URL elicitation required) too, since its data is the URL the user is asked to visit.
 */
import { ProtocolError } from "@modelcontextprotocol/client";
import { ProtocolError as ServerProtocolError } from "@modelcontextprotocol/server";
import { errorMessage } from "../errors.ts";
import { excerpt } from "../printable.ts";
import { URL_ELICITATION_REQUIRED } from "../proxy/stdio-bridge/older-server.ts";
import type { MemberError } from "./caller-era.ts";
import type { Member } from "./membership.ts";
import { failureText, NOT_QUOTED } from "./member-failure-log.ts";

/** Whether a member's words may be quoted: a member known not to hold secrets (one gone may have held some). */
export function quotable(member: Member | undefined): boolean {
  return member !== undefined && member.holdsSecrets !== true;
}

/** A member's JSON-RPC error as the client gets it: whole, or its code alone (no message words, no data). */
export function memberErrorForClient(workload: string, error: MemberError, quote: boolean): MemberError {
  if (quote || error.code === URL_ELICITATION_REQUIRED) return error;
  return {
    code: error.code,
    message: `workload '${workload}' answered error ${String(error.code)} (its message is ${NOT_QUOTED})`,
  };
}

/**
 * A refusal worded by the gateway itself while it handles a request to a member (a subscription the member
 * acknowledged no updates for): its words are the gateway's, kept whoever the member is. A subclass of
 * its own, since the SDK's ProtocolError classes take each other's instances (their brand), and a
 * member's error must not pass for one of these.
 */
export class GatewayRefusal extends ServerProtocolError {}

/** The same for the SDK path, where a member's JSON-RPC error comes as a ProtocolError. */
export function memberProtocolError(workload: string, err: ProtocolError, quote: boolean): ProtocolError {
  if (quote || err.code === URL_ELICITATION_REQUIRED || err instanceof GatewayRefusal) return err;
  const { code, message } = memberErrorForClient(workload, { code: err.code, message: err.message }, false);
  return new ProtocolError(code as number, message as string);
}

/**
 * A failure to answer, for an error message: the error's text cut to `chars`, or for a member that holds
 * secrets its HTTP status (or error code) without the member's answer; the gateway's own errors (a
 * connection refused) are given either way.
 */
export function failureWords(err: unknown, quote: boolean, chars: number): string {
  return quote ? excerpt(errorMessage(err), chars) : failureText(err, false);
}

/** A member's HTTP failure whose body was read (the relayed tools/call): an excerpt, or its status alone. */
export function failedPostWords(status: number, body: string, quote: boolean): string {
  return quote
    ? `Error POSTing to endpoint: ${excerpt(body, 200)}`
    : `Error POSTing to endpoint: HTTP ${status} (its answer is ${NOT_QUOTED})`;
}
