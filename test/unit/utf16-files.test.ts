/**
 * Files a user edits, saved as UTF-16 (Windows PowerShell 5's `>` and Out-File, Notepad's "Unicode"):
 * an env file read as no variables at all, without a word, and JSON files were refused as "invalid
 * symbol" at line 1, column 1, a reason no editor shows. Each now names the encoding; UTF-8 stays as it was.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as v from "valibot";
import { loadEnvFile } from "../../src/config/env-files.ts";
import { toolsPolicy } from "../../src/config/tools-policy.ts";
import { readJsonFile } from "../../src/state/atomic-file.ts";
import { rejection, usageError } from "../support/errors.ts";

let dir: string;
let count = 0;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-utf16-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** `text` saved as PowerShell saves it: UTF-16 little-endian with its byte order mark, or big-endian without one. */
async function utf16(text: string, form: "le-bom" | "be"): Promise<string> {
  const path = join(dir, `file-${count++}`);
  const le = Buffer.from(text, "utf16le");
  await writeFile(path, form === "le-bom" ? Buffer.concat([Buffer.from([0xff, 0xfe]), le]) : le.swap16());
  return path;
}

test("a UTF-16 env file is refused by its encoding, not read as no variables", async () => {
  for (const form of ["le-bom", "be"] as const) {
    const path = await utf16("API_KEY=value\r\n", form);
    const err = usageError(() => loadEnvFile(path), "INVALID_OPTION");
    expect(err.message).toContain("UTF-16");
    expect(err.hint).toContain("UTF-8");
  }
});

test("a UTF-16 JSON option file and exported configuration are refused by their encoding", async () => {
  const override = await utf16(JSON.stringify({ toolsOverride: { echo: { name: "say" } } }), "le-bom");
  expect(usageError(() => toolsPolicy([], override), "INVALID_OPTION").message).toContain("UTF-16");
  const exported = await utf16('{"schema_version": 1}', "le-bom");
  const err = await rejection(readJsonFile(exported, v.object({ schema_version: v.number() })), "STATE_CORRUPT");
  expect(err.message).toContain("UTF-16");
});

test("UTF-8 files, with a byte order mark or not, read as before", async () => {
  const path = join(dir, "utf8.env");
  await writeFile(path, "\uFEFFAPI_KEY=välue\n");
  expect(loadEnvFile(path)).toEqual({ API_KEY: "välue" });
});
