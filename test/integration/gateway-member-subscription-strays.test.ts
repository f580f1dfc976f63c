/**
 * A member session subscribed to what the gateway session no longer follows, or the other way round
 * (subs33). A 2025-era member answers each request on its own, so a subscribe and an unsubscribe of one URI
 * in flight together may be applied in either order, and a subscribe whose answer was lost may have been
 * applied all the same. The client's last word must hold all the same:
 *  - a URI it unsubscribed from (while its subscribe was in flight, the member applying that subscribe
 *    last) is announced no more: its updates are not passed on, and the member session is sent the
 *    unsubscribe again;
 *  - a URI it subscribed to again while its unsubscribe was in flight (the member applying the unsubscribe
 *    last) stays followed: the member session is subscribed again (and, if that finds the member session
 *    forgotten, the new one is);
 *    (a subscribe of it the client sends meanwhile waits for that unsubscribe's answer, or the member could
 *    apply it first; a subscribe the client withdrew is answered all the same, and has the unsubscribe sent
 *    once more: the member may have applied it after both);
 *  - a subscribe that withdrew an unsubscribe and failed on its way back (the member applied it) leaves
 *    the URI not followed, and its updates are not passed on;
 *  - an unsubscribe whose member session was forgotten (404) is answered `{}`, even by a member that
 *    refuses an unsubscribe of a URI it does not know (the new member session never had it);
 *  - at a member that speaks only 2026-07-28 (the gateway's listen stream names what the session follows,
 *    and changes one at a time), an update of a URI unsubscribed from that comes on the listen stream still
 *    open until its replacement is acknowledged is not passed on either.
 * Real SDK members (test/fixtures/member-server.ts) run with `mcpmgr run URL`, a real gateway, an SDK client;
 * the member holds its subscribes and unsubscribes (`holdSubscribes`, `holdUnsubscribes`) to set the order.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { type ListenMember, startListenMember } from "../fixtures/listen-member.ts";
import { type MemberServer, startMemberServer } from "../fixtures/member-server.ts";
import {
  createTestGroup,
  endFollowingClient,
  followingClient,
  receivesUpdate,
  type TestGroup,
  until,
} from "../support/gateway-group.ts";

setDefaultTimeout(60_000);

const XA = "stray://a";
const XU = "stray://u";
const XV = "stray://v";
const XW = "stray://w";
const XR = "stray://r";
const YA = "again://a";
const YB = "again://b";
const YC = "again://c";
const ZA = "lost://a";
const ZU = "lost://u";
const SA = "strict://a";
const SU = "strict://u";
let strays: MemberServer;
let again: MemberServer;
let lost: MemberServer;
let strict: MemberServer;
let modern: ListenMember;
let group: TestGroup;
let gatewayUrl: string;

beforeAll(async () => {
  strays = startMemberServer({ name: "strays", resources: [XA, XU, XV, XW, XR], subscribable: {} });
  again = startMemberServer({ name: "again", resources: [YA, YB, YC], subscribable: {} });
  lost = startMemberServer({ name: "lost", resources: [ZA, ZU], subscribable: {} });
  strict = startMemberServer({ name: "strict", resources: [SA, SU], subscribable: { strict: true } });
  group = await createTestGroup();
  group.run(strays.url, "strays", "strays");
  group.run(again.url, "again", "strays");
  group.run(lost.url, "lost", "strays");
  group.run(strict.url, "strict", "strays");
  modern = startListenMember();
  group.run(modern.url, "modern", "strays");
  gatewayUrl = (await group.gateway("strays")).url;
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  await strays?.stop();
  await again?.stop();
  await lost?.stop();
  await strict?.stop();
  modern?.stop();
});

const connected = (updates: string[]) => followingClient(gatewayUrl, "strays", updates);

const ended = endFollowingClient;

/**
 * Whether `stray`'s update, sent by `member` before one of `followed` (on the same event stream, so
 * arriving first if at all), stayed away from the client.
 */
async function keptAway(
  member: { updated(uri: string): unknown },
  updates: string[],
  stray: string,
  followed: string,
): Promise<boolean> {
  updates.length = 0;
  await member.updated(stray);
  expect(await until(async () => (await member.updated(followed), updates.includes(followed)), 10_000)).toBe(true);
  return !updates.includes(stray);
}

/** The client subscribes `uri` and unsubscribes from it before the member applies that subscribe (last). */
async function strayAt(member: MemberServer, client: Client, uri: string): Promise<void> {
  const release = member.holdSubscribes();
  let subscribed: Promise<unknown> = Promise.resolve();
  try {
    subscribed = client.subscribeResource({ uri });
    expect(await until(() => member.heldSubscribes === 1, 10_000)).toBe(true);
    expect(await client.unsubscribeResource({ uri })).toEqual({});
  } finally {
    release();
  }
  expect(await subscribed).toEqual({});
  expect(await until(() => member.subscribers(uri) === 1, 10_000)).toBe(true);
}

test("a URI unsubscribed while its subscribe was in flight, applied last by the member, sends the client no update", async () => {
  const updates: string[] = [];
  const session = await connected(updates);
  try {
    await session.client.subscribeResource({ uri: XA });
    expect(await receivesUpdate(updates, XA, () => strays.updated(XA), 10_000)).toBe(true);
    // The member applied the subscribe last: its session is subscribed to what the client left.
    await strayAt(strays, session.client, XU);
    expect(await keptAway(strays, updates, XU, XA)).toBe(true);
    // That member session was unsubscribed again.
    expect(await until(() => strays.subscribers(XU) === 0, 10_000)).toBe(true);
    // And a later subscribe of it is followed as any.
    await session.client.subscribeResource({ uri: XU });
    expect(await receivesUpdate(updates, XU, () => strays.updated(XU), 10_000)).toBe(true);
  } finally {
    await ended(session);
  }
});

test("a subscribe sent while the member session is being unsubscribed again waits for that, and is followed", async () => {
  const updates: string[] = [];
  const session = await connected(updates);
  try {
    await session.client.subscribeResource({ uri: XA });
    await strayAt(strays, session.client, XV);
    const release = strays.holdUnsubscribes();
    let subscribed: Promise<unknown> = Promise.resolve();
    try {
      // The stray update makes the gateway unsubscribe the member session again: held at the member.
      await strays.updated(XV);
      expect(await until(() => strays.heldUnsubscribes === 1, 10_000)).toBe(true);
      let answered = false;
      subscribed = session.client.subscribeResource({ uri: XV }).then((result) => {
        answered = true;
        return result;
      });
      // Sent on at once, the subscribe would be answered before that unsubscribe, which would undo it.
      await until(() => answered, 2_000);
    } finally {
      release();
    }
    expect(await subscribed).toEqual({});
    expect(await receivesUpdate(updates, XV, () => strays.updated(XV), 10_000)).toBe(true);
    expect(strays.subscribers(XV)).toBe(1);
  } finally {
    await ended(session);
  }
});

test("a subscribe withdrawn while it waited for the unsubscribe sent again is done with: a later stray is kept away", async () => {
  const updates: string[] = [];
  const session = await connected(updates);
  try {
    await session.client.subscribeResource({ uri: XA });
    await strayAt(strays, session.client, XW);
    const release = strays.holdUnsubscribes();
    let subscribed: Promise<unknown> = Promise.resolve();
    let unsubscribed: Promise<unknown> = Promise.resolve();
    try {
      await strays.updated(XW);
      expect(await until(() => strays.heldUnsubscribes === 1, 10_000)).toBe(true);
      subscribed = session.client.subscribeResource({ uri: XW });
      // The subscribe waits in the gateway; meanwhile the stray's updates pass (a subscribe is in flight).
      expect(await until(async () => (await strays.updated(XW), updates.includes(XW)), 10_000)).toBe(true);
      // The client changes its mind before that subscribe was sent: it is withdrawn, never sent.
      unsubscribed = session.client.unsubscribeResource({ uri: XW });
      expect(await until(() => strays.heldUnsubscribes === 2, 10_000)).toBe(true);
    } finally {
      release();
    }
    expect(await subscribed).toEqual({});
    expect(await unsubscribed).toEqual({});
    expect(await until(() => strays.subscribers(XW) === 0, 10_000)).toBe(true);
    // That withdrawn subscribe is no longer in flight: a later stray of the URI is kept away as any.
    await strayAt(strays, session.client, XW);
    expect(await keptAway(strays, updates, XW, XA)).toBe(true);
    expect(await until(() => strays.subscribers(XW) === 0, 10_000)).toBe(true);
  } finally {
    await ended(session);
  }
});

test("a subscribe the client unsubscribed after, applied by the member after the unsubscribe sent again, has it sent once more", async () => {
  const updates: string[] = [];
  const session = await connected(updates);
  try {
    await session.client.subscribeResource({ uri: XA });
    await session.client.subscribeResource({ uri: XR });
    expect(await until(() => strays.subscribers(XR) === 1, 10_000)).toBe(true);
    const releaseSubscribes = strays.holdSubscribes();
    const releaseUnsubscribes = strays.holdUnsubscribes();
    let subscribed: Promise<unknown> = Promise.resolve();
    let unsubscribed: Promise<unknown> = Promise.resolve();
    try {
      // A subscribe of a URI followed already (a set), held; then the client leaves the URI, held too.
      subscribed = session.client.subscribeResource({ uri: XR });
      expect(await until(() => strays.heldSubscribes === 1, 10_000)).toBe(true);
      unsubscribed = session.client.unsubscribeResource({ uri: XR });
      expect(await until(() => strays.heldUnsubscribes === 1, 10_000)).toBe(true);
      // An update sent before the member applied that unsubscribe: the gateway sends it again (held).
      await strays.updated(XR);
      expect(await until(() => strays.heldUnsubscribes === 2, 10_000)).toBe(true);
      // The member applies both unsubscribes, then the subscribe: its session holds the URI once more.
      releaseUnsubscribes();
      expect(await unsubscribed).toEqual({});
      expect(await until(() => strays.heldUnsubscribes === 0, 10_000)).toBe(true);
    } finally {
      releaseUnsubscribes();
      releaseSubscribes();
    }
    expect(await subscribed).toEqual({});
    expect(await until(() => strays.subscribers(XR) === 1, 10_000)).toBe(true);
    // Its updates stay away, and the first one has the member session unsubscribed again.
    expect(await keptAway(strays, updates, XR, XA)).toBe(true);
    expect(await until(() => strays.subscribers(XR) === 0, 10_000)).toBe(true);
  } finally {
    await ended(session);
  }
});

test("a URI subscribed again while its unsubscribe was in flight, applied last by the member, stays followed", async () => {
  const updates: string[] = [];
  const session = await connected(updates);
  try {
    await session.client.subscribeResource({ uri: YA });
    expect(await until(() => again.subscribers(YA) === 1, 10_000)).toBe(true);
    const release = again.holdUnsubscribes();
    let unsubscribed: Promise<unknown> = Promise.resolve();
    try {
      // The unsubscribe waits at the member, not yet applied; the subscribe after it passes it.
      unsubscribed = session.client.unsubscribeResource({ uri: YA });
      expect(await until(() => again.heldUnsubscribes === 1, 10_000)).toBe(true);
      expect(await session.client.subscribeResource({ uri: YA })).toEqual({});
    } finally {
      release();
    }
    expect(await unsubscribed).toEqual({});
    // The member applied the unsubscribe last; the client's last word was subscribe: followed all the same.
    expect(await receivesUpdate(updates, YA, () => again.updated(YA), 10_000)).toBe(true);
    expect(again.subscribers(YA)).toBe(1);
  } finally {
    await ended(session);
  }
});

test("a URI subscribed again after its reordered unsubscribe stays followed when the member forgets the session as it is subscribed once more", async () => {
  const updates: string[] = [];
  const session = await connected(updates);
  try {
    await session.client.subscribeResource({ uri: YC });
    await session.client.subscribeResource({ uri: YB });
    expect(await until(() => again.subscribers(YB) === 1, 10_000)).toBe(true);
    const opened = again.sessionsOpened;
    const releaseUnsubscribes = again.holdUnsubscribes();
    let unsubscribed: Promise<unknown> = Promise.resolve();
    let forget = () => {};
    try {
      unsubscribed = session.client.unsubscribeResource({ uri: YB });
      expect(await until(() => again.heldUnsubscribes === 1, 10_000)).toBe(true);
      expect(await session.client.subscribeResource({ uri: YB })).toEqual({});
      // The gateway's subscribe once more, after that unsubscribe, meets a member that restarted (404).
      forget = again.forgetAtSubscribe();
      releaseUnsubscribes();
      expect(await unsubscribed).toEqual({});
      expect(await until(() => again.forgetsWaiting === 1, 10_000)).toBe(true);
    } finally {
      releaseUnsubscribes();
      forget();
    }
    // As after any restart: the new member session is subscribed to what the client follows, YB too.
    expect(await until(() => again.sessionsOpened > opened, 10_000)).toBe(true);
    expect(await receivesUpdate(updates, YC, () => again.updated(YC), 10_000)).toBe(true);
    expect(await receivesUpdate(updates, YB, () => again.updated(YB), 10_000)).toBe(true);
  } finally {
    await ended(session);
  }
});

test("a subscribe that withdrew an unsubscribe and whose answer was lost leaves the URI unfollowed, its updates kept away", async () => {
  const updates: string[] = [];
  const session = await connected(updates);
  try {
    await session.client.subscribeResource({ uri: ZA });
    await session.client.subscribeResource({ uri: ZU });
    expect(await until(() => lost.subscribers(ZU) === 1, 10_000)).toBe(true);
    const releaseUnsubscribes = lost.holdUnsubscribes();
    const releaseSubscribes = lost.holdSubscribes();
    let unsubscribed: Promise<unknown> = Promise.resolve();
    let subscribed: Promise<unknown> = Promise.resolve();
    try {
      unsubscribed = session.client.unsubscribeResource({ uri: ZU });
      expect(await until(() => lost.heldUnsubscribes === 1, 10_000)).toBe(true);
      // The client changes its mind; that subscribe will be applied, and its answer lost on the way back.
      lost.failAfterSubscribe();
      subscribed = session.client.subscribeResource({ uri: ZU }).catch((err: unknown) => err);
      expect(await until(() => lost.heldSubscribes === 1, 10_000)).toBe(true);
      // The member applies the unsubscribe first, then the subscribe.
      releaseUnsubscribes();
      expect(await unsubscribed).toEqual({});
    } finally {
      releaseUnsubscribes();
      releaseSubscribes();
    }
    const answer = await subscribed;
    expect(answer).toBeInstanceOf(McpError);
    expect((answer as McpError).code).toBe(-32603);
    // The client follows ZU no more (its subscribe failed), though the member session holds it.
    expect(await until(() => lost.subscribers(ZU) === 1, 10_000)).toBe(true);
    expect(await keptAway(lost, updates, ZU, ZA)).toBe(true);
    expect(await until(() => lost.subscribers(ZU) === 0, 10_000)).toBe(true);
  } finally {
    await ended(session);
  }
});

test("an unsubscribe whose member session was forgotten is answered {}, though the new one refuses unknown URIs", async () => {
  const updates: string[] = [];
  const session = await connected(updates);
  try {
    await session.client.subscribeResource({ uri: SA });
    await session.client.subscribeResource({ uri: SU });
    expect(await until(() => strict.subscribers(SU) === 1, 10_000)).toBe(true);
    const opened = strict.sessionsOpened;
    const release = strict.forgetAtUnsubscribe();
    const unsubscribed = session.client.unsubscribeResource({ uri: SU }).catch((err: unknown) => err);
    // The unsubscribe waits on its way to the member session, which will then be forgotten (404).
    expect(await until(() => strict.forgetsWaiting === 1, 20_000)).toBe(true);
    release();
    expect(await unsubscribed).toEqual({});
    // The gateway's state is whole: SA followed on the new member session, SU not, and subscribable again.
    expect(await until(() => strict.sessionsOpened > opened, 10_000)).toBe(true);
    expect(await receivesUpdate(updates, SA, () => strict.updated(SA), 10_000)).toBe(true);
    expect(strict.subscribers(SU)).toBe(0);
    await session.client.subscribeResource({ uri: SU });
    expect(await receivesUpdate(updates, SU, () => strict.updated(SU), 10_000)).toBe(true);
  } finally {
    await ended(session);
  }
});

test("a 2026-07-28 member's update of a URI unsubscribed from, on the listen stream not yet replaced, is not passed on", async () => {
  const updates: string[] = [];
  const session = await connected(updates);
  const [MA, MU] = ["test://doc/1", "test://doc/2"];
  try {
    await session.client.subscribeResource({ uri: MA });
    await session.client.subscribeResource({ uri: MU });
    expect(await receivesUpdate(updates, MU, () => modern.updated(MU), 10_000)).toBe(true);
    const release = modern.holdListens();
    let unsubscribed: Promise<unknown> = Promise.resolve();
    try {
      // The listen naming MA alone waits, unacknowledged: the one naming both stays open meanwhile.
      unsubscribed = session.client.unsubscribeResource({ uri: MU });
      expect(await until(() => modern.heldListens === 1, 10_000)).toBe(true);
      expect(await keptAway(modern, updates, MU, MA)).toBe(true);
    } finally {
      release();
    }
    expect(await unsubscribed).toEqual({});
    expect(await until(() => modern.openListens === 1, 10_000)).toBe(true);
    expect(await keptAway(modern, updates, MU, MA)).toBe(true);
  } finally {
    await ended(session);
  }
});
