/** Every option of `mcpmgr proxy stdio`: mcpmgr's credentials towards the remote and the CAs its own requests trust. */
import { caBundleOptions } from "./flags/ca-bundle.ts";
import { outgoingAuthOptions } from "./flags/outgoing-auth.ts";

export const proxyStdioOptions = { ...outgoingAuthOptions, ...caBundleOptions } as const;
