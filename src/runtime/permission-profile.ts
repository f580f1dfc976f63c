/**
 * What a runtime asks of a permission profile (format, schema and loading in
 * config/permission-profile.ts): network at all, none at all, or only some of it.
 */
import type { PermissionProfile } from "../config/permission-profile.ts";

export type { PermissionProfile } from "../config/permission-profile.ts";

/** Whether the profile lets the server open outbound connections at all. */
export function allowsNetwork(profile: PermissionProfile): boolean {
  const outbound = profile.network.outbound;
  return (
    profile.network.mode !== "none" &&
    (outbound.insecure_allow_all || outbound.allow_host.length > 0 || outbound.allow_port.length > 0)
  );
}

/**
 * Whether a container gets no network: the profile says mode "none", or names no mode and
 * allows no outbound traffic (the built-in `none`). An explicit mode ("host", a network
 * name) is the user's choice of network and wins over empty outbound rules.
 */
export function deniesNetwork(profile: PermissionProfile): boolean {
  const mode = profile.network.mode;
  return mode === "none" || ((mode === undefined || mode === "") && !allowsNetwork(profile));
}

/**
 * Whether the profile allows some outbound traffic but not all of it: hosts or ports are
 * listed. Neither runtime enforces such a list by itself (bwrap gives all of the network or
 * none; a container only behind --isolate-network's egress proxy).
 */
export function restrictsOutbound(profile: PermissionProfile): boolean {
  const outbound = profile.network.outbound;
  return (
    profile.network.mode !== "none" &&
    !outbound.insecure_allow_all &&
    (outbound.allow_host.length > 0 || outbound.allow_port.length > 0)
  );
}
