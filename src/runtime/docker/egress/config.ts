/** The helper's configuration, as MCPMGR_EGRESS_CONFIG carries it (config-from-env.ts reads it). */

export interface EgressConfig {
  listenPort: number;
  allowAll: boolean;
  allowHosts: string[];
  allowPorts: number[];
  blockedAddresses: string[]; // the Docker host's addresses and ranges: blocked unless allowGateway
  alwaysBlockedAddresses: string[]; // blocked whatever allowGateway says
  blockedHostNames: string[];
  allowGateway: boolean;
  ingress?: { listenPort: number; listenPath?: string; targetHost: string; targetPort: number };
}
