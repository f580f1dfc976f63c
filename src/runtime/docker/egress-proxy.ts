/**
 * The egress helper for `--isolate-network`: the server container sits on a Docker internal
 * network with no route out, and a helper container on both networks runs this file.
 *  - Egress: an HTTP forward proxy (CONNECT tunnels and plain-HTTP absolute-URI requests)
 *    that lets through only the destinations the config allows, never the Docker host
 *    (gateway addresses and names) unless `allowGateway`, and never `alwaysBlockedAddresses`
 *    (the helper's own loopback, cloud metadata on link-local), which no flag lifts.
 *  - Ingress (optional): a TCP relay so the host can reach an HTTP server on the internal network,
 *    listening on a TCP port or (listenPath) on a Unix socket in a directory the host bind-mounts,
 *    so only processes that may open that host directory reach the server.
 *
 * This is the entry point; the work is in `egress/`. Dependency-free on purpose (only `node:`
 * imports and its own `egress/` modules, nothing else from the repo): the files of
 * egress-sources.ts are copied alone into the helper image and this one is run with
 * `bun egress-proxy.ts`, configured by the JSON in MCPMGR_EGRESS_CONFIG. The proxy works on raw
 * sockets rather than node:http so bodies are relayed byte-for-byte (no buffering, no re-framing)
 * and parsing is the same under Bun and Node.
 */
import type { EgressConfig } from "./egress/config.ts";
import { configFromEnv } from "./egress/config-from-env.ts";
import { startEgressProxy } from "./egress/server.ts";

if (import.meta.main) {
  let config: EgressConfig;
  try {
    config = configFromEnv(process.env);
  } catch (err) {
    console.error((err as Error).message);
    process.exit(2);
  }
  const proxy = await startEgressProxy(config);
  console.log(
    JSON.stringify({
      time: new Date().toISOString(),
      action: "listening",
      egressPort: proxy.egressPort,
      ingressPort: proxy.ingressPort ?? null,
      ingressPath: proxy.ingressPath ?? null,
    }),
  );
  for (const signal of ["SIGTERM", "SIGINT"] as const)
    process.once(signal, () => void proxy.close().finally(() => process.exit(0)));
}
