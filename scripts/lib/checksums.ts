/**
 * SHA256SUMS: the checksum file of a release, in the format `sha256sum -c` reads
 * ("<64 hex digits>  <file name>" per line).
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { basename, join } from "node:path";

export async function sha256File(path: string): Promise<string> {
  return createHash("sha256")
    .update(await readFile(path))
    .digest("hex");
}

export function formatChecksums(entries: readonly { file: string; sha256: string }[]): string {
  return `${entries.map((e) => `${e.sha256}  ${basename(e.file)}`).join("\n")}\n`;
}

/** File name → digest. A malformed line is an error: a checksum file is never guessed at. */
export function parseChecksums(text: string, origin = "SHA256SUMS"): Map<string, string> {
  const sums = new Map<string, string>();
  for (const [index, line] of text.split("\n").entries()) {
    if (line.trim() === "") continue;
    const match = /^([0-9a-f]{64}) [ *](\S+)$/.exec(line);
    if (match === null) throw new Error(`${origin}:${index + 1}: not "<sha256>  <file>": ${JSON.stringify(line)}`);
    sums.set(match[2] as string, match[1] as string);
  }
  return sums;
}

export async function readChecksums(dir: string): Promise<Map<string, string>> {
  const path = join(dir, "SHA256SUMS");
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch {
    throw new Error(`${path} is missing; run 'bun run compile --all' first`);
  }
  return parseChecksums(text, path);
}

/** The digest SHA256SUMS gives `file`, after checking the file on disk still has it. */
export async function verifiedDigest(dir: string, sums: ReadonlyMap<string, string>, file: string): Promise<string> {
  const expected = sums.get(file);
  if (expected === undefined) throw new Error(`${file} is not listed in ${join(dir, "SHA256SUMS")}`);
  let actual: string;
  try {
    actual = await sha256File(join(dir, file));
  } catch {
    throw new Error(`${join(dir, file)} is missing; run 'bun run compile --all' first`);
  }
  if (actual !== expected) {
    throw new Error(`${join(dir, file)} does not match SHA256SUMS (built again since?); run 'bun run compile --all'`);
  }
  return expected;
}
