import { expect, test } from "bun:test";
import { RESUME_LIMITS, resumeDelay } from "../../src/gateway/member-stream.ts";

test("the wait before resuming a member's stream is its retry, else a backoff, never under the floor nor past the cap", () => {
  expect(resumeDelay(150, 0)).toBe(150);
  expect(resumeDelay(150, 2)).toBe(150);
  // A member asking for no wait at all still gets the floor.
  expect(resumeDelay(0, 0)).toBe(RESUME_LIMITS.minDelayMs);
  expect(resumeDelay(50, 0)).toBe(RESUME_LIMITS.minDelayMs);
  expect(resumeDelay(undefined, 0)).toBe(RESUME_LIMITS.firstDelayMs);
  expect(resumeDelay(undefined, 1)).toBe(RESUME_LIMITS.firstDelayMs * RESUME_LIMITS.backoff);
  expect(resumeDelay(undefined, 20)).toBe(RESUME_LIMITS.maxDelayMs);
  expect(resumeDelay(3_600_000, 0)).toBe(RESUME_LIMITS.maxDelayMs);
});

test("each resumed stream in a row that brought no message doubles the floor, up to the cap", () => {
  expect(resumeDelay(0, 0, 1)).toBe(RESUME_LIMITS.minDelayMs * 2);
  expect(resumeDelay(0, 0, 3)).toBe(RESUME_LIMITS.minDelayMs * 8);
  // The member's own longer retry stands until the floor passes it.
  expect(resumeDelay(5_000, 0, 3)).toBe(5_000);
  expect(resumeDelay(0, 0, 30)).toBe(RESUME_LIMITS.maxDelayMs);
});
