/**
 * How the gateway's requests reach a member: through mcpmgr's own HTTP client (proxy/upstream/), on
 * connections opened while the member's supervisor lives. A member's endpoint is a loopback port; once
 * its supervisor is gone (killed, OOM) the port is free, and another local user can listen there. The
 * membership (membership.ts) notices within a second, but the requests sent meanwhile would carry the
 * installation's gateway key to that listener, which could then call every guarded member directly,
 * past the gateway's policies, and its answers would pass for the member's.
 *
 * So each new connection to a member is checked once it is open, before anything is written on it:
 * its supervisor must still be that workload's supervisor (state/supervisor-identity.ts: a live process
 * of this user's running `__supervise NAME` for this home, not a zombie nobody reaped nor a pid come round
 * to another process), and the listener the connection reached must be one the supervisor holds
 * (state/listener-owner.ts). A live supervisor alone does not make the connection its own: a stopping
 * one closes its port a moment before it exits, and anyone may then listen there. (A member on `--host
 * localhost` is reached at 127.0.0.1, the address it listens on, never at ::1.) Connections reused from the pool were checked when they opened;
 * the check costs a few reads of /proc per new connection, nothing per request.
 */
import { McpmgrError } from "../errors.ts";
import type { UpstreamInit } from "../proxy/authenticated-fetch.ts";
import { localListenerClient } from "../proxy/upstream/local-client.ts";
import type { ConnectionPeer } from "../proxy/upstream/types.ts";
import { listenerHeldBy } from "../state/listener-owner.ts";
import { isSupervisorOf } from "../state/supervisor-identity.ts";
import type { Member } from "./membership.ts";

export type MemberSend = (url: string, init: UpstreamInit) => Promise<Response>;

/** The requests of the gateway to `member`, on connections its supervisor answered; never redirected. */
export function memberSend(member: Pick<Member, "name" | "supervisor">): MemberSend {
  const { name, supervisor } = member;
  if (supervisor === undefined) return (url, init) => localListenerClient().fetch(url, { ...init, redirect: "manual" });
  const checkConnection = (peer: ConnectionPeer | undefined) => {
    const pid = supervisor.pid;
    if (
      isSupervisorOf(pid, name, supervisor.home) &&
      peer !== undefined &&
      listenerHeldBy(pid, peer.address, peer.port)
    )
      return;
    throw new McpmgrError(
      "WORKLOAD_NOT_RUNNING",
      `workload '${name}' has no supervisor listening at its port: the gateway does not send there`,
      { hint: `run 'mcpmgr start ${name}'` },
    );
  };
  return (url, init) =>
    localListenerClient().fetch(url, { ...init, redirect: "manual", checkConnection, listenerPid: supervisor.pid });
}
