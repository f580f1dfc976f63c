/**
 * The logins a remote may start once a workload runs (login-policy.ts): step-ups, moves to
 * another authorization server and late first logins share one budget per remote and one queue;
 * a background workload starts none. Pure timing logic: an injected clock.
 */
import { expect, test } from "bun:test";
import {
  LoginRefused,
  loginPolicy,
  MAX_REMOTE_LOGINS,
  REMOTE_LOGIN_WINDOW_MS,
} from "../../src/auth/outgoing/login-policy.ts";

test("step-ups and moves to another authorization server share one budget per remote", () => {
  let now = 1_000;
  const policy = loginPolicy({ now: () => now });
  expect(policy.admit(["a"], ["b"])).toBe("login");
  policy.admitLogin("the remote server now names https://as2.example as its authorization server");
  expect(policy.admit(["a", "b"], ["c"])).toBe("login");
  expect(MAX_REMOTE_LOGINS).toBe(3);
  const refusal = (() => {
    try {
      policy.admitLogin("the remote server now names https://as3.example as its authorization server");
    } catch (err) {
      return err;
    }
  })();
  expect(refusal).toBeInstanceOf(LoginRefused);
  expect((refusal as LoginRefused).message).toContain("no login was started");
  expect(() => policy.admit(["a", "b", "c"], ["d"])).toThrow("no login was started");
  now += REMOTE_LOGIN_WINDOW_MS;
  expect(() => policy.admitLogin("the remote server asks for a login now")).not.toThrow();
});

test("a background workload's policy starts no login: it names what the user runs instead", () => {
  const policy = loginPolicy({ now: () => 0, deferTo: "run 'mcpmgr restart w' to log in" });
  for (let i = 0; i < 2; i++)
    expect(() => policy.admitLogin("the remote server asks for a login now")).toThrow(
      "the remote server asks for a login now, and a background workload does not start a login by itself: run 'mcpmgr restart w' to log in",
    );
  expect(policy.admit([], ["x"])).toBe("defer");
});

test("logins of one remote run one at a time, a failed one not stopping the next", async () => {
  const policy = loginPolicy({ now: () => 0 });
  let running = 0;
  let most = 0;
  const login = (fail: boolean) =>
    policy.serial(async () => {
      running++;
      most = Math.max(most, running);
      await Bun.sleep(5);
      running--;
      if (fail) throw new Error("declined");
      return "tokens";
    });
  const results = await Promise.allSettled([login(true), login(false), login(false)]);
  expect(most).toBe(1);
  expect(results.map((r) => r.status)).toEqual(["rejected", "fulfilled", "fulfilled"]);
});
