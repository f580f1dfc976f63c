/**
 * The one-time link an OAuth login opens the browser at (workload/login-link.ts): found only once
 * it leads somewhere, redirected once, and a second opening or a second answer stops the login;
 * an answer within the hold after the first opening waits for the rest of it.
 */
import { expect, test } from "bun:test";
import type { McpmgrError } from "../../src/errors.ts";
import { loginLink } from "../../src/workload/login-link.ts";

const AUTHORIZE = new URL("https://as.example.test/authorize?state=s&code_challenge=c");
const get = (path: string, method = "GET") => new Request(`http://127.0.0.1:8666${path}`, { method });

test("the link leads to the login page once, only after it is known, and only for GET", () => {
  const stopped: McpmgrError[] = [];
  const link = loginLink((err) => stopped.push(err));
  expect(link.path).toMatch(/^\/login\/[\w-]{32}$/);
  expect(link.answer(get(link.path)).status).toBe(404);
  link.point(AUTHORIZE);
  expect(link.answer(get(link.path, "HEAD")).status).toBe(405);
  const first = link.answer(get(link.path));
  expect(first.status).toBe(302);
  expect(first.headers.get("location")).toBe(AUTHORIZE.href);
  expect(stopped).toEqual([]);
  // Opened again (the browser after a program that read its command line): the login stops.
  expect(link.answer(get(link.path)).status).toBe(200);
  expect(stopped.map((err) => err.code)).toEqual(["AUTH_SETUP_FAILED"]);
  expect(stopped[0]?.message).toContain("its one-time link was opened twice");
  expect(stopped[0]?.hint).toContain("--remote-auth-skip-browser");
});

test("an answer within the hold waits for its end; a second answer before then stops the login", async () => {
  const stopped: McpmgrError[] = [];
  const link = loginLink((err) => stopped.push(err), 300);
  link.point(AUTHORIZE);
  link.answer(get(link.path));
  const taken: URL[] = [];
  const answer = new URL("http://127.0.0.1:8666/callback?code=x&state=s");
  link.accept(answer, (url) => taken.push(url));
  expect(taken).toEqual([]);
  // Another program's answer: a code of its own.
  link.accept(new URL("http://127.0.0.1:8666/callback?code=y&state=s"), (url) => taken.push(url));
  expect(stopped[0]?.message).toContain("the authorization server's answer arrived twice");
  const deadline = performance.now() + 5_000;
  while (taken.length === 0 && performance.now() < deadline) await Bun.sleep(10);
  // Passed on after the hold, but the login was already stopped: the stop is what the waiter saw first.
  expect(taken).toEqual([answer]);
});

test("without the link opened (the printed URL pasted), an answer is taken at once", () => {
  const link = loginLink(() => {
    throw new Error("not stopped");
  });
  link.point(AUTHORIZE);
  const taken: URL[] = [];
  link.accept(new URL("http://127.0.0.1:8666/callback?code=x&state=s"), (url) => taken.push(url));
  expect(taken.length).toBe(1);
});

test("the same answer again (the user reloads the page that says it arrived) does not stop the login", async () => {
  const stopped: McpmgrError[] = [];
  const link = loginLink((err) => stopped.push(err), 200);
  link.point(AUTHORIZE);
  link.answer(get(link.path));
  const taken: URL[] = [];
  const answer = "http://127.0.0.1:8666/callback?code=x&state=s&iss=https%3A%2F%2Fas.example.test";
  link.accept(new URL(answer), (url) => taken.push(url));
  link.accept(new URL(answer), (url) => taken.push(url));
  expect(stopped).toEqual([]);
  const deadline = performance.now() + 5_000;
  while (taken.length === 0 && performance.now() < deadline) await Bun.sleep(10);
  expect(taken.map((url) => url.href)).toEqual([answer]);
  // Reloaded once more after it was passed on: still nothing new.
  link.accept(new URL(answer), (url) => taken.push(url));
  expect(stopped).toEqual([]);
  expect(taken.length).toBe(1);
});
