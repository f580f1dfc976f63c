/** Every option of `mcpmgr proxy`, in the order help shows them. */
import { caBundleOptions } from "./flags/ca-bundle.ts";
import { incomingAuthOptions } from "./flags/incoming-auth.ts";
import { outgoingAuthOptions } from "./flags/outgoing-auth.ts";
import { proxyListenOptions } from "./flags/proxy-listen.ts";

export const proxyOptions = {
  ...proxyListenOptions,
  ...incomingAuthOptions,
  ...outgoingAuthOptions,
  ...caBundleOptions,
} as const;
