/** Every option of `mcpmgr proxy stdio`: mcpmgr's credentials towards the remote, nothing else. */
import { outgoingAuthOptions } from "./flags/outgoing-auth.ts";

export const proxyStdioOptions = { ...outgoingAuthOptions } as const;
