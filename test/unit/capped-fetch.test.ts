/**
 * The cap on answers to mcpmgr's own authorization requests (auth/capped-fetch.ts), against a real
 * HTTP server: a body is refused once more than the cap is read, whether its length was declared or
 * it came chunked; a caller that only looks at the status and cancels the body gets no error.
 */
import { afterAll, expect, test } from "bun:test";
import { cappedAnswers } from "../../src/auth/capped-fetch.ts";

const big = "x".repeat(2 * 1024 * 1024);
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch(req) {
    const path = new URL(req.url).pathname;
    if (path === "/declared") return new Response(big, { status: 401 });
    if (path === "/chunked")
      return new Response(
        new ReadableStream({
          start(controller) {
            for (let i = 0; i < 4; i++) controller.enqueue(new TextEncoder().encode(big.slice(0, 512 * 1024)));
            controller.close();
          },
        }),
      );
    return Response.json({ issuer: "https://as.example" });
  },
});
afterAll(() => server.stop(true));

const capped = cappedAnswers(fetch, 1024 * 1024);
const url = (path: string) => `http://127.0.0.1:${server.port}${path}`;

test("a small answer reads as it is", async () => {
  const response = await capped(url("/small"));
  expect(response.headers.get("content-type")).toContain("application/json");
  expect(await response.json()).toEqual({ issuer: "https://as.example" });
});

test("more than the cap fails on reading, declared or chunked", async () => {
  for (const path of ["/declared", "/chunked"]) {
    const failure = await (await capped(url(path))).text().then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(String((failure as Error | undefined)?.message)).toContain("is larger than 1024 KiB");
  }
});

test("a caller that wants only the status cancels the body without an error", async () => {
  const response = await capped(url("/declared"));
  expect(response.status).toBe(401);
  await response.body?.cancel();
});
