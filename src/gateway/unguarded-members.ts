/**
 * Members that still answer direct callers while a gateway with policies guards their group. A member
 * whose supervisor an older mcpmgr started (one from before members refused direct callers: a workload
 * left running across an upgrade) does not read the guard marker, so the gateway's policies could be
 * bypassed by calling it directly. The gateway asks each member once, when it first sees it, without the
 * gateway key, and warns about one that answers, naming the restart that moves it to this version.
 *
 * A member reads the marker at most once per `MEMBER_GUARD_RECHECK_MS` (middleware/gateway-credential.ts),
 * so the question waits that long after the gateway started guarding the group: a member that had just
 * looked must not be taken for one that never looks.
 */
import type { Member } from "./membership.ts";

/** A member's cache of the guard marker, and a margin for the clocks of two processes. */
const MEMBER_GUARD_RECHECK_MS = 1_000;
const MARGIN_MS = 500;
const ASK_TIMEOUT_MS = 5_000;
/** In the warning, which the command that started a background gateway finds in its proxy log. */
export const UNGUARDED_MEMBER_MARKER = "answers callers that bypass this gateway's policies";
/** In the gateway's warning about AI clients that call its members directly (start.ts), relayed the same way. */
export const DIRECT_CLIENTS_MARKER = "registered with its workloads directly";

export interface UnguardedMemberCheck {
  /** Asks each member not asked before (called with every membership change); settles once they answered. */
  check(members: readonly Member[]): Promise<void>;
  /** Stops the questions not yet asked or answered. */
  close(): void;
}

export function unguardedMemberCheck(warn: (text: string) => void, now: () => number = Date.now): UnguardedMemberCheck {
  const guardedAt = now();
  const asked = new Set<string>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const stop = new AbortController();
  const ask = async (member: Member): Promise<void> => {
    if (!(await answersDirectCallers(member.url, stop.signal))) return;
    warn(
      `workload '${member.name}' ${UNGUARDED_MEMBER_MARKER}: an older mcpmgr started it, ` +
        `before workloads refused direct callers; move it to this version with 'mcpmgr restart ${member.name}' ` +
        `(docs/upgrading.md)`,
    );
  };
  return {
    async check(members) {
      const answers: Promise<void>[] = [];
      for (const member of members) {
        if (asked.has(member.name)) continue;
        asked.add(member.name);
        const { promise, resolve } = Promise.withResolvers<void>();
        const timer = setTimeout(
          () => {
            timers.delete(timer);
            void ask(member).finally(resolve);
          },
          Math.max(0, guardedAt + MEMBER_GUARD_RECHECK_MS + MARGIN_MS - now()),
        );
        timers.add(timer);
        answers.push(promise);
      }
      await Promise.all(answers);
    },
    close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      stop.abort();
    },
  };
}

/**
 * Whether the endpoint serves an MCP request that carries no credential: a guarded member refuses it
 * (403), one with authentication of its own asks for a token (401); anything else answered it. A ping,
 * which changes nothing; no answer at all (the member is restarting) says nothing either way.
 */
async function answersDirectCallers(url: string, signal: AbortSignal): Promise<boolean> {
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: "mcpmgr-gateway-guard-check", method: "ping" }),
      signal: AbortSignal.any([signal, AbortSignal.timeout(ASK_TIMEOUT_MS)]),
      redirect: "manual",
    });
    await response.body?.cancel();
    return response.status !== 401 && response.status !== 403 && response.status < 500;
  } catch {
    return false;
  }
}
