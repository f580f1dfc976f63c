/**
 * Which clients a workload or a machine fits: the clients installed here (their settings folder
 * or program is present), and why a client cannot reach a workload over its transport.
 */
import { existsSync } from "node:fs";
import { allClients } from "./catalog.ts";
import type { ClientContext, ClientDefinition, WorkloadEndpoint } from "./types.ts";

export function isInstalled(ctx: ClientContext, client: ClientDefinition): boolean {
  return client.installMarkers(ctx).some((marker) => existsSync(marker));
}

export function installedClients(ctx: ClientContext): readonly ClientDefinition[] {
  return allClients().filter((client) => isInstalled(ctx, client));
}

/** Why `client` cannot connect to `workload`, or undefined when it can. */
export function transportMismatch(client: ClientDefinition, workload: WorkloadEndpoint): string | undefined {
  if (client.transports.includes(workload.transport)) return undefined;
  return (
    `cannot connect to ${workload.name}, which speaks ${describeTransport(workload.transport)}` +
    (client.stdioOnly
      ? " (its entry relays to streamable HTTP only)"
      : ` (it accepts ${client.transports.map(describeTransport).join(" and ")} only)`)
  );
}

function describeTransport(transport: WorkloadEndpoint["transport"]): string {
  return transport === "sse" ? "SSE (the deprecated HTTP+SSE transport)" : "streamable HTTP";
}
