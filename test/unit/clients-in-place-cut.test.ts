/**
 * What a write of a new text over an old one leaves when stopped anywhere (in-place-write.ts): the
 * first bytes of the new text, then the rest of the old. Such a file is put back; anything else is
 * the client's since, and left alone.
 */
import { expect, test } from "bun:test";
import { isCutShort } from "../../src/clients/in-place-write.ts";

const b = (text: string) => Buffer.from(text);
const before = b('{"mcpServers": {"docs": {}, "fetch": {"url": "u"}}}\n');
const shorter = b('{"mcpServers": {"docs": {}}}\n');
const longer = b('{"mcpServers": {"docs": {}, "fetch": {"url": "u"}, "more": {"url": "v"}}}\n');

test("every point a write can stop at is recognised, for a shorter and for a longer text", () => {
  for (const after of [shorter, longer]) {
    for (let written = 0; written <= after.length; written++) {
      const rest = written < before.length ? before.subarray(written) : Buffer.alloc(0);
      expect(isCutShort(Buffer.concat([after.subarray(0, written), rest]), before, after)).toBe(true);
    }
  }
});

test("a file the client rewrote since is not taken for a cut-short write", () => {
  expect(isCutShort(b('{"mcpServers": {"docs": {}, "notes": {}}}\n'), before, shorter)).toBe(false);
  expect(isCutShort(Buffer.concat([shorter, b("x"), before.subarray(shorter.length + 1)]), before, shorter)).toBe(
    false,
  );
  expect(isCutShort(Buffer.concat([shorter, before.subarray(shorter.length + 1)]), before, shorter)).toBe(false);
  expect(isCutShort(b(""), before, shorter)).toBe(false);
});
