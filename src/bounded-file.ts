/**
 * A file an option names, read whole as text but never past a cap: a path that names an endless
 * device (/dev/zero) or a huge file would otherwise take all the memory before any check could
 * refuse it. Pipes (`<(command)`, /dev/stdin) still work: they are read to their end like a file.
 */
import { closeSync, openSync, readSync } from "node:fs";

/** More than any file an option names holds (a policy set, a CA bundle, an exported configuration). */
const maxOptionFileBytes = 16 * 1024 * 1024;

/** The file goes on past the cap (`code` as the file system's own errors, for callers that read it). */
export class FileTooLarge extends Error {
  readonly code = "EFBIG";
  readonly maxBytes: number;
  constructor(maxBytes: number) {
    super(`the file is larger than ${maxBytes / (1024 * 1024)} MiB, more than any such file holds`);
    this.maxBytes = maxBytes;
  }
}

/** The file's text (UTF-8); throws FileTooLarge past `maxBytes`, and what the file system throws. */
export function readCappedFile(path: string, maxBytes = maxOptionFileBytes): string {
  const fd = openSync(path, "r");
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    const buffer = Buffer.allocUnsafe(256 * 1024);
    for (;;) {
      const read = readSync(fd, buffer, 0, buffer.byteLength, null);
      if (read === 0) break;
      total += read;
      if (total > maxBytes) throw new FileTooLarge(maxBytes);
      chunks.push(Buffer.from(buffer.subarray(0, read)));
    }
    return Buffer.concat(chunks, total).toString("utf8");
  } finally {
    closeSync(fd);
  }
}
