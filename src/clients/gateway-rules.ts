/**
 * A client that follows a group through its background gateway has one entry for it: registering
 * needs exactly one running gateway of the group, and another gateway of the group that starts
 * while the client has an entry for one is skipped (review 9 F18: two would show every tool
 * twice, perhaps a looser policy beside a stricter one).
 */
import { McpmgrError } from "../errors.ts";
import type { Registrations } from "../state/client-registrations.ts";
import type { WorkloadEndpoint } from "./types.ts";

/** The one running gateway of the group to register a client with; an error for none or several. */
export function onlyGateway(group: string, gateways: readonly WorkloadEndpoint[]): WorkloadEndpoint {
  const [first, second] = gateways;
  if (first === undefined) {
    throw new McpmgrError("GATEWAY_NOT_RUNNING", `no background gateway of group ${group} is running`, {
      hint: `start one with 'mcpmgr gateway ${group} --detach' (a stopped one with 'mcpmgr start NAME', see 'mcpmgr list --group ${group}'), then register again`,
    });
  }
  if (second !== undefined) {
    const names = gateways.map((gateway) => gateway.name).sort();
    throw new McpmgrError(
      "GATEWAY_AMBIGUOUS",
      `group ${group} has ${names.length} background gateways running (${names.join(", ")}), and a client gets one`,
      {
        hint: `keep the one the client should use running and stop the others (e.g. 'mcpmgr stop ${names[1]}'), then register again`,
      },
    );
  }
  return first;
}

/** The name of another gateway of the group that the client has an entry for, if any. */
export function otherGatewayEntry(
  registrations: Registrations,
  client: string,
  gateway: WorkloadEndpoint,
): string | undefined {
  for (const entries of Object.values(registrations.owned[client] ?? {})) {
    for (const [name, entry] of Object.entries(entries)) {
      if (entry.group === gateway.group && name !== gateway.name) return name;
    }
  }
  return undefined;
}
