/**
 * The MCP server a gateway client talks to (SDK v2 low-level `Server`): lists come from the
 * group catalog as they are, and every call is routed by its gateway name (or resource URI)
 * to one workload, through the calling session's upstream pool. Progress tokens are mapped
 * to the upstream request and back, a cancelled gateway request cancels the upstream one,
 * and an error from the workload reaches the client with its own code and message.
 * In search mode (`search`), tools/list holds find_tool and call_tool, the instructions say how to
 * use them, and the calls the gateway answers itself go to search.ts; every other call, a rewritten
 * call_tool included, is routed like any direct call.
 */
import {
  ProtocolError as MemberProtocolError,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  StreamableHTTPClientTransport,
} from "@modelcontextprotocol/client";
import { ProtocolError, ProtocolErrorCode, ResourceNotFoundError, type Server } from "@modelcontextprotocol/server";
import type { LoggingLevel, ServerContext } from "@modelcontextprotocol/server";
import { version } from "../version.ts";
import { type GroupCatalog, resourceRoute } from "./catalog.ts";
import { anyResult, type Params } from "./sdk.ts";
import type { GatewaySearch } from "./search.ts";
import type { UpstreamPool } from "./upstream-pool.ts";
import { MAX_INPUT_ROUNDS, withRequestScope } from "./upstream.ts";
import { memberSubscription } from "./member-subscriptions.ts";
import type { Subscribing } from "./session-subscriptions.ts";
import { memberParamHeaders } from "./param-headers.ts";
import {
  asksForLogs,
  type ModernRequest,
  paramsForModernMember,
  urlElicitationAnswer,
  withoutMemberIdentity,
} from "./modern-caller.ts";
import { ambiguous, notSent, NotSent, toolNotSent, unavailable } from "./workload-errors.ts";
import { PlainErrorServer } from "./sdk-errors.ts";
import { failureWords, memberProtocolError, quotable } from "./member-words.ts";

export interface GatewayServerOptions {
  readonly group: string;
  readonly catalog: GroupCatalog;
  readonly timeoutMs: number;
  /** Search mode (`--tool-search`). */
  readonly search?: GatewaySearch | undefined;
}

type Result = Record<string, unknown>;

/**
 * A 2025-era session's request to a workload reached as a 2026-07-28 server: that revision has no
 * logging/setLevel, and its server logs only for a request that names a level in `_meta`, so the
 * level the session set goes with each request (its lines then come back on the request's stream).
 */
function withSessionLogLevel(params: Params, level: LoggingLevel | undefined): Params {
  if (level === undefined) return params;
  return { ...params, _meta: { ...(params._meta as Params | undefined), "io.modelcontextprotocol/logLevel": level } };
}

/**
 * `req`: the request that opened the session (or the stateless request), for search mode's instructions.
 * `modern`: a 2026-07-28 request's server, with that request as its caller sent it. Its pool has no
 * client to hand a workload's `resources/updated` to, so it does not offer resource subscriptions: a
 * `subscriptions/listen` acknowledgement must not promise updates that would never come.
 */
export function createGatewayServer(
  options: GatewayServerOptions,
  pool: () => UpstreamPool,
  req?: Request,
  modern?: ModernRequest,
): Server {
  const stateless = modern !== undefined;
  const { catalog, search } = options;
  const server = new PlainErrorServer(
    { name: `mcpmgr-gateway-${options.group}`, version },
    {
      capabilities: {
        tools: { listChanged: true },
        prompts: { listChanged: true },
        resources: stateless ? { listChanged: true } : { listChanged: true, subscribe: true },
        logging: {},
        completions: {},
      },
      ...(search ? { instructions: search.instructions(req) } : {}),
    },
  );

  /**
   * `listedAs`: a tools/call's tool as the gateway lists it (for its x-mcp-header declarations);
   * `again`: this is the request sent again on a new member session, the first one having been forgotten
   * (a subscribe's: with the first sending's `retried` ticket, which an unsubscribe sent meanwhile withdrew;
   * an unsubscribe is answered at once, `{}`).
   */
  const forward = async (
    workload: string,
    method: string,
    params: Params,
    ctx: ServerContext,
    listedAs?: string,
    again = false,
    retried?: Subscribing,
  ): Promise<Result> => {
    // An unsubscribe whose member session was forgotten (404) or ended under it is done: the new member
    // session never had the URI (its re-subscription listed the session's URIs without it), so nothing is
    // sent there, where a member that refuses unknown URIs would fail it for nothing.
    if (again && method === "resources/unsubscribe") return {};
    await catalog.joining(workload, options.timeoutMs);
    const why = catalog.whyUnavailable(workload);
    if (why !== undefined) throw notSent(workload, why);
    let upstream: Awaited<ReturnType<UpstreamPool["get"]>>;
    try {
      upstream = await pool().get(workload);
    } catch (err) {
      const words = failureWords(err, quotable(catalog.member(workload)), 300);
      throw notSent(workload, `workload '${workload}' cannot be reached (${words})`);
    }
    const meta = params._meta as Params | undefined;
    const progressToken = meta?.progressToken;
    let sent = params;
    if (meta !== undefined && "progressToken" in meta) {
      // The SDK sets the upstream token itself and reports progress to `onprogress` below.
      const { progressToken: _token, ...rest } = meta;
      sent = { ...params, _meta: rest };
    }
    // A 2026-07-28 caller's request to a member reached as a 2026-07-28 server carries the caller's
    // envelope and retry material (modern-caller.ts); the member's input_required result comes back as it is.
    const reachedModern = upstream.getProtocolEra() !== "legacy";
    const modernMember = modern !== undefined && reachedModern;
    // A tools/call to a member reached as a 2026-07-28 server carries the tool's Mcp-Param-* headers,
    // whatever the caller's revision: the member checks them against its declarations (as the gateway
    // did for a 2026-07-28 caller) and refuses a call without them, so a 2025-era session's call needs
    // them as much as a 2026-07-28 caller's.
    const headers =
      reachedModern && listedAs !== undefined
        ? memberParamHeaders({ ...params, name: listedAs }, catalog.view.tools)
        : undefined;
    if (modernMember) sent = paramsForModernMember(sent, ctx, modern);
    else if (reachedModern) sent = withSessionLogLevel(sent, pool().logLevel);
    // Its log lines come back on its own stream; a request that set no level gets none (and costs no scope).
    const onLog =
      modernMember && asksForLogs(ctx)
        ? (log: { params?: unknown }) =>
            void ctx.mcpReq.notify({ method: "notifications/message", params: log.params as never }).catch(() => {})
        : undefined;
    // The session's subscriptions are kept by the pool, so that a new connection to the workload (the
    // workload restarted) follows them again; one unsubscribed is never followed again, whatever the answer.
    const subscriptions = pool().subscriptions;
    const uri = params.uri as string;
    const subscribing = method === "resources/subscribe" ? (retried ?? subscriptions.admit(workload, uri)) : undefined;
    const unsubscribing =
      method === "resources/unsubscribe" ? (retried ?? subscriptions.removed(workload, uri)) : undefined;
    // A member session still subscribed to a URI the session had stopped following is being sent its
    // unsubscribe again (stopped-uris.ts): it must not apply that after this subscribe.
    if (subscribing !== undefined) await subscriptions.corrected(workload, uri);
    // The session unsubscribed after sending this subscribe, which met a forgotten or replaced member session:
    // its last word stands. Sent again, the old subscribe would subscribe the new member session (its updates
    // would reach the session). (An unsubscribe is never sent again: see the top.)
    if (subscribing?.withdrawn) return {};
    const release = pool().track(workload, ctx.mcpReq.id, upstream);
    const sentOnSession =
      upstream.transport instanceof StreamableHTTPClientTransport && upstream.transport.sessionId !== undefined;
    // A 2025-era member answers each request on its own: an unsubscribe sent here and a subscribe the session
    // sent after it (which withdrew it) may be applied the other way round (`realign`, in `finally`).
    const reorderable = unsubscribing !== undefined && !reachedModern;
    try {
      // A 2025-era session's subscription at a workload that speaks only 2026-07-28: a listen stream.
      if ((method === "resources/subscribe" || method === "resources/unsubscribe") && reachedModern) {
        const done = await memberSubscription(upstream, method, uri, (lost, why) =>
          subscriptions.dropped(workload, lost, why),
        );
        // Unless the session unsubscribed meanwhile: its last word.
        if (subscribing !== undefined && subscriptions.added(workload, uri, subscribing))
          await pool().carry(workload, uri, upstream);
        return done;
      }
      const result = await withRequestScope(ctx.http?.req?.headers, onLog, () =>
        upstream.request({ method, params: sent }, anyResult, {
          signal: ctx.mcpReq.signal,
          timeout: options.timeoutMs,
          ...(modernMember ? { allowInputRequired: true } : {}),
          ...(headers !== undefined && Object.keys(headers).length > 0 ? { headers } : {}),
          ...(progressToken !== undefined
            ? {
                resetTimeoutOnProgress: true,
                onprogress: (progress) =>
                  void ctx.mcpReq
                    .notify({ method: "notifications/progress", params: { ...progress, progressToken } })
                    .catch(() => {}),
              }
            : {}),
        }),
      );
      if (subscribing !== undefined && subscriptions.added(workload, uri, subscribing))
        await pool().carry(workload, uri, upstream);
      return withoutMemberIdentity(result);
    } catch (err) {
      const round = modern !== undefined ? urlElicitationAnswer(err, ctx) : undefined;
      if (round !== undefined) return round;
      // The member's own JSON-RPC error (the SDK client's): by its code alone from a member that holds secrets.
      if (err instanceof MemberProtocolError)
        throw memberProtocolError(workload, err, quotable(catalog.member(workload)));
      if (err instanceof ProtocolError) throw err;
      if (ctx.mcpReq.signal.aborted) throw err;
      // The SDK gave up on a workload that kept asking for input: that call failed, the workload did not.
      if (err instanceof SdkError && err.code === SdkErrorCode.InputRequiredRoundsExceeded)
        throw new ProtocolError(
          ProtocolErrorCode.InternalError,
          `workload '${workload}' still asked for input after ${MAX_INPUT_ROUNDS} rounds; the call was given up`,
          { workload },
        );
      // 404: the member forgot the upstream session (it restarted, or the session sat idle past its timeout
      // while the gateway's own lived on). The request was not handled: it goes again, once, on a new session.
      // Only a request sent on a session: a member without sessions forgot none, its 404 is its answer
      // (perhaps after its handler ran), and a tools/call sent again would run twice.
      if (err instanceof SdkHttpError && err.status === 404) {
        pool().forget(workload, upstream);
        if (!again && upstream.getProtocolEra() === "legacy" && sentOnSession)
          return await forward(workload, method, params, ctx, listedAs, true, subscribing ?? unsubscribing);
      }
      // A subscription change whose connection the gateway replaced under it (a 404 on another request, the
      // workload's leave and join: the old one is ended at once, and a 2026-07-28 member's listen with it)
      // goes once more on the current one: a subscribe sets the same URI again, and the new connection's
      // re-subscription listed the session's URIs without this one (an unsubscribe is done: see the top).
      if (
        !again &&
        (method === "resources/subscribe" || method === "resources/unsubscribe") &&
        pool().replaced(workload, upstream)
      )
        return await forward(workload, method, params, ctx, listedAs, true, subscribing ?? unsubscribing);
      const words = failureWords(err, quotable(catalog.member(workload)), 300);
      throw unavailable(workload, `workload '${workload}' failed to answer (${words})`);
    } finally {
      release();
      const change = subscribing ?? unsubscribing;
      if (change !== undefined) subscriptions.settled(change);
      if (reorderable && unsubscribing.withdrawn)
        void pool()
          .realign(workload, uri, upstream)
          .catch(() => {});
    }
  };

  const routeName = async (kind: "tool" | "prompt", name: unknown): Promise<{ workload: string; name: string }> => {
    const owned = () => {
      const names = kind === "tool" ? catalog.view.toolNames : catalog.view.promptNames;
      return typeof name === "string" ? names.byGatewayName.get(name) : undefined;
    };
    const known = owned();
    if (known !== undefined) return known;
    // A client calling a name from before a workload stopped learns which workload is missing, once the
    // membership was read again: the workload may be back already (restarted) without the gateway knowing.
    const prefix = typeof name === "string" ? name.slice(0, Math.max(0, name.indexOf("_"))) : "";
    if (prefix && catalog.whyUnavailable(prefix) !== undefined) {
      await catalog.joining(prefix, options.timeoutMs);
      const back = owned();
      if (back !== undefined) return back;
    }
    const why = prefix ? catalog.whyUnavailable(prefix) : undefined;
    if (why !== undefined) throw notSent(prefix, why);
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown ${kind}: ${String(name)}`);
  };

  const routeUri = async (uri: unknown): Promise<string> => {
    const routeOf = () => (typeof uri === "string" ? resourceRoute(catalog.view, uri) : undefined);
    let route = routeOf();
    // A URI names no workload: one listed by a member that left (or is not answering) may be back already (a
    // restart that just returned), as a call to its tool finds (routeName); the gone members that listed it
    // are read first (only those: an unknown URI must not cost a read of every workload that ever left).
    const gone = route === undefined && typeof uri === "string" ? catalog.mayServe(uri) : [];
    if (gone.length > 0) {
      await Promise.all(gone.map((workload) => catalog.joining(workload, options.timeoutMs)));
      route = routeOf();
    }
    if (route === undefined) throw new ResourceNotFoundError(String(uri));
    if ("claimedBy" in route) throw ambiguous(`resource ${JSON.stringify(uri)}`, route.claimedBy);
    return route.workload;
  };

  // The merged lists come whole, in one page: the gateway hands out no cursor, so any cursor is one
  // it does not know, which MCP answers with -32602 rather than the first page again.
  const firstPage = (request: { params?: Params }): void => {
    if (request.params?.cursor !== undefined)
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        "Invalid params: unknown cursor (the gateway's lists come in one page)",
      );
  };
  server.setRequestHandler("tools/list", (request) => {
    firstPage(request);
    return { tools: search ? search.tools() : catalog.view.tools } as never;
  });
  server.setRequestHandler("prompts/list", (request) => {
    firstPage(request);
    return { prompts: catalog.view.prompts } as never;
  });
  server.setRequestHandler("resources/list", (request) => {
    firstPage(request);
    return { resources: catalog.view.resources } as never;
  });
  server.setRequestHandler("resources/templates/list", (request) => {
    firstPage(request);
    return { resourceTemplates: catalog.view.resourceTemplates } as never;
  });
  server.setRequestHandler("tools/call", async (request, ctx) => {
    const params = request.params as Params;
    const answered = search ? await search.answer(params, ctx.http?.req, ctx.mcpReq.id) : undefined;
    if (answered !== undefined) return answered as never;
    try {
      const target = await routeName("tool", params.name);
      return (await forward(
        target.workload,
        "tools/call",
        { ...params, name: target.name },
        ctx,
        params.name as string,
      )) as never;
    } catch (err) {
      if (err instanceof NotSent) return toolNotSent(err) as never;
      throw err;
    }
  });
  server.setRequestHandler("prompts/get", async (request, ctx) => {
    const params = request.params as Params;
    const target = await routeName("prompt", params.name);
    return (await forward(target.workload, "prompts/get", { ...params, name: target.name }, ctx)) as never;
  });
  for (const method of ["resources/read", "resources/subscribe", "resources/unsubscribe"] as const) {
    server.setRequestHandler(method, async (request, ctx) => {
      const params = request.params as Params;
      return (await forward(await routeUri(params.uri), method, params, ctx)) as never;
    });
  }
  server.setRequestHandler("completion/complete", async (request, ctx) => {
    const params = request.params as Params;
    const ref = params.ref as Params;
    if (ref.type === "ref/prompt") {
      const target = await routeName("prompt", ref.name);
      return (await forward(
        target.workload,
        "completion/complete",
        { ...params, ref: { ...ref, name: target.name } },
        ctx,
      )) as never;
    }
    const shared = typeof ref.uri === "string" ? catalog.view.sharedTemplates.get(ref.uri) : undefined;
    if (shared !== undefined) throw ambiguous(`resource template ${JSON.stringify(ref.uri)}`, shared);
    const template = catalog.view.templates.find((t) => t.text === ref.uri);
    const workload = template?.workload ?? (await routeUri(ref.uri));
    return (await forward(workload, "completion/complete", params, ctx)) as never;
  });
  server.setRequestHandler("logging/setLevel", async (request) => {
    await pool().setLogLevel((request.params as { level: LoggingLevel }).level);
    return {} as never;
  });
  server.setNotificationHandler("notifications/roots/list_changed", async () => {
    await pool().broadcast("notifications/roots/list_changed");
  });
  return server;
}
