/**
 * The network-isolation helper's files, as text embedded in the compiled binary, with the paths
 * they have in its image (the same as under runtime/docker/, so the entry point's relative
 * imports resolve). Every module the helper imports must be listed here: the helper runs from
 * these files alone (test/unit/egress-proxy.test.ts runs it from a copy of exactly this list).
 */
// @ts-expect-error -- imported as text (embedded in the compiled binary), not as a module
import client from "./egress/client.ts" with { type: "text" };
// @ts-expect-error -- as above
import config from "./egress/config.ts" with { type: "text" };
// @ts-expect-error -- as above
import configFromEnv from "./egress/config-from-env.ts" with { type: "text" };
// @ts-expect-error -- as above
import hostRules from "./egress/host-rules.ts" with { type: "text" };
// @ts-expect-error -- as above
import relay from "./egress/relay.ts" with { type: "text" };
// @ts-expect-error -- as above
import requestHead from "./egress/request-head.ts" with { type: "text" };
// @ts-expect-error -- as above
import server from "./egress/server.ts" with { type: "text" };
// @ts-expect-error -- as above
import entry from "./egress-proxy.ts" with { type: "text" };

/** The file `bun` runs in the image. */
export const EGRESS_ENTRY = "egress-proxy.ts";

export const EGRESS_SOURCES: readonly { readonly path: string; readonly content: string }[] = [
  { path: EGRESS_ENTRY, content: entry as string },
  { path: "egress/client.ts", content: client as string },
  { path: "egress/config.ts", content: config as string },
  { path: "egress/config-from-env.ts", content: configFromEnv as string },
  { path: "egress/host-rules.ts", content: hostRules as string },
  { path: "egress/relay.ts", content: relay as string },
  { path: "egress/request-head.ts", content: requestHead as string },
  { path: "egress/server.ts", content: server as string },
];
