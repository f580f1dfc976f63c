/** Environment-tunable limits: defaults, valid values, and one-line errors for bad ones. */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import {
  containerResourceLimits,
  maxBodyBytesFromEnv,
  maxMessageBytesFromEnv,
  maxSessionsFromEnv,
  requestTimeoutMsFromEnv,
  sandboxTmpfsBytes,
  sessionIdleMsFromEnv,
  startSettings,
  upstreamHeadersTimeoutMsFromEnv,
} from "../../src/workload/limits.ts";
import { McpmgrError } from "../../src/errors.ts";

test("defaults", () => {
  expect(maxBodyBytesFromEnv({})).toBe(8 * 1024 * 1024);
  expect(requestTimeoutMsFromEnv({})).toBe(600_000);
  expect(sessionIdleMsFromEnv({})).toBe(1_800_000);
  expect(maxMessageBytesFromEnv({})).toBe(64 * 1024 * 1024);
  expect(maxSessionsFromEnv({})).toBe(1_000);
  expect(upstreamHeadersTimeoutMsFromEnv({})).toBe(300_000);
});

test("values", () => {
  expect(maxBodyBytesFromEnv({ MCPMGR_MAX_REQUEST_BYTES: "2048" })).toBe(2048);
  expect(requestTimeoutMsFromEnv({ MCPMGR_REQUEST_TIMEOUT: "90s" })).toBe(90_000);
  expect(sessionIdleMsFromEnv({ MCPMGR_SESSION_IDLE_TIMEOUT: "1h" })).toBe(3_600_000);
  expect(maxMessageBytesFromEnv({ MCPMGR_MAX_MESSAGE_BYTES: "1048576" })).toBe(1_048_576);
  expect(maxSessionsFromEnv({ MCPMGR_MAX_SESSIONS: "25" })).toBe(25);
  expect(upstreamHeadersTimeoutMsFromEnv({ MCPMGR_UPSTREAM_HEADERS_TIMEOUT: "20m" })).toBe(1_200_000);
});

test.each([
  [() => maxBodyBytesFromEnv({ MCPMGR_MAX_REQUEST_BYTES: "12" })],
  [() => requestTimeoutMsFromEnv({ MCPMGR_REQUEST_TIMEOUT: "soon" })],
  [() => sessionIdleMsFromEnv({ MCPMGR_SESSION_IDLE_TIMEOUT: "0s" })],
  [() => maxMessageBytesFromEnv({ MCPMGR_MAX_MESSAGE_BYTES: "64m" })],
  [() => maxSessionsFromEnv({ MCPMGR_MAX_SESSIONS: "0" })],
  [() => maxSessionsFromEnv({ MCPMGR_MAX_SESSIONS: "many" })],
  [() => upstreamHeadersTimeoutMsFromEnv({ MCPMGR_UPSTREAM_HEADERS_TIMEOUT: "5" })],
])("bad values are INVALID_OPTION (%#)", (read) => {
  try {
    read();
    throw new Error("expected an error");
  } catch (err) {
    expect(err).toBeInstanceOf(McpmgrError);
    expect((err as McpmgrError).code).toBe("INVALID_OPTION");
  }
});

test("a size has a bound: past it the number would reach bwrap and the engine as 1.07e+21, which neither reads", () => {
  expect(sandboxTmpfsBytes({ MCPMGR_SANDBOX_TMPFS_SIZE: "1024g" })).toBe(1024 ** 4);
  for (const huge of ["1025g", "1000000000000g", "99999999999999999999"]) {
    expect(() => sandboxTmpfsBytes({ MCPMGR_SANDBOX_TMPFS_SIZE: huge })).toThrow("from 6m to 1024g");
    expect(() =>
      containerResourceLimits({ memoryBytes: 2 * 1024 ** 3, pids: 512 }, { MCPMGR_CONTAINER_MEMORY: huge }),
    ).toThrow("from 6m to 1024g");
  }
});

test("a duration past the longest timer is taken as it: 720h meant as never does not time out at once", () => {
  // setTimeout fires after 1 ms for any delay above 2^31 - 1 ms (the gateway's request timeout did).
  expect(requestTimeoutMsFromEnv({ MCPMGR_REQUEST_TIMEOUT: "720h" })).toBe(2_147_483_647);
  expect(upstreamHeadersTimeoutMsFromEnv({ MCPMGR_UPSTREAM_HEADERS_TIMEOUT: "100000h" })).toBe(2_147_483_647);
  expect(sessionIdleMsFromEnv({ MCPMGR_SESSION_IDLE_TIMEOUT: "596h31m23s647ms" })).toBe(2_147_483_647);
});

test("every setting named in limits.ts is one of startSettings, which start, restart and gateway --detach check", () => {
  const source = readFileSync(new URL("../../src/workload/limits.ts", import.meta.url), "utf8");
  const named = new Set(source.match(/"MCPMGR_[A-Z_]+"/g)?.map((quoted) => JSON.parse(quoted) as string));
  expect(named.size).toBeGreaterThan(0);
  expect([...named].sort()).toEqual(startSettings.map((each) => each.name).sort());
});
