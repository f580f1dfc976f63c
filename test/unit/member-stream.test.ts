import { expect, test } from "bun:test";
import { RESUME_LIMITS, resumeDelay } from "../../src/gateway/member-stream.ts";

test("the wait before resuming a member's stream is its retry, else a backoff, never past the cap", () => {
  expect(resumeDelay(50, 0)).toBe(50);
  expect(resumeDelay(50, 2)).toBe(50);
  expect(resumeDelay(0, 0)).toBe(0);
  expect(resumeDelay(undefined, 0)).toBe(RESUME_LIMITS.firstDelayMs);
  expect(resumeDelay(undefined, 1)).toBe(RESUME_LIMITS.firstDelayMs * RESUME_LIMITS.backoff);
  expect(resumeDelay(undefined, 20)).toBe(RESUME_LIMITS.maxDelayMs);
  expect(resumeDelay(3_600_000, 0)).toBe(RESUME_LIMITS.maxDelayMs);
});
