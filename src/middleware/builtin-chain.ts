/**
 * The protections every mcpmgr endpoint has, in order (outermost first):
 *   health   → answers /health without touching anything else
 *   origin   → Host/Origin validation (DNS rebinding) before anything reads the request
 *   body     → request size limit
 * Later middleware goes inside these, in this order (policy-chain.ts composes it):
 *   telemetry → audit → authentication → tool policy → authorization → webhooks → the bridge or forwarder
 * (telemetry outermost so every request is traced; audit before the policies so it records what they deny).
 */
import type { ForwardLane } from "../proxy/forward.ts";
import { compose, type Handler, type Middleware } from "../proxy/handler.ts";
import { bodyLimit, defaultMaxBodyBytes } from "./body-limit.ts";
import { healthEndpoint } from "./health.ts";
import { originCheck, originGuard } from "./origin-guard.ts";

export interface BuiltinProtections {
  readonly serverName: string;
  readonly listenHost: string;
  readonly trustProxyHeaders: boolean;
  readonly maxBodyBytes?: number;
}

export function withBuiltinProtections(
  handler: Handler,
  options: BuiltinProtections,
  ...inner: readonly Middleware[]
): Handler {
  return compose(
    handler,
    healthEndpoint(() => ({ server: options.serverName })),
    originGuard({ listenHost: options.listenHost, trustProxyHeaders: options.trustProxyHeaders }),
    bodyLimit(options.maxBodyBytes ?? defaultMaxBodyBytes),
    ...inner,
  );
}

/**
 * The byte lane (forward.ts) behind the same protections: it takes a request only when the
 * chain above would pass it on unchanged (the health endpoint answers GET and HEAD, which the
 * lane never takes; Host and Origin pass the same check; the body is within the limit) and
 * leaves every other request to the chain, which answers it as it always has. Only for an
 * endpoint without policies: with any, the chain is the only way in.
 */
export function withBuiltinLane(lane: ForwardLane, options: BuiltinProtections): ForwardLane {
  const check = originCheck({ listenHost: options.listenHost, trustProxyHeaders: options.trustProxyHeaders });
  const maxBodyBytes = options.maxBodyBytes ?? defaultMaxBodyBytes;
  return (head, body, client) => {
    const host = head.host;
    if (host === undefined || host.includes(",") || head.contentLength > maxBodyBytes) return undefined;
    let origin: string | null = null;
    let forwardedHost: string | null = null;
    for (const [name, value] of head.headers) {
      if (name === "origin") {
        if (origin !== null) return undefined; // two Origins: the chain refuses them
        origin = value;
      } else if (name === "x-forwarded-host")
        forwardedHost = forwardedHost === null ? value : `${forwardedHost}, ${value}`;
    }
    if (check(host, origin, () => forwardedHost) !== undefined) return undefined;
    return lane(head, body, client);
  };
}
