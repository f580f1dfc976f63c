/**
 * The listener a supervisor holds for its whole life (supervisor.ts), so that no other process takes
 * the workload's port, nor the tokens its clients send there, while the server starts or restarts.
 */
import { errorMessage } from "../errors.ts";
import { originGuard } from "../middleware/origin-guard.ts";
import { compose } from "../proxy/handler.ts";
import { serverUnavailable } from "../proxy/jsonrpc.ts";
import { serve } from "../proxy/serve.ts";
import type { WorkloadContext } from "./context.ts";
import type { RunSpec } from "./run-spec.ts";
import type { KeptListener } from "./start.ts";

/**
 * The proxy's listener for the supervisor's whole life. Until the server is up, and while it
 * restarts, it answers 503 with a JSON-RPC error and Retry-After saying when the next start
 * is due, behind the same Host/Origin guard as the workload's endpoint (the answer names it).
 */
export function keepListener(spec: RunSpec, ctx: WorkloadContext): KeptListener & { backoff(ms: number): void } {
  let retryAt = performance.now();
  const unavailable = compose(
    () =>
      serverUnavailable(
        `${spec.name} is starting or restarting; try again shortly`,
        Math.max(1, (retryAt - performance.now()) / 1000 + 1),
      ),
    originGuard({
      listenHost: spec.listen.host,
      trustProxyHeaders: spec.listen.trustProxyHeaders,
      allowedHosts: spec.listen.allowedHosts,
    }),
  );
  const server = serve({
    host: spec.listen.host,
    port: spec.listen.port,
    handler: unavailable,
    onError: (err) => ctx.log.error(`request failed inside the proxy: ${errorMessage(err)}`),
  });
  return {
    server,
    unavailable,
    backoff: (ms) => {
      retryAt = performance.now() + ms;
    },
  };
}
