/** Asserting on typed errors (ARCHITECTURE.md §3.4: tests check codes, not message text). */
import { expect } from "bun:test";
import { McpmgrError, type ErrorCode } from "../../src/errors.ts";

/** The McpmgrError a promise rejects with; fails the test if it resolves or rejects otherwise. */
export async function caught(promise: Promise<unknown>): Promise<McpmgrError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(McpmgrError);
    return err as McpmgrError;
  }
  throw new Error("expected an McpmgrError, but the promise resolved");
}

/** As caught(), and the error carries `code`. */
export async function rejection(promise: Promise<unknown>, code: ErrorCode): Promise<McpmgrError> {
  const err = await caught(promise);
  expect(err.code).toBe(code);
  return err;
}

/** The McpmgrError `fn` throws synchronously, checked to carry `code`; fails the test if it throws none. */
export function thrown(fn: () => unknown, code: ErrorCode): McpmgrError {
  let caughtErr: unknown;
  try {
    fn();
  } catch (err) {
    caughtErr = err;
  }
  expect(caughtErr).toBeInstanceOf(McpmgrError);
  const err = caughtErr as McpmgrError;
  expect(err.code).toBe(code);
  return err;
}

/** As thrown(), and checked to be a usage error (exit 2, with a hint). */
export function usageError(fn: () => unknown, code: ErrorCode): McpmgrError {
  const err = thrown(fn, code);
  expect(err.exitCode).toBe(2);
  expect(err.hint).toBeString();
  return err;
}
