import { expect, test } from "bun:test";
import { FileTooLarge, readCappedFile } from "../../src/bounded-file.ts";

test("an endless device is refused once past the cap, not read to the end of memory", () => {
  expect(() => readCappedFile("/dev/zero", 1024 * 1024)).toThrow(FileTooLarge);
});

test("a file within the cap is read whole, as UTF-8", () => {
  const text = readCappedFile(new URL("../fixtures/unruly-stdio/package.json", import.meta.url).pathname);
  expect(JSON.parse(text).name).toBe("mcpmgr-unruly-stdio");
});
