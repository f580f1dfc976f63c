/**
 * A member's side of the gateway key (middleware/gateway-credential.ts), with an injected clock and
 * key source: a replaced key is taken up within the re-read interval, made-up keys do not make every
 * request read the key file, and a member with its own --oidc-* takes the key only from a gateway that
 * authenticates its callers.
 */
import { describe, expect, test } from "bun:test";
import { cameFromGateway, memberGuard } from "../../src/middleware/gateway-credential.ts";
import type { GroupGuard } from "../../src/state/gateway-guard.ts";

const ctx = { remoteAddress: "", keepOpen() {} };
const KEY_A = `mcpmgr-gateway-${"a".repeat(43)}`;
const KEY_B = `mcpmgr-gateway-${"b".repeat(43)}`;

function setUp(options: { ownAuthentication: boolean; guard: GroupGuard; key: string | undefined }) {
  const state = { now: 0, key: options.key, guard: options.guard, keyReads: 0 };
  const handler = memberGuard({
    group: "team",
    key: () => {
      state.keyReads++;
      return state.key;
    },
    guard: () => state.guard,
    ownAuthentication: options.ownAuthentication,
    now: () => state.now,
  })((req) => new Response(cameFromGateway(req) ? "gateway" : "other"));
  const call = async (bearer?: string) => {
    const response = await handler(
      new Request("http://127.0.0.1/mcp", {
        method: "POST",
        headers: bearer ? { authorization: `Bearer ${bearer}` } : {},
      }),
      ctx,
    );
    return { status: response.status, body: await response.text() };
  };
  return { state, call };
}

describe("the gateway key at a member", () => {
  test("a replaced key is accepted within a second, without restarting the member", async () => {
    const { state, call } = setUp({
      ownAuthentication: false,
      guard: { guarded: true, authenticated: false },
      key: KEY_A,
    });
    expect((await call(KEY_A)).body).toBe("gateway");
    state.key = KEY_B;
    state.now = 1_000;
    expect((await call(KEY_B)).body).toBe("gateway");
    expect((await call(KEY_A)).status).toBe(403);
  });

  test("keys that do not match read the key file at most once a second", async () => {
    const { state, call } = setUp({
      ownAuthentication: false,
      guard: { guarded: false, authenticated: false },
      key: undefined,
    });
    for (let i = 0; i < 20; i++) expect((await call(KEY_B)).body).toBe("other");
    expect(state.keyReads).toBe(1);
    state.now = 1_000;
    await call(KEY_B);
    expect(state.keyReads).toBe(2);
  });

  test("a member with its own --oidc-* takes the key only while a gateway that authenticates guards its group", async () => {
    const { state, call } = setUp({
      ownAuthentication: true,
      guard: { guarded: false, authenticated: false },
      key: KEY_A,
    });
    const refused = await call(KEY_A);
    expect(refused.status).toBe(403);
    expect(refused.body).toContain("give the gateway of group 'team' --oidc-*");
    state.guard = { guarded: true, authenticated: false };
    expect((await call(KEY_A)).status).toBe(403);
    // Read afresh for a key holder: a gateway that just started is not refused for a second.
    state.guard = { guarded: true, authenticated: true };
    expect((await call(KEY_A)).body).toBe("gateway");
    // Anyone else goes on to the member's own authentication.
    expect((await call()).body).toBe("other");
  });

  test("a direct caller refused while a gateway guards the group is told where the gateway is", async () => {
    const { call } = setUp({ ownAuthentication: false, guard: { guarded: true, authenticated: false }, key: KEY_A });
    const refused = await call();
    expect(refused.status).toBe(403);
    expect(refused.body).toContain("its URL is in 'mcpmgr list' (a foreground gateway's in its terminal;");
    expect(refused.body).toContain("mcpmgr proxy stdio");
  });
});
