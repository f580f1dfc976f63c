/** Streams the proxy writes itself: a client that does not read cannot make them grow without bound. */
import { expect, test } from "bun:test";
import { createEventStream } from "../../src/proxy/event-stream.ts";

test("a stream nobody reads is dropped once it holds more than its limit; one that is read goes on", async () => {
  const dropped: number[] = [];
  const unread = createEventStream({ maxQueuedBytes: 4096, onDropped: (bytes) => dropped.push(bytes) });
  let closed = false;
  unread.onClose(() => {
    closed = true;
  });
  const data = JSON.stringify({ jsonrpc: "2.0", method: "notifications/message", params: { data: "x".repeat(500) } });
  let sent = 0;
  while (unread.send(data) && sent < 100) sent++;
  expect(sent).toBeGreaterThan(3);
  expect(sent).toBeLessThan(20);
  expect(unread.isOpen).toBe(false);
  expect(closed).toBe(true);
  // Told once, for one log line; what it held is gone with it, and the stream errored without an Error
  // (which the runtime would report with its source lines and stack).
  expect(dropped).toEqual([4096]);
  await expect(unread.stream.getReader().read()).rejects.toBeUndefined();

  const read = createEventStream({ maxQueuedBytes: 4096 });
  const reader = read.stream.getReader();
  for (let i = 0; i < 50; i++) {
    expect(read.send(data)).toBe(true);
    for (let taken = 0; taken < (i === 0 ? 2 : 1); taken++) await reader.read();
  }
  expect(read.isOpen).toBe(true);
  read.close();
});
