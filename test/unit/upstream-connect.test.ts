/**
 * mcpmgr's upstream client giving up on a connection still being opened: an HTTPS upstream that
 * accepts the TCP connection but never answers the TLS handshake (a stuck TLS terminator) must see
 * that connection closed when the request is cancelled or the connect timeout passes, not keep it.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { createUpstreamClient } from "../../src/proxy/upstream/client.ts";
import { Cancellation } from "../../src/proxy/upstream/cancellation.ts";
import { eventually, rawServer } from "../support/raw-http.ts";

setDefaultTimeout(60_000);

const settled = (promise: Promise<unknown>) =>
  promise.then(
    () => "resolved",
    (err: unknown) => err,
  );

describe("a TLS handshake that never completes", () => {
  test("cancelled (the forwarder's Cancellation): the upstream sees its connection closed", async () => {
    await using stuck = rawServer(() => {});
    const client = createUpstreamClient({ env: {} });
    const cancel = new Cancellation();
    const url = `${stuck.url.replace("http:", "https:")}/mcp`;
    const pending = settled(client.fetch(url, { method: "GET", redirect: "manual", cancel }));
    await eventually(() => stuck.connections.length === 1, 5_000, "the TCP connection");
    const reason = new Error("the client left");
    cancel.abort(reason);
    expect(await pending).toBe(reason);
    await eventually(() => stuck.connections[0]?.closed === true, 5_000, "the upstream to see the close");
  });

  test("an AbortSignal, or the connect timeout: the connection is closed too", async () => {
    await using stuck = rawServer(() => {});
    const url = `${stuck.url.replace("http:", "https:")}/mcp`;
    const aborted = new AbortController();
    const byAbort = settled(
      createUpstreamClient({ env: {} }).fetch(url, { redirect: "manual", signal: aborted.signal }),
    );
    await eventually(() => stuck.connections.length === 1, 5_000, "the first TCP connection");
    aborted.abort();
    expect(await byAbort).toMatchObject({ name: "AbortError" });
    await eventually(() => stuck.connections[0]?.closed === true, 5_000, "the aborted attempt's close");

    const timedOut = await settled(
      createUpstreamClient({ env: {}, connectTimeoutMs: 200 }).fetch(url, { redirect: "manual" }),
    );
    expect(timedOut).toMatchObject({ code: "UPSTREAM_CONNECT_TIMEOUT" });
    await eventually(() => stuck.connections[1]?.closed === true, 5_000, "the timed-out attempt's close");
  });
});
