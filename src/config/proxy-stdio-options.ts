/**
 * Every option of `mcpmgr proxy stdio`: mcpmgr's credentials towards the remote and the CAs its own requests trust.
 * Token exchange trades an incoming client's token, and a stdio client sends none: its options are parsed (so one
 * given is refused saying why, cli/proxy-stdio.ts) but hidden from help and completion, which offered eight options
 * that were each refused.
 */
import { caBundleDescription, caBundleOptions } from "./flags/ca-bundle.ts";
import { outgoingAuthOptions } from "./flags/outgoing-auth.ts";
import type { OptionTable } from "./option-spec.ts";

/** `table` with the options `hide` picks marked hidden (their declarations otherwise the same). */
function withHidden<T extends OptionTable>(table: T, hide: (name: string) => boolean): T {
  return Object.fromEntries(
    Object.entries(table).map(([name, spec]) => [name, hide(name) ? { ...spec, hidden: true } : spec]),
  ) as T;
}

export const proxyStdioOptions = {
  ...withHidden(outgoingAuthOptions, (name) => name.startsWith("token-exchange-")),
  // Outgoing authentication only, and no token exchange: what the relay itself asks for.
  "thv-ca-bundle": {
    ...caBundleOptions["thv-ca-bundle"],
    description: caBundleDescription("OAuth/OIDC discovery, client registration, token and refresh requests"),
  },
} as const;
