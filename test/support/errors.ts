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

/** The McpmgrError `fn` throws synchronously, checked to be a usage error (exit 2, with a hint) with `code`. */
export function usageError(fn: () => unknown, code: ErrorCode): McpmgrError {
  let thrown: unknown;
  try {
    fn();
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(McpmgrError);
  const err = thrown as McpmgrError;
  expect(err.code).toBe(code);
  expect(err.exitCode).toBe(2);
  expect(err.hint).toBeString();
  return err;
}
