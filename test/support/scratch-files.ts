/**
 * Files a test file writes for the code under test to read (option files, mostly): one temporary
 * folder per test file, made before its tests and removed after them, each file named anew.
 */
import { afterAll, beforeAll } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Registers the folder's making and removal; returns `file(content, extension)`, which writes one and gives its path. */
export function scratchFiles(prefix: string): (content: string, extension?: string) => Promise<string> {
  let dir: string;
  let count = 0;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), prefix));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  return async (content, extension = "yaml") => {
    const path = join(dir, `file-${count++}.${extension}`);
    await writeFile(path, content);
    return path;
  };
}
