/**
 * The protections every mcpmgr endpoint has, in order (outermost first):
 *   origin   → Host/Origin validation (DNS rebinding) before anything reads the request
 *   health   → answers /health without touching anything else (behind the guard: a page on
 *              another site must not learn, through a rebound name, which servers run here)
 *   body     → request size limit
 * Later middleware goes inside these, in this order (policy-chain.ts composes it):
 *   telemetry → audit → authentication → tool policy → authorization → webhooks → the bridge or forwarder
 * (telemetry outermost so every request is traced; audit before the policies so it records what they deny).
 */
import { compose, type Handler, type Middleware } from "../proxy/handler.ts";
import { bodyLimit, defaultMaxBodyBytes } from "./body-limit.ts";
import { healthEndpoint } from "./health.ts";
import { originGuard } from "./origin-guard.ts";

export interface BuiltinProtections {
  readonly serverName: string;
  readonly listenHost: string;
  readonly trustProxyHeaders: boolean;
  /** `--allowed-hosts`, normalized: host names the listener answers to besides its own (middleware/host-names.ts). */
  readonly allowedHosts: readonly string[];
  readonly maxBodyBytes?: number;
  /**
   * The largest answer a policy holds to read it (MCPMGR_MAX_MESSAGE_BYTES, default 64 MiB): the tool
   * filter and Cedar fail a larger one, audit records its request without the answer.
   */
  readonly maxMessageBytes?: number;
}

export function withBuiltinProtections(
  handler: Handler,
  options: BuiltinProtections,
  ...inner: readonly Middleware[]
): Handler {
  return compose(
    handler,
    originGuard({
      listenHost: options.listenHost,
      trustProxyHeaders: options.trustProxyHeaders,
      allowedHosts: options.allowedHosts,
    }),
    healthEndpoint(() => ({ server: options.serverName })),
    bodyLimit(options.maxBodyBytes ?? defaultMaxBodyBytes),
    ...inner,
  );
}
