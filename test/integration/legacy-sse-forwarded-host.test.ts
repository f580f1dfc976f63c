/**
 * The legacy SSE `endpoint` event behind a reverse proxy (`--trust-proxy-headers`): real `mcpmgr
 * proxy` and a real `mcpmgr run` of a remote URL in front of server-everything in SSE mode. A
 * forwarded host the listener answers to (`--allowed-hosts`) makes the endpoint absolute; any
 * other stays out of it (the endpoint is relative, resolved against the URL the client used), as
 * for the RFC 9728 resource (auth-incoming.test.ts).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { sseEvents } from "../fixtures/bridge-probe-client.ts";
import { startEverything, startProxy, startRun } from "../support/processes.ts";

setDefaultTimeout(60_000);

let everything: Awaited<ReturnType<typeof startEverything>>;

beforeAll(async () => {
  everything = await startEverything("sse");
});

afterAll(async () => {
  await everything?.stop();
});

/** The data of the first event of a GET of `url` with these headers, which must be the `endpoint` event. */
async function endpointEvent(url: string, headers: Record<string, string>): Promise<string> {
  const controller = new AbortController();
  try {
    const res = await fetch(url, { headers: { accept: "text/event-stream", ...headers }, signal: controller.signal });
    expect(res.status).toBe(200);
    const first = await sseEvents(res.body as ReadableStream<Uint8Array>).next();
    expect(first?.event).toBe("endpoint");
    return first?.data as string;
  } finally {
    controller.abort();
  }
}

const forwarded = (host: string) => ({ "x-forwarded-host": host, "x-forwarded-proto": "https" });
const LISTENER_OPTIONS = ["--trust-proxy-headers", "--allowed-hosts", "mcp.example.test"];

async function expectFollowsOnlyAnsweredNames(url: string) {
  // The reverse proxy's public name, allowed: the endpoint names it.
  expect(await endpointEvent(url, forwarded("mcp.example.test"))).toMatch(
    /^https:\/\/mcp\.example\.test\/message\?sessionId=[\w-]+$/,
  );
  // A name the listener does not answer to (a client's header a reverse proxy passed on): not in the
  // endpoint, which stays relative.
  const foreign = await endpointEvent(url, forwarded("evil.example"));
  expect(foreign).toMatch(/^\/message\?sessionId=[\w-]+$/);
}

test("mcpmgr proxy --trust-proxy-headers: the endpoint event follows an X-Forwarded-Host the listener answers to, never another", async () => {
  const proxy = await startProxy(everything.url, LISTENER_OPTIONS);
  try {
    await expectFollowsOnlyAnsweredNames(proxy.url);
  } finally {
    await proxy.stop();
  }
});

test("mcpmgr run URL --trust-proxy-headers: the same rule for a remote workload", async () => {
  const run = await startRun([everything.url, "--name", "legacy-forwarded", ...LISTENER_OPTIONS]);
  try {
    await expectFollowsOnlyAnsweredNames(run.url);
  } finally {
    await run.stop();
  }
});
