/**
 * An upstream's event-stream answer, relayed to its client by the transparent forwarder
 * (forward.ts) through sse-relay.ts: keep-alives while it is quiet; on a GET, the legacy
 * `endpoint` event rewritten to the URL clients use, its message URL bound to the stream's
 * caller (forward-sessions.ts), or, naming a place outside the upstream, refused (an `error`
 * event, the stream ended, a warning in the log); on a POST, the answers it owes, ended as errors if it must
 * close early (sse-answers.ts), except a 2026-07-28 listen, which mcpmgr's stop does not wait
 * for and ends gracefully. The session's hold ends when the stream ends.
 */
import { defaultMaxMessageBytes } from "./answer-limit.ts";
import type { UpstreamBody } from "./forward-request.ts";
import type { ForwardedSessions, ForwardRoute } from "./forward-sessions.ts";
import type { LiveStreams } from "./live-streams.ts";
import { publicEndpoint } from "./public-url.ts";
import { listenIdOf, PendingAnswers, requestIdsOf } from "./sse-answers.ts";
import { endpointEventRewriter } from "./sse-endpoint.ts";
import { relaySse } from "./sse-relay.ts";
import type { Cancellation } from "./upstream/cancellation.ts";

export interface StreamRelayOptions {
  readonly target: URL;
  readonly endpointPrefix: string | undefined;
  readonly trustProxyHeaders: boolean;
  /** The forwarded hosts the `endpoint` event may name (public-url.ts `PublicUrlOptions`). */
  readonly answersTo?: ((host: string) => boolean) | undefined;
  readonly live: LiveStreams;
  readonly sessions: ForwardedSessions;
  readonly pingIntervalMs?: number | undefined;
  /** The largest event of a POST's stream watched for its answers (MCPMGR_MAX_MESSAGE_BYTES). */
  readonly maxMessageBytes?: number | undefined;
  /** Where a warning goes (an event over that size). */
  readonly onWarning?: ((text: string) => void) | undefined;
}

/**
 * The forwarder's relay, made once per forwarder: given the upstream's answer, its body `stream`,
 * the request and what it sent (`body`, for the ids of the requests a POST owes answers to), and
 * the cancellation of the upstream request, it returns the answer for the client.
 */
export type EventStreamRelay = (
  upstream: Response,
  stream: ReadableStream<Uint8Array>,
  req: Request,
  route: ForwardRoute,
  body: UpstreamBody,
  cancel: Cancellation,
) => Response;

export function eventStreamRelay(options: StreamRelayOptions): EventStreamRelay {
  const { target, endpointPrefix, trustProxyHeaders, answersTo, live, sessions } = options;
  const oversizedEvent = (max: number) =>
    options.onWarning?.(
      `the MCP server sent an event larger than ${max} bytes (MCPMGR_MAX_MESSAGE_BYTES); relayed without watching it for answers`,
    );
  // An endpoint outside the upstream (public-url.ts): never handed to the client, and said in the log.
  const refuseEndpoint = (endpoint: string) => {
    const origin = URL.canParse(endpoint, target.href) ? new URL(endpoint, target).origin : undefined;
    const named = origin === undefined ? "an endpoint that is not a URL" : `an endpoint on ${origin}`;
    options.onWarning?.(
      `the MCP server's SSE stream named ${named} for its messages, outside ${target.origin}; the stream was refused (a client following it would bypass this proxy)`,
    );
    return {
      refused: `mcpmgr refused the MCP server's SSE stream: it named ${named} for its messages, outside the server (${target.origin}) and outside this proxy`,
    };
  };
  return (upstream, stream, req, route, body, cancel) => {
    const method = req.method;
    let release: (() => void) | undefined;
    const endHold = route.takeHold();
    // A 2026-07-28 listen stream lasts until someone ends it (its Mcp-Method says so; the body is
    // read only if mcpmgr ends the stream, to name the subscription it ends).
    const listen = method === "POST" && req.headers.get("mcp-method") === "subscriptions/listen";
    const sent = () => (body instanceof ReadableStream ? undefined : body);
    const relayed = relaySse(stream, {
      live,
      ...(options.pingIntervalMs === undefined ? {} : { pingIntervalMs: options.pingIntervalMs }),
      ...(method === "GET"
        ? {
            head: endpointEventRewriter((endpoint) => {
              const rewritten = publicEndpoint(endpoint, target, req, { endpointPrefix, trustProxyHeaders, answersTo });
              if (rewritten === undefined) return refuseEndpoint(endpoint);
              const announced = sessions.announced(endpoint, route);
              if (announced !== undefined) release = announced;
              return rewritten;
            }),
          }
        : {}),
      onEnd: () => {
        release?.();
        endHold?.();
      },
      // A POST's stream owes an answer to each of its requests (their ids are read only if it ends early).
      ...(method === "POST"
        ? {
            answers: new PendingAnswers(() => requestIdsOf(sent()), {
              maxEventBytes: options.maxMessageBytes ?? defaultMaxMessageBytes,
              onOversized: oversizedEvent,
              ...(listen ? { listenId: () => listenIdOf(sent()) } : {}),
            }),
            standalone: listen,
          }
        : {}),
      onCancel: () => cancel.abort(),
      announceOpen: true,
    });
    return new Response(relayed, {
      status: upstream.status,
      statusText: upstream.statusText,
      headers: upstream.headers,
    });
  };
}
