/**
 * A 2026-07-28 caller's answers on the fast lane (modern-pass-through.ts): what the SDK path made of
 * a member's answer, without the SDK. There, the SDK client decoded the member's result (a 2026-07-28
 * member's `resultType` read and taken off, an `input_required` result reduced to its rounds), the
 * gateway's handler took the member's `serverInfo` out (modern-caller.ts) or turned a 2025-era
 * member's -32042 into an input round or -32021, and the gateway's SDK server encoded the result for
 * the caller: `resultType` put back ("complete" unless the result says otherwise) and the gateway's
 * own `serverInfo` stamped into `_meta`, and an input request the caller's capabilities do not cover
 * (or of a kind the revision does not define) refused; an error went out with its code (-32002 as -32602, as that
 * revision has no such code) and, for -32021 alone, HTTP 400. A member's log line reaches the caller
 * only from a 2026-07-28 member and only when the caller set a log level; everything else the member
 * sends on the call's stream goes to the upstream's SDK client, as on the SDK path.
 */
import { SERVER_INFO_META_KEY } from "@modelcontextprotocol/server";
import { JsonRpcCode } from "../proxy/jsonrpc.ts";
import { URL_ELICITATION_REQUIRED, urlElicitationRound } from "../proxy/stdio-bridge/older-server.ts";
import { withoutMemberIdentity } from "./modern-caller.ts";
import { type CallerAnswer, type CallerEra, plainError, SESSION_ERA } from "./caller-era.ts";
import { isObject } from "../objects.ts";
import { attributedLog } from "./member-log.ts";

type Json = Record<string, unknown>;

/** -32021: the one in-band error the revision answers with HTTP 400. */
const MISSING_CAPABILITY = -32021;
/** -32002 (resource not found) is no 2026-07-28 code: the SDK server sends it as invalid params. */
const RESOURCE_NOT_FOUND = -32002;

export interface ModernCaller {
  /** The gateway's identity, as its SDK server stamps it on every result. */
  readonly serverInfo: { readonly name: string; readonly version: string };
  readonly workload: string;
  /** The member was reached as a 2026-07-28 server (else: a 2025-era session). */
  readonly modernMember: boolean;
  /** The capabilities the caller declared (for a 2025-era member's URL round, a 2026-07-28 member's input requests). */
  readonly capabilities: Json;
  /** The caller set a log level. */
  readonly logs: boolean;
}

/** A result as the gateway's SDK server sends it to a 2026-07-28 caller: `resultType`, and the gateway's identity. */
function encoded(result: Json, serverInfo: ModernCaller["serverInfo"]): Json {
  const typed = result.resultType === undefined ? { ...result, resultType: "complete" } : result;
  const meta = typed._meta;
  if (meta === undefined) return { ...typed, _meta: { [SERVER_INFO_META_KEY]: serverInfo } };
  if (!isObject(meta) || meta[SERVER_INFO_META_KEY] !== undefined) return typed;
  return { ...typed, _meta: { ...meta, [SERVER_INFO_META_KEY]: serverInfo } };
}

/**
 * What each kind of input request needs the caller to have declared (2026-07-28: a server MUST NOT send
 * one its request's capabilities do not cover; modes and sampling's tools are sub-capabilities), or
 * undefined for a kind the revision does not define.
 */
function requiredCapabilities(request: Json): Json | undefined {
  const params = isObject(request.params) ? request.params : {};
  switch (request.method) {
    case "elicitation/create":
      return { elicitation: params.mode === "url" ? { url: {} } : { form: {} } };
    case "sampling/createMessage":
      return { sampling: params.tools !== undefined || params.toolChoice !== undefined ? { tools: {} } : {} };
    case "roots/list":
      return { roots: {} };
    default:
      return undefined;
  }
}

/** The part of `required` that `declared` lacks, undefined when it has all of it (a bare `elicitation` is form mode). */
function missingCapabilities(required: Json, declared: Json): Json | undefined {
  const missing: Json = {};
  for (const [name, requirement] of Object.entries(required)) {
    const have = declared[name];
    if (!isObject(have)) {
      missing[name] = requirement;
      continue;
    }
    const members: Json = {};
    for (const [member, value] of Object.entries(requirement as Json)) {
      const impliedForm =
        name === "elicitation" && member === "form" && have.form === undefined && have.url === undefined;
      if (have[member] === undefined && !impliedForm) members[member] = value;
    }
    if (Object.keys(members).length > 0) missing[name] = members;
  }
  return Object.keys(missing).length > 0 ? missing : undefined;
}

/**
 * A member's input requests the caller cannot be sent, answered as the gateway's SDK server answered
 * them: one of a kind the revision does not define (or no request at all) is the member's fault
 * (-32603), one the caller's capabilities do not cover is -32021 (HTTP 400). Our own members check
 * this themselves; a remote member may not.
 */
function inputRequestRefusal(inputRequests: Json, capabilities: Json): CallerAnswer | undefined {
  for (const [key, request] of Object.entries(inputRequests)) {
    if (!isObject(request) || typeof request.method !== "string")
      return internalError(
        `Handler for tools/call returned an invalid input request '${key}': each inputRequests entry must be an embedded elicitation/create, sampling/createMessage, or roots/list request`,
      );
    const required = requiredCapabilities(request);
    if (required === undefined)
      return internalError(
        `Handler for tools/call returned an input request '${key}' of kind '${request.method}', which is not an embedded request the 2026-07-28 revision defines`,
      );
    const missing = missingCapabilities(required, capabilities);
    if (missing !== undefined)
      return {
        error: {
          code: MISSING_CAPABILITY,
          message: `Cannot request input '${key}' (${request.method}): the request's client capabilities do not declare the required capability`,
          data: { requiredCapabilities: missing },
        },
      };
  }
  return undefined;
}

const internalError = (message: string): CallerAnswer => ({ error: { code: JsonRpcCode.internalError, message } });

export function modernCallerEra(caller: ModernCaller): CallerEra {
  /** The member's answer could not be read: as the SDK path worded it (gateway-server.ts `unavailable`). */
  const unreadable = (why: string): CallerAnswer => ({
    error: {
      code: JsonRpcCode.internalError,
      message: `workload '${caller.workload}' failed to answer (${why}); its tools, prompts and resources are unavailable`,
      data: { workload: caller.workload },
    },
  });
  /**
   * A complete result, as the gateway's handler and SDK server passed it on. A 2026-07-28 member's result
   * without `content` is one the SDK client refuses on the SDK path (-32603 "failed to answer", with
   * zod's report of the schema): here it gets an empty `content`, as a 2025-era member's does on either
   * path. Kept on purpose: the member is wrong either way, this answer is a valid result that keeps
   * what the member sent, and matching the SDK's refusal word for word means running its schema on
   * every result, which the lane exists to avoid (docs/gateway.md says so).
   */
  const complete = (result: Json): CallerAnswer => {
    const answer = SESSION_ERA.result(result);
    return "result" in answer ? { result: encoded(withoutMemberIdentity(answer.result), caller.serverInfo) } : answer;
  };
  /** A 2026-07-28 member's result, decoded as the SDK client decodes it (its checks worded as it words them). */
  const modernResult = (raw: Json): CallerAnswer => {
    const type = raw.resultType;
    if (type === undefined)
      return unreadable(
        "Invalid result for tools/call: missing required resultType — servers implementing protocol revision 2026-07-28 MUST include it (the absent-means-complete bridge applies only to earlier-revision servers)",
      );
    if (typeof type !== "string") return unreadable("Invalid result for tools/call: non-string resultType");
    if (type === "complete") {
      const { resultType: _complete, ...result } = raw;
      return complete(result);
    }
    if (type !== "input_required") return unreadable(`Unsupported result type '${type}' for tools/call`);
    const inputRequests = isObject(raw.inputRequests) ? raw.inputRequests : {};
    const requestState = typeof raw.requestState === "string" ? raw.requestState : undefined;
    if (Object.keys(inputRequests).length === 0 && requestState === undefined)
      return unreadable(
        "Invalid result for tools/call: input_required carries neither inputRequests nor requestState (every input_required result must include at least one of the two)",
      );
    const refused = inputRequestRefusal(inputRequests, caller.capabilities);
    if (refused !== undefined) return refused;
    const rounds: Json = { resultType: "input_required", inputRequests };
    if (requestState !== undefined) rounds.requestState = requestState;
    if (isObject(raw._meta)) rounds._meta = raw._meta;
    return { result: encoded(withoutMemberIdentity(rounds), caller.serverInfo) };
  };
  return {
    result: (result) => (caller.modernMember ? modernResult(result) : complete(result)),
    error(error) {
      const plain = plainError(error);
      if (plain.code === URL_ELICITATION_REQUIRED) {
        // As the SDK path's handler answers it (modern-caller.ts `urlElicitationAnswer`), from a member of
        // either era (a 2026-07-28 member must not send it, but one that does is answered the same way).
        const round = urlElicitationRound(0, plain as { code: number; message: string }, caller.capabilities);
        if (round.error !== undefined) return { error: plainError(round.error) };
        return { result: encoded(round.result as Json, caller.serverInfo) };
      }
      if (plain.code === RESOURCE_NOT_FOUND) plain.code = JsonRpcCode.invalidParams;
      return { error: plain };
    },
    status: (answer) => ("error" in answer && answer.error.code === MISSING_CAPABILITY ? 400 : 200),
    memberMessage(message, send) {
      if (!caller.modernMember || message.method !== "notifications/message") return false;
      // A line for this request: the caller's when it asked for lines, else none (not another request's).
      if (caller.logs)
        send(
          JSON.stringify({
            jsonrpc: "2.0",
            method: message.method,
            params: attributedLog(caller.workload, message.params),
          }),
        );
      return true;
    },
    notifiesCancellation: !caller.modernMember,
    errorInBadRequest: caller.modernMember,
    resumes: !caller.modernMember,
    streamsOnlyWhenNeeded: true,
  };
}
