/**
 * The window while a gateway session's member session is replaced for its subscriptions (subs31): the
 * old member session's event stream can no longer be reopened, the gateway opens a new one and
 * subscribes the session's resources there again. Two things could go wrong in that window:
 *  - an update the member sends before the new session's subscribe is answered reaches no one (the old
 *    session cannot deliver it, the new one is not subscribed yet): the client must still hear that the
 *    resource may have changed (at least once);
 *  - a subscribe of the client's answered on the old session after the re-subscription took its list
 *    of URIs: the client was told it follows the resource, but the new session never subscribed it.
 * The member holds its subscribes unanswered (`holdSubscribes`) to open the window for as long as the
 * test needs. Review 32 added: a URI unsubscribed while its subscribe was in flight; a carried subscribe
 * the new member session refuses; the gap while an event stream is down before its reopening on the
 * same session (and a stream that keeps being cut: no announcement at every reopening); several clients
 * at one member; a new member session whose first event stream is refused.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { type MemberServer, startMemberServer } from "../fixtures/member-server.ts";
import { createTestGroup, followingClient, receivesUpdate, type TestGroup, until } from "../support/gateway-group.ts";

setDefaultTimeout(60_000);

const A = "gap://a";
const LA = "late://a";
const B = "late://b";
const TA = "toggle://a";
const TU = "toggle://u";
const RA = "refuse://a";
const RB = "refuse://b";
/** What `refusing` refuses: read by each member session as it opens (a later session can refuse what an earlier took). */
const refusedLater: string[] = [];
const DA = "drop://a";
const DB = "drop://b";
const SA = "shared://a";
const SB = "shared://b";
const FA = "first://a";
const MANY = Array.from({ length: 20 }, (_, i) => `flap://${i}`);
let gap: MemberServer;
let late: MemberServer;
let toggle: MemberServer;
let refusing: MemberServer;
let dropping: MemberServer;
let flapping: MemberServer;
let shared: MemberServer;
let firstGet: MemberServer;
let group: TestGroup;
let gatewayUrl: string;

beforeAll(async () => {
  gap = startMemberServer({ name: "gap", resources: [A], subscribable: {} });
  late = startMemberServer({ name: "late", resources: [LA, B], subscribable: {} });
  toggle = startMemberServer({ name: "toggle", resources: [TA, TU], subscribable: {} });
  refusing = startMemberServer({ name: "refusing", resources: [RA, RB], subscribable: { refuse: refusedLater } });
  dropping = startMemberServer({ name: "dropping", resources: [DA, DB], subscribable: {} });
  flapping = startMemberServer({ name: "flapping", resources: MANY, subscribable: {} });
  shared = startMemberServer({ name: "shared", resources: [SA, SB], subscribable: {} });
  firstGet = startMemberServer({ name: "first", resources: [FA], subscribable: {} });
  group = await createTestGroup();
  group.run(gap.url, "gap", "window");
  group.run(late.url, "late", "window");
  group.run(toggle.url, "toggle", "window");
  group.run(refusing.url, "refusing", "window");
  group.run(dropping.url, "dropping", "window");
  group.run(flapping.url, "flapping", "window");
  group.run(shared.url, "shared", "window");
  group.run(firstGet.url, "first", "window");
  gatewayUrl = (await group.gateway("window")).url;
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  await gap?.stop();
  await late?.stop();
  await toggle?.stop();
  await refusing?.stop();
  await dropping?.stop();
  await flapping?.stop();
  await shared?.stop();
  await firstGet?.stop();
});

const connected = (updates: string[]) => followingClient(gatewayUrl, "window", updates);

/** Whether `uri`'s updates reach the client: `member` announces one until it arrives. */
const receives = (member: MemberServer, updates: string[], uri: string) =>
  receivesUpdate(updates, uri, () => member.updated(uri), 15_000);

test("an update sent while the new member session is being subscribed still reaches the client", async () => {
  const updates: string[] = [];
  const { client, transport } = await connected(updates);
  try {
    await client.subscribeResource({ uri: A });
    expect(await receives(gap, updates, A)).toBe(true);
    const opened = gap.sessionsOpened;
    const release = gap.holdSubscribes();
    try {
      gap.breakEventStream();
      // The new member session exists and its subscribe of A waits, unanswered.
      expect(await until(() => gap.sessionsOpened > opened && gap.heldSubscribes === 1, 20_000)).toBe(true);
      updates.length = 0;
      // The member sends A's update now: to the old session (whose stream is gone) only.
      await gap.updated(A);
    } finally {
      release();
    }
    expect(await until(() => gap.subscribers(A) >= 1 && gap.heldSubscribes === 0, 10_000)).toBe(true);
    // Nothing more from the member: the client hears of A all the same, once the new session follows it.
    expect(await until(() => updates.includes(A), 10_000)).toBe(true);
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
});

test("a subscribe answered on the old member session after the re-subscription began is carried to the new one", async () => {
  const updates: string[] = [];
  const { client, transport } = await connected(updates);
  try {
    await client.subscribeResource({ uri: LA });
    expect(await receives(late, updates, LA)).toBe(true);
    const opened = late.sessionsOpened;
    const release = late.holdSubscribes();
    let subscribed: Promise<unknown> = Promise.resolve();
    try {
      // B's subscribe is in flight on the old member session...
      subscribed = client.subscribeResource({ uri: B }).catch((err: unknown) => err);
      expect(await until(() => late.heldSubscribes === 1, 10_000)).toBe(true);
      // ...when its stream is lost: the new session's re-subscription (of A alone) starts.
      late.breakEventStream();
      expect(await until(() => late.sessionsOpened > opened && late.heldSubscribes === 2, 20_000)).toBe(true);
    } finally {
      release();
    }
    expect(await subscribed).toEqual({});
    // The old session is ended once B's subscribe is answered; B's updates come on the new one.
    expect(await until(() => late.deletes.length === 1, 10_000)).toBe(true);
    expect(await receives(late, updates, LA)).toBe(true);
    expect(await receives(late, updates, B)).toBe(true);
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
});

test("a URI unsubscribed while its subscribe was in flight is neither announced nor subscribed again on a new member session", async () => {
  const updates: string[] = [];
  const { client, transport } = await connected(updates);
  try {
    await client.subscribeResource({ uri: TA });
    expect(await receives(toggle, updates, TA)).toBe(true);
    const release = toggle.holdSubscribes();
    let subscribed: Promise<unknown> = Promise.resolve();
    try {
      // The client subscribes U and, before that is answered, unsubscribes from it: its last word is unsubscribe.
      subscribed = client.subscribeResource({ uri: TU }).catch((err: unknown) => err);
      expect(await until(() => toggle.heldSubscribes === 1, 10_000)).toBe(true);
      expect(await client.unsubscribeResource({ uri: TU })).toEqual({});
    } finally {
      release();
    }
    expect(await subscribed).toEqual({});
    const opened = toggle.sessionsOpened;
    toggle.breakEventStream();
    expect(await until(() => toggle.sessionsOpened > opened && toggle.deletes.length === 1, 20_000)).toBe(true);
    updates.length = 0;
    // The new member session follows A (announced, then the workload's own updates)...
    expect(await receives(toggle, updates, TA)).toBe(true);
    // ...and not U: nothing subscribed it there, and the client was not told it changed.
    expect(toggle.subscribers(TU)).toBe(0);
    expect(updates).not.toContain(TU);
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
});

test("a subscribe the new member session refuses when it is carried there fails, instead of answering {}", async () => {
  const updates: string[] = [];
  const warnings: string[] = [];
  const { client, transport } = await connected(updates);
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void warnings.push(String(n.params.data)));
  try {
    await client.subscribeResource({ uri: RA });
    expect(await receives(refusing, updates, RA)).toBe(true);
    const opened = refusing.sessionsOpened;
    const release = refusing.holdSubscribes();
    let subscribed: Promise<unknown> = Promise.resolve();
    try {
      // B's subscribe is in flight on the old member session (which takes it)...
      subscribed = client.subscribeResource({ uri: RB }).catch((err: unknown) => err);
      expect(await until(() => refusing.heldSubscribes === 1, 10_000)).toBe(true);
      // ...and the member session opened next refuses B.
      refusedLater.push(RB);
      refusing.breakEventStream();
      expect(await until(() => refusing.sessionsOpened > opened && refusing.heldSubscribes === 2, 20_000)).toBe(true);
    } finally {
      release();
    }
    const answer = await subscribed;
    // The client is not told it follows B: its subscribe fails with the workload's refusal.
    expect(answer).toBeInstanceOf(Error);
    const message = String((answer as Error).message);
    expect(message).toContain(`workload 'refusing' did not take the subscription to "${RB}"`);
    expect(message).toContain(`refusing offers no updates of ${RB}`);
    // Told once, in the answer: no warning besides.
    expect(warnings.filter((text) => text.includes(RB))).toEqual([]);
    // A is still followed, and subscribing B is no longer recorded (nothing to subscribe again later).
    expect(await receives(refusing, updates, RA)).toBe(true);
    expect(refusing.subscribers(RB)).toBe(0);
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
});

test("an update sent while a member session's event stream is down, before its reopening, still reaches the client", async () => {
  const updates: string[] = [];
  const { client, transport } = await connected(updates);
  try {
    await client.subscribeResource({ uri: DA });
    await client.subscribeResource({ uri: DB });
    expect(await receives(dropping, updates, DA)).toBe(true);
    const sessions = dropping.sessionsOpened;
    const streams = dropping.eventStreamsOpened;
    dropping.dropEventStream();
    updates.length = 0;
    // Sent while no event stream of the session is open: the member keeps no events to replay.
    await dropping.updated(DB);
    // The gateway's member client reopens the stream on the same session (no new member session)...
    expect(await until(() => dropping.eventStreamsOpened > streams, 10_000)).toBe(true);
    expect(dropping.sessionsOpened).toBe(sessions);
    // ...and the client hears of B all the same, with nothing more sent by the member.
    expect(await until(() => updates.includes(DB), 5_000)).toBe(true);
    // The workload's own updates still come through.
    expect(await receives(dropping, updates, DB)).toBe(true);
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
});

test("a member session whose event stream keeps ending: what it follows is not announced at every reopening", async () => {
  const updates: string[] = [];
  const { client, transport } = await connected(updates);
  try {
    for (const uri of MANY) await client.subscribeResource({ uri });
    expect(await receives(flapping, updates, MANY[0] as string)).toBe(true);
    const sessions = flapping.sessionsOpened;
    const streams = flapping.eventStreamsOpened;
    updates.length = 0;
    // A hop that ends the stream as soon as it is open again, for 4 s: the member client reopens it each time.
    const until4s = Date.now() + 4_000;
    let seen = flapping.eventStreamsOpened;
    flapping.dropEventStream();
    while (Date.now() < until4s) {
      if (flapping.eventStreamsOpened > seen) {
        seen = flapping.eventStreamsOpened;
        flapping.dropEventStream();
      }
      await Bun.sleep(20);
    }
    expect(flapping.sessionsOpened).toBe(sessions);
    const reopenings = flapping.eventStreamsOpened - streams;
    expect(reopenings).toBeGreaterThanOrEqual(3);
    // At once for the first reopening; the later ones once, after a pause (changed-maybe.ts), not each.
    expect(updates.filter((uri) => uri === MANY[1])).toEqual([MANY[1] as string]);
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
});

test("several clients at one member: the announcements go to the session replaced alone, and not after it ended", async () => {
  const first: string[] = [];
  const second: string[] = [];
  const one = await connected(first);
  const two = await connected(second);
  try {
    await one.client.subscribeResource({ uri: SA });
    expect(await receives(shared, first, SA)).toBe(true);
    // The gateway's own (catalog) member session and the first client's.
    const before = shared.sessionCount;
    // The second client's member session opens its event stream last: the one the member breaks.
    await two.client.subscribeResource({ uri: SA });
    await two.client.subscribeResource({ uri: SB });
    expect(await receives(shared, second, SB)).toBe(true);
    first.length = 0;
    second.length = 0;
    const opened = shared.sessionsOpened;
    shared.breakEventStream();
    // The second client hears of both URIs it follows (the gateway's own announcement), the first of none.
    expect(await until(() => second.includes(SA) && second.includes(SB), 20_000)).toBe(true);
    expect(shared.sessionsOpened).toBe(opened + 1);
    expect(first).toEqual([]);
    // The second session's re-subscription waits at the member when that session ends.
    const release = shared.holdSubscribes();
    try {
      shared.breakEventStream();
      expect(await until(() => shared.heldSubscribes === 2, 20_000)).toBe(true);
      await two.transport.terminateSession();
    } finally {
      release();
    }
    // Its member sessions are all ended (the last once its re-subscription is answered), none left behind...
    expect(await until(() => shared.sessionCount === before, 10_000)).toBe(true);
    // ...and the first client's subscription is unharmed.
    expect(await receives(shared, first, SA)).toBe(true);
  } finally {
    await one.transport.terminateSession().catch(() => {});
    await one.client.close();
    await two.client.close();
  }
});

test("a new member session whose first event stream is refused is replaced: the SDK never opens it again", async () => {
  const updates: string[] = [];
  const { client, transport } = await connected(updates);
  try {
    await client.subscribeResource({ uri: FA });
    expect(await receives(firstGet, updates, FA)).toBe(true);
    const opened = firstGet.sessionsOpened;
    // The session opened for the lost one gets 503 for its first GET (the old one's are refused anyway).
    firstGet.refuseEventStreams(1);
    firstGet.breakEventStream();
    expect(await until(() => firstGet.sessionsOpened > opened, 20_000)).toBe(true);
    // The workload's own updates reach the client again (not only the gateway's announcement).
    expect(await receives(firstGet, updates, FA)).toBe(true);
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
});
