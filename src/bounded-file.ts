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

/**
 * Why `text` (read as UTF-8) cannot be read: it is UTF-16, as Windows PowerShell 5's `>` and `Out-File`
 * and Notepad's "Unicode" encoding save a file. Its parsers stop at the first character ("invalid symbol"
 * at line 1, column 1) or read names with NULs in them, reasons no editor shows. Its byte order mark
 * (FF FE or FE FF) is no UTF-8 and reads as two U+FFFD; without one, an ASCII character's other byte is
 * a NUL, which no JSON, YAML or env file holds. Undefined for any other text.
 */
export function utf16Problem(text: string): string | undefined {
  const utf16 = text.startsWith("\uFFFD\uFFFD") || /^(?:[^\0]\0|\0[^\0])/.test(text);
  return utf16 ? "the file is UTF-16 text, not UTF-8 (as Windows PowerShell's > and Out-File save files)" : undefined;
}

/** The advice for a file utf16Problem names. */
export const SAVE_AS_UTF8 =
  "save it as UTF-8: in Notepad, Save As with Encoding UTF-8; in PowerShell, Set-Content -Encoding utf8";
