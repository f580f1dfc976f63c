/**
 * Races of a gateway session's subscriptions with its member sessions' ends (subs32), past the window
 * test file's (gateway-member-resubscribe-window.test.ts):
 *  - a subscribe that met a forgotten member session (404) is sent again on a new one; an unsubscribe
 *    the client sent in between is its last word, and the new member session must not be subscribed;
 *    and the other way round (review36): an unsubscribe sent again is not, when the client subscribed in
 *    between (the new member session, which subscribed the URI again, must stay subscribed);
 *  - a subscribe carried to the new member session (it was answered on the replaced one) that fails
 *    there for a passing reason (a 404 of the new session too) is not answered as invalid params;
 *  - a session's very first member session whose event stream failed to open before the session
 *    followed anything there carries no update: a subscribe on it replaces it; when the member session
 *    replacing it refuses the URI, the subscribe fails with that refusal (review36), as any carried one does.
 * Real SDK members (test/fixtures/member-server.ts) run with `mcpmgr run URL`, a real gateway, an SDK
 * client; the member holds requests (`holdSubscribes`, `forgetAtSubscribe`) to open each window.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { LoggingMessageNotificationSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
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

const RU = "retry://u";
const RV = "retry://v";
const CA = "carry://a";
const CB = "carry://b";
const QA = "quiet://a";
const QR = "quiet://refused";
/** What `quiet` refuses: read by each member session as it opens (the one replacing the first can refuse). */
const quietRefuses: string[] = [];
let retrying: MemberServer;
let carrying: MemberServer;
let quiet: MemberServer;
let group: TestGroup;
let gatewayUrl: string;

beforeAll(async () => {
  retrying = startMemberServer({ name: "retrying", resources: [RU, RV], subscribable: {} });
  carrying = startMemberServer({ name: "carrying", resources: [CA, CB], subscribable: {} });
  quiet = startMemberServer({ name: "quiet", resources: [QA, QR], subscribable: { refuse: quietRefuses } });
  group = await createTestGroup();
  group.run(retrying.url, "retrying", "races");
  group.run(carrying.url, "carrying", "races");
  group.run(quiet.url, "quiet", "races");
  gatewayUrl = (await group.gateway("races")).url;
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  await retrying?.stop();
  await carrying?.stop();
  await quiet?.stop();
});

const connected = (updates: string[]) => followingClient(gatewayUrl, "races", updates);

const ended = endFollowingClient;

test("a subscribe sent again after a 404 is not, when the client unsubscribed in between", async () => {
  const session = await connected([]);
  try {
    const opened = retrying.sessionsOpened;
    const release = retrying.forgetAtSubscribe();
    const subscribed = session.client.subscribeResource({ uri: RU });
    // The subscribe waits on its way to the member session, which will then be forgotten (404).
    expect(await until(() => retrying.forgetsWaiting === 1, 20_000)).toBe(true);
    // The client changes its mind: that unsubscribe is answered (on the session still there) first.
    await session.client.unsubscribeResource({ uri: RU });
    release();
    await subscribed;
    // The gateway opened a new member session for the 404: it was not subscribed there.
    expect(retrying.sessionsOpened).toBeGreaterThan(opened);
    expect(retrying.subscribers(RU)).toBe(0);
  } finally {
    await ended(session);
  }
});

test("an unsubscribe sent again after a 404 is not, when the client subscribed again in between", async () => {
  const updates: string[] = [];
  const session = await connected(updates);
  try {
    await session.client.subscribeResource({ uri: RV });
    expect(await until(() => retrying.subscribers(RV) === 1, 10_000)).toBe(true);
    const opened = retrying.sessionsOpened;
    const release = retrying.forgetAtUnsubscribe();
    const unsubscribed = session.client.unsubscribeResource({ uri: RV });
    // The unsubscribe waits on its way to the member session, which will then be forgotten (404).
    expect(await until(() => retrying.forgetsWaiting === 1, 20_000)).toBe(true);
    // The client changes its mind again: that subscribe is answered (on the session still there) first.
    await session.client.subscribeResource({ uri: RV });
    release();
    await unsubscribed;
    // The gateway opened a new member session for the 404, which subscribed RV again (the session follows
    // it): the unsubscribe, superseded, must not have been sent there.
    expect(await until(() => retrying.sessionsOpened > opened, 10_000)).toBe(true);
    expect(await until(() => retrying.subscribers(RV) === 1, 10_000)).toBe(true);
    expect(await receivesUpdate(updates, RV, () => retrying.updated(RV), 10_000)).toBe(true);
  } finally {
    await ended(session);
  }
});

test("a carried subscribe that the new member session fails to answer (404) is not answered as invalid params", async () => {
  const session = await connected([]);
  try {
    await session.client.subscribeResource({ uri: CA });
    expect(await until(() => carrying.subscribers(CA) === 1, 10_000)).toBe(true);
    const opened = carrying.sessionsOpened;
    const release = carrying.holdSubscribes();
    let failure: unknown;
    try {
      // B is held on the first member session.
      const subscribed = session.client.subscribeResource({ uri: CB }).catch((err: unknown) => {
        failure = err;
      });
      expect(await until(() => carrying.heldSubscribes === 1, 20_000)).toBe(true);
      // The new member session's re-subscription of A is held too.
      carrying.breakEventStream();
      expect(await until(() => carrying.sessionsOpened > opened && carrying.heldSubscribes === 2, 20_000)).toBe(true);
      // B, carried to the new member session, meets it forgotten (the member restarted once more).
      carrying.forgetAtSubscribe()();
      release();
      await subscribed;
    } finally {
      release();
    }
    expect(failure).toBeInstanceOf(McpError);
    const { code, message } = failure as McpError;
    expect(message).toContain(`did not take the subscription to ${JSON.stringify(CB)}`);
    // The member failed to answer: a passing failure (subscribe again), not the client's invalid params.
    expect(code).toBe(-32603);
  } finally {
    await ended(session);
  }
});

test("a session's first member session whose event stream failed to open is replaced by a subscribe there", async () => {
  const updates: string[] = [];
  quiet.refuseEventStreams(1);
  const release = quiet.holdSubscribes();
  const session = await connected(updates);
  try {
    const refused = quiet.eventStreamsRefused;
    const subscribed = session.client.subscribeResource({ uri: QA });
    // The session's first member session: its event stream refused, its subscribe held.
    expect(await until(() => quiet.eventStreamsRefused > refused && quiet.heldSubscribes === 1, 20_000)).toBe(true);
    release();
    await subscribed;
    expect(await receivesUpdate(updates, QA, () => quiet.updated(QA), 15_000)).toBe(true);
  } finally {
    release();
    await ended(session);
  }
});

test("a subscribe replacing a first member session without event stream fails when the new one refuses it", async () => {
  const warnings: string[] = [];
  quiet.refuseEventStreams(1);
  const release = quiet.holdSubscribes();
  const session = await connected([]);
  session.client.setNotificationHandler(
    LoggingMessageNotificationSchema,
    (n) => void warnings.push(String(n.params.data)),
  );
  try {
    const refused = quiet.eventStreamsRefused;
    const subscribed = session.client.subscribeResource({ uri: QR }).catch((err: unknown) => err);
    // The session's first member session: its event stream refused, its subscribe held (it takes QR)...
    expect(await until(() => quiet.eventStreamsRefused > refused && quiet.heldSubscribes === 1, 20_000)).toBe(true);
    // ...and the member session opened to replace it refuses QR.
    quietRefuses.push(QR);
    release();
    const answer = await subscribed;
    // Not {} (nothing follows QR for the session now): the refusal, in the answer, with no warning besides.
    expect(answer).toBeInstanceOf(McpError);
    const { code, message } = answer as McpError;
    expect(message).toContain(`did not take the subscription to ${JSON.stringify(QR)}`);
    expect(message).toContain(`quiet offers no updates of ${QR}`);
    expect(code).toBe(-32602);
    expect(warnings.filter((text) => text.includes(QR))).toEqual([]);
    expect(await until(() => quiet.subscribers(QR) === 0, 10_000)).toBe(true);
  } finally {
    release();
    quietRefuses.length = 0;
    await ended(session);
  }
});
