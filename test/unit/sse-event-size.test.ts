/** The size of SSE events measured on raw chunks (src/proxy/sse-event-size.ts), line endings split across chunks. */
import { expect, test } from "bun:test";
import { SseEventSize } from "../../src/proxy/sse-event-size.ts";

const encoder = new TextEncoder();

/** Whether the stream, fed in these chunks, has an event past `maxBytes`; and the chunk where it showed. */
function feed(maxBytes: number, chunks: readonly string[]): number {
  const size = new SseEventSize(maxBytes);
  return chunks.findIndex((chunk) => size.oversizedFrom(encoder.encode(chunk)) !== -1);
}

test("events within the bound pass, however many; one past it is seen in the chunk where it passes", () => {
  const event = `data: ${"a".repeat(40)}\n\n`;
  expect(
    feed(
      50,
      Array.from({ length: 100 }, () => event),
    ),
  ).toBe(-1);
  expect(feed(50, [event.repeat(20)])).toBe(-1);
  expect(feed(50, ["data: ", "b".repeat(30), "b".repeat(30), "\n\n"])).toBe(2);
  // An event that ended past the bound inside a chunk, with a small one after it.
  expect(feed(50, ["data: ", `${"c".repeat(60)}\n\ndata: x\n\n`])).toBe(1);
});

test("a blank line in each of the three line endings ends an event, also when split across chunks", () => {
  for (const blank of ["\n\n", "\r\n\r\n", "\r\r", "\n\r\n", "\r\n\n"]) {
    const line = `data: ${"d".repeat(30)}`;
    expect(feed(50, [`${line}${blank}${line}${blank}`])).toBe(-1);
    for (let cut = 1; cut < blank.length; cut++) {
      expect(feed(50, [`${line}${blank.slice(0, cut)}`, `${blank.slice(cut)}${line}${blank}`])).toBe(-1);
    }
  }
});

test("a CRLF split after its CR is one line ending, not a blank line that would end the event", () => {
  const line = `data: ${"e".repeat(30)}`;
  // Two lines of one event, 74 bytes: past 50 whatever the chunks.
  expect(feed(50, [`${line}\r\n${line}\r\n\r\n`])).toBe(0);
  expect(feed(50, [`${line}\r`, `\n${line}\r\n\r\n`])).toBe(1);
  expect(feed(50, [`${line}\r`, "\n", `${line}\r`, "\n\r\n"])).toBe(2);
  // A bare CR then CR is a blank line: the two lines are two events.
  expect(feed(50, [`${line}\r`, `\r${line}\r\r`])).toBe(-1);
});

test("any split of a stream gives the answer the whole stream gives", () => {
  const stream = [
    'event: message\r\ndata: {"a":1}\r\n\r\n',
    `data: ${"f".repeat(20)}\rdata: ${"g".repeat(20)}\r\r`,
    `: comment\nid: 7\ndata: ${"h".repeat(44)}\n\n`,
    `data: ${"i".repeat(10)}\r\n\n`,
  ].join("");
  const whole = (maxBytes: number) => feed(maxBytes, [stream]) !== -1;
  let seed = 7;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  for (const maxBytes of [30, 54, 55, 67, 68, 70]) {
    for (let round = 0; round < 200; round++) {
      const chunks: string[] = [];
      for (let at = 0; at < stream.length; ) {
        const next = Math.min(stream.length, at + 1 + Math.floor(random() * 6));
        chunks.push(stream.slice(at, next));
        at = next;
      }
      expect(feed(maxBytes, chunks) !== -1).toBe(whole(maxBytes));
    }
  }
  // The bound is on each event: the largest here is the third (68 bytes with its blank line).
  expect(whole(68)).toBe(false);
  expect(whole(67)).toBe(true);
});

test("midLine says whether the last chunk stopped inside a line", () => {
  const size = new SseEventSize(100);
  size.oversizedFrom(encoder.encode("data: x"));
  expect(size.midLine).toBe(true);
  size.oversizedFrom(encoder.encode("\r"));
  expect(size.midLine).toBe(false);
  size.oversizedFrom(encoder.encode("\n"));
  expect(size.midLine).toBe(false);
});

test("the chunk where an event passes the bound says where that event began: the whole events before it pass", () => {
  const small = 'data: {"a":1}\n\n';
  const big = `data: ${"j".repeat(80)}\n\n`;
  const at = (maxBytes: number, chunks: readonly string[]) => {
    const size = new SseEventSize(maxBytes);
    return chunks.map((chunk) => size.oversizedFrom(encoder.encode(chunk)));
  };
  // Two small events, then the big one, in one chunk: it begins after them.
  expect(at(50, [`${small}${small}${big}`])).toEqual([2 * small.length]);
  // The same, the big one still open at the chunk's end.
  expect(at(50, [`${small}data: ${"k".repeat(60)}`])).toEqual([small.length]);
  // Begun in an earlier chunk: 0, the client already holds its start.
  expect(at(50, [`${small}data: ${"l".repeat(20)}`, `${"l".repeat(40)}\n\n`])).toEqual([-1, 0]);
  // CRLF: the event begins after the whole blank line, its LF included.
  const crlf = 'data: {"a":1}\r\n\r\n';
  expect(at(50, [`${crlf}${big}`])).toEqual([crlf.length]);
  expect(at(50, ['data: {"a":1}\r\r', big])).toEqual([-1, 0]);
});
