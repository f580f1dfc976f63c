/**
 * The upkeep of an OAuth grant (auth/outgoing/grant-session.ts) with a fake clock and an
 * in-memory store: when it refreshes, that concurrent requests share one renewal, how it
 * retries and when it logs in again, and step-up. The refresh and login calls are recorded
 * stand-ins; the real ones (oauth4webapi against oidc-provider) are the integration tests'.
 */
import { expect, test } from "bun:test";
import {
  type Clock,
  type GrantStore,
  openGrantSession,
  refreshLeadMs,
  type StoredGrant,
} from "../../src/auth/outgoing/grant-session.ts";
import { RefreshFailed, type TokenSet } from "../../src/auth/outgoing/oauth-client.ts";
import {
  MAX_NEW_SCOPES,
  MAX_SCOPES,
  MAX_REMOTE_LOGINS,
  REMOTE_LOGIN_WINDOW_MS,
  loginPolicy,
} from "../../src/auth/outgoing/login-policy.ts";
import { McpmgrError } from "../../src/errors.ts";

const HOUR = 3_600_000;

function fakeClock(start = 1_000_000): Clock & { t: number; slept: number[] } {
  const clock = {
    t: start,
    slept: [] as number[],
    now: () => clock.t,
    sleep: async (ms: number) => {
      clock.slept.push(ms);
      clock.t += ms;
    },
  };
  return clock;
}

function memoryStore(initial: StoredGrant = {}): GrantStore & { value: StoredGrant } {
  const store = {
    value: initial,
    load: async () => store.value,
    save: async (value: StoredGrant) => {
      store.value = value;
    },
  };
  return store;
}

interface Harness {
  clock: ReturnType<typeof fakeClock>;
  store: ReturnType<typeof memoryStore>;
  refreshes: string[];
  logins: (readonly string[])[];
  exclusives: number;
  logs: string[];
}

/** Tokens issued at the fake clock's now, numbered so each one is recognisable. */
let issued = 0;
function tokensAt(clock: Clock, lifetimeMs = HOUR, refreshToken: string | undefined = `rt-${issued + 1}`): TokenSet {
  issued++;
  return { accessToken: `at-${issued}`, refreshToken, expiresAt: clock.now() + lifetimeMs, lifetimeMs };
}

async function session(
  options: {
    stored?: StoredGrant;
    refresh?: (h: Harness, refreshToken: string) => Promise<TokenSet>;
    login?: (h: Harness, scopes: readonly string[]) => Promise<TokenSet>;
    scopes?: string[];
    /** A background workload's policy: step-ups deferred with this hint. */
    deferTo?: string;
    clock?: ReturnType<typeof fakeClock>;
    store?: ReturnType<typeof memoryStore>;
    /** The token source's say on logins the session starts by itself. */
    beforeLogin?: () => void;
  } = {},
) {
  const h: Harness = {
    clock: options.clock ?? fakeClock(),
    store: options.store ?? memoryStore(options.stored),
    refreshes: [],
    logins: [],
    exclusives: 0,
    logs: [],
  };
  const s = await openGrantSession({
    client: { clientId: "client" },
    storeClient: true,
    scopes: options.scopes ?? ["mcp:read"],
    store: h.store,
    clock: h.clock,
    refresh: async (refreshToken) => {
      h.refreshes.push(refreshToken);
      return options.refresh ? options.refresh(h, refreshToken) : tokensAt(h.clock);
    },
    login: async (scopes) => {
      h.logins.push(scopes);
      return options.login ? options.login(h, scopes) : tokensAt(h.clock);
    },
    exclusive: async (renew) => {
      h.exclusives++;
      return renew();
    },
    log: { info: (text) => h.logs.push(text), warn: (text) => h.logs.push(text) },
    ...(options.deferTo !== undefined ? { stepUps: loginPolicy({ now: h.clock.now, deferTo: options.deferTo }) } : {}),
    ...(options.beforeLogin ? { beforeLogin: options.beforeLogin } : {}),
  });
  return { s, h };
}

test("the lead before expiry: a minute, or half the lifetime of short-lived tokens", () => {
  expect(refreshLeadMs({ accessToken: "a", lifetimeMs: HOUR })).toBe(60_000);
  expect(refreshLeadMs({ accessToken: "a", lifetimeMs: 40_000 })).toBe(20_000);
  expect(refreshLeadMs({ accessToken: "a" })).toBe(60_000);
});

test("no tokens stored: the first request logs in; the token is then served from memory until a minute before it expires", async () => {
  const { s, h } = await session();
  const first = await s.current();
  expect(h.logins).toEqual([["mcp:read"]]);
  expect(h.store.value.accessToken).toBe(first.accessToken);
  expect(h.store.value.clientId).toBe("client");

  h.clock.t += HOUR - 60_001;
  expect((await s.current()).accessToken).toBe(first.accessToken);
  expect(h.refreshes).toEqual([]);

  h.clock.t += 2;
  const second = await s.current();
  expect(h.refreshes).toEqual([first.refreshToken as string]);
  expect(second.accessToken).not.toBe(first.accessToken);
  expect(h.logins.length).toBe(1);
});

test("a short-lived token is refreshed at half-life", async () => {
  const { s, h } = await session({ login: async (h) => tokensAt(h.clock, 40_000) });
  await s.current();
  h.clock.t += 19_999;
  await s.current();
  expect(h.refreshes.length).toBe(0);
  h.clock.t += 2;
  await s.current();
  expect(h.refreshes.length).toBe(1);
});

test("a stored, still valid token is used at once: no browser after a restart", async () => {
  const clockNow = fakeClock().now();
  const { s, h } = await session({
    stored: { accessToken: "stored", refreshToken: "rt", expiresAt: clockNow + HOUR, lifetimeMs: HOUR },
  });
  expect((await s.current()).accessToken).toBe("stored");
  expect(h.logins).toEqual([]);
  expect(h.refreshes).toEqual([]);
});

test("concurrent requests with an expired token share one renewal", async () => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const { s, h } = await session({
    stored: { accessToken: "old", refreshToken: "rt-old", expiresAt: 0 },
    refresh: async (h) => {
      await gate;
      return tokensAt(h.clock);
    },
  });
  const waiting = Array.from({ length: 20 }, () => s.current());
  release();
  const tokens = await Promise.all(waiting);
  expect(new Set(tokens.map((t) => t.accessToken)).size).toBe(1);
  expect(h.refreshes).toEqual(["rt-old"]);
  expect(h.exclusives).toBe(1);
});

test("a refresh that fails for a while is retried with growing pauses, then succeeds", async () => {
  let failures = 2;
  const { s, h } = await session({
    stored: { accessToken: "old", refreshToken: "rt-old", expiresAt: 0 },
    refresh: async (h) => {
      if (failures-- > 0) throw new RefreshFailed("the refresh failed (timeout)", false);
      return tokensAt(h.clock);
    },
  });
  await s.current();
  expect(h.refreshes.length).toBe(3);
  expect(h.clock.slept).toEqual([500, 1000]);
  expect(h.logins).toEqual([]);
});

test("a refresh that keeps failing, or a revoked grant, ends in a login saying why", async () => {
  const failing = await session({
    stored: { accessToken: "old", refreshToken: "rt-old", expiresAt: 0 },
    refresh: async () => {
      throw new RefreshFailed("the refresh failed (timeout)", false);
    },
  });
  await failing.s.current();
  expect(failing.h.refreshes.length).toBe(3);
  expect(failing.h.logins.length).toBe(1);
  expect(failing.h.logs.at(-1)).toContain("could not be refreshed");

  const revoked = await session({
    stored: { accessToken: "old", refreshToken: "rt-old", expiresAt: 0 },
    refresh: async () => {
      throw new RefreshFailed("the refresh was refused (invalid_grant)", true);
    },
  });
  await revoked.s.current();
  expect(revoked.h.refreshes.length).toBe(1);
  expect(revoked.h.logins.length).toBe(1);
  expect(revoked.h.logs.at(-1)).toContain("revoked or expired");
});

test("tokens another process stored meanwhile are taken instead of refreshing again", async () => {
  const { s, h } = await session({ stored: { accessToken: "old", refreshToken: "rt-old", expiresAt: 0 } });
  h.store.value = { accessToken: "theirs", refreshToken: "rt-theirs", expiresAt: h.clock.now() + HOUR };
  expect((await s.current()).accessToken).toBe("theirs");
  expect(h.refreshes).toEqual([]);
});

test("a refused token is forgotten only if it is the one in use", async () => {
  const { s, h } = await session();
  const first = await s.current();
  s.expire("Bearer someone-else");
  expect((await s.current()).accessToken).toBe(first.accessToken);
  s.expire(`Bearer ${first.accessToken}`);
  expect((await s.current()).accessToken).not.toBe(first.accessToken);
  expect(h.refreshes).toEqual([first.refreshToken as string]);
});

test("step-up logs in for the union of the scopes, once per scope set", async () => {
  const { s, h } = await session({ scopes: ["mcp:read"] });
  await s.current();
  expect(await s.stepUp(["mcp:write"])).toBe(true);
  expect(h.logins.at(-1)).toEqual(["mcp:read", "mcp:write"]);
  // The same set again would loop: refused, no login.
  expect(await s.stepUp(["mcp:write"])).toBe(false);
  expect(h.logins.length).toBe(2);
  // Later renewals keep the larger set.
  s.expire(`Bearer ${(await s.current()).accessToken}`);
  h.store.value = { ...h.store.value, refreshToken: undefined };
  await s.current();
  expect(h.logins.at(-1)).toEqual(["mcp:read", "mcp:write"]);
});

test("a step-up while a refresh is in flight waits for it, and its token is the one kept", async () => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const { s, h } = await session({
    stored: { accessToken: "old", refreshToken: "rt-old", expiresAt: 0 },
    refresh: async (h) => {
      await gate;
      return { ...tokensAt(h.clock), accessToken: "refreshed" };
    },
    login: async (h) => ({ ...tokensAt(h.clock), accessToken: "stepped-up" }),
  });
  const refreshing = s.current();
  const stepping = s.stepUp(["mcp:admin"]);
  release();
  await Promise.all([refreshing, stepping]);
  expect((await s.current()).accessToken).toBe("stepped-up");
  expect(h.store.value.accessToken).toBe("stepped-up");
});

test("a remote refusing every token forces one renewal per 30 s, not one per request", async () => {
  const { s, h } = await session();
  const first = await s.current();
  expect(s.expire(`Bearer ${first.accessToken}`)).toBe("renew");
  const second = await s.current();
  expect(h.refreshes).toHaveLength(1);
  // Refused again at once: the renewed token is kept, the authorization server is not asked.
  for (let i = 0; i < 5; i++) {
    expect(s.expire(`Bearer ${second.accessToken}`)).toBe("throttled");
    expect((await s.current()).accessToken).toBe(second.accessToken);
  }
  expect(h.refreshes).toHaveLength(1);
  h.clock.t += 30_000;
  expect(s.expire(`Bearer ${second.accessToken}`)).toBe("renew");
  expect((await s.current()).accessToken).not.toBe(second.accessToken);
  expect(h.refreshes).toHaveLength(2);
});

/** What a promise rejects with (fails the test when it resolves). */
async function refusal(promise: Promise<unknown>): Promise<McpmgrError> {
  const outcome = await promise.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(outcome instanceof McpmgrError)) throw new Error(`expected an McpmgrError, got ${String(outcome)}`);
  return outcome;
}

test("a remote naming a new scope in each 403 gets a few step-up logins per window, then a clear error and no login", async () => {
  const { s, h } = await session({ scopes: ["mcp:read"] });
  await s.current();
  for (let i = 1; i <= MAX_REMOTE_LOGINS; i++) expect(await s.stepUp([`extra:${i}`])).toBe(true);
  expect(h.logins).toHaveLength(1 + MAX_REMOTE_LOGINS);
  const over = await refusal(s.stepUp(["extra:again"]));
  expect(over.message).toContain("no login was started");
  expect(over.hint).toContain("--remote-auth-scopes");
  expect(h.logins).toHaveLength(1 + MAX_REMOTE_LOGINS);
  // The tokens in use are kept meanwhile.
  expect((await s.current()).accessToken).toBe(`at-${issued}`);
  // Once the window has passed, a step-up may log in again.
  h.clock.t += REMOTE_LOGIN_WINDOW_MS;
  expect(await s.stepUp(["extra:later"])).toBe(true);
  expect(h.logins).toHaveLength(2 + MAX_REMOTE_LOGINS);
});

test("scopes a remote names in a step-up must be OAuth scope tokens, a few at a time: otherwise no login", async () => {
  const { s, h } = await session({ scopes: ["mcp:read"] });
  await s.current();
  for (const wanted of [['mcp:write"x'], ["mcp write\n"], ["x".repeat(129)], ["é"]])
    expect((await refusal(s.stepUp(wanted))).message).toContain("not a valid OAuth scope");
  const many = Array.from({ length: MAX_NEW_SCOPES + 1 }, (_, i) => `s${i}`);
  expect((await refusal(s.stepUp(many))).message).toContain("more scopes");
  expect(h.logins).toHaveLength(1);
});

test("a session that starts with many scopes (a remote listing them all in scopes_supported) may still step up", async () => {
  // The bound on scopes in all is on what step-ups add: the scopes asked at the start (the user's, or
  // the remote's metadata's scopes_supported) are not the remote piling scopes up.
  const initial = Array.from({ length: MAX_SCOPES + 4 }, (_, i) => `listed:${i}`);
  const { s, h } = await session({ scopes: initial });
  await s.current();
  expect(await s.stepUp(["mcp:write"])).toBe(true);
  expect(h.logins.at(-1)).toEqual([...initial, "mcp:write"]);
  // Scopes added by step-ups stay bounded all the same.
  for (let added = 1; added < MAX_SCOPES; added += MAX_NEW_SCOPES) {
    h.clock.t += REMOTE_LOGIN_WINDOW_MS;
    const more = Array.from({ length: MAX_NEW_SCOPES }, (_, i) => `more:${added + i}`);
    const outcome = await s.stepUp(more).catch((err: unknown) => err);
    if (outcome instanceof McpmgrError) {
      expect(outcome.message).toContain(`${MAX_SCOPES} more in all`);
      return;
    }
  }
  throw new Error("step-ups added more than MAX_SCOPES scopes");
});

test("step-ups asked at once log in one at a time", async () => {
  let open = 0;
  let most = 0;
  const { s, h } = await session({
    scopes: ["mcp:read"],
    login: async (h) => {
      open++;
      most = Math.max(most, open);
      await Bun.sleep(5);
      open--;
      return tokensAt(h.clock);
    },
  });
  await s.current();
  await Promise.all([s.stepUp(["a"]), s.stepUp(["b"]), s.stepUp(["c"]), s.stepUp(["a"])]);
  expect(most).toBe(1);
  // Each waited for the one before and asked for the union; the second "a" found its set tried already.
  expect(h.logins.slice(1)).toEqual([
    ["mcp:read", "a"],
    ["mcp:read", "a", "b"],
    ["mcp:read", "a", "b", "c"],
  ]);
});

test("a background workload starts no step-up login: the client gets an error naming restart, and the next start logs in for the scopes", async () => {
  const deferTo = "run 'mcpmgr restart demo' to log in for them";
  const { s, h } = await session({ scopes: ["mcp:read"], deferTo });
  const first = await s.current();
  const error = await refusal(s.stepUp(["mcp:write"]));
  expect(error.message).toContain("needs more scopes (mcp:write)");
  expect(error.message).toContain(deferTo);
  expect(await refusal(s.stepUp(["mcp:write"]))).toBeInstanceOf(McpmgrError);
  expect(h.logins).toHaveLength(1);
  expect(h.logs.filter((line) => line.includes("does not start a login by itself"))).toHaveLength(1);
  // It keeps serving with the token it has, and a refresh keeps the scopes waiting.
  expect((await s.current()).accessToken).toBe(first.accessToken);
  s.expire(`Bearer ${first.accessToken}`);
  await s.current();
  expect(h.store.value.stepUpScopes).toEqual(["mcp:write"]);
  // The next start (the user's restart) logs in for them rather than using the stored, fresh token.
  const next = await session({ scopes: ["mcp:read"], deferTo, clock: h.clock, store: h.store });
  await next.s.current();
  expect(next.h.logins).toEqual([["mcp:read", "mcp:write"]]);
  expect(next.h.store.value.stepUpScopes).toBeUndefined();
});

test("a login for deferred step-up scopes that fails does not make every later start fail: the grant is used as it was", async () => {
  const deferTo = "run 'mcpmgr restart demo' to log in for them";
  const { s, h } = await session({ scopes: ["mcp:read"], deferTo });
  const first = await s.current();
  await refusal(s.stepUp(["no:such-scope"]));
  expect(h.store.value.stepUpScopes).toEqual(["no:such-scope"]);
  // The authorization server refuses the scope (invalid_scope), or the user declines the login.
  const refused = async () => {
    throw new McpmgrError("AUTH_SETUP_FAILED", "the OAuth login was refused (invalid_scope)");
  };
  const next = await session({ scopes: ["mcp:read"], deferTo, clock: h.clock, store: h.store, login: refused });
  expect((await next.s.current()).accessToken).toBe(first.accessToken);
  expect(next.h.logins).toEqual([["mcp:read", "no:such-scope"]]);
  expect(next.h.logs.some((line) => line.includes("no:such-scope") && line.includes("failed"))).toBe(true);
  expect(h.store.value.stepUpScopes).toBeUndefined();
  // The start after that is an ordinary one: no login.
  const third = await session({ scopes: ["mcp:read"], deferTo, clock: h.clock, store: h.store, login: refused });
  expect((await third.s.current()).accessToken).toBe(first.accessToken);
  expect(third.h.logins).toEqual([]);
});

test("a login the session would start by itself is not started when the token source refuses it (a background workload once it runs)", async () => {
  let refuse = true;
  let asked = 0;
  const clock = fakeClock();
  const { s, h } = await session({
    clock,
    stored: { clientId: "client", accessToken: "old", refreshToken: "rt-old", expiresAt: clock.t - 1 },
    refresh: async () => {
      throw new RefreshFailed("the refresh was refused (invalid_grant)", true);
    },
    beforeLogin: () => {
      asked++;
      if (refuse) throw new McpmgrError("AUTH_SETUP_FAILED", "run 'mcpmgr restart w' to log in");
    },
  });
  await expect(s.current()).rejects.toThrow("mcpmgr restart w");
  expect(asked).toBe(1);
  expect(h.logins).toHaveLength(0);
  // Allowed again (the user restarted it): the login happens.
  refuse = false;
  expect((await s.current()).accessToken).toMatch(/^at-/);
  expect(h.logins).toHaveLength(1);
});
