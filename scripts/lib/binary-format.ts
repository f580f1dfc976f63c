/**
 * Whether a file is an executable for a release target, from its header: an ELF for
 * Linux (with the target's CPU, and the target's C library by the loader it names: musl's
 * /lib/ld-musl-*, else glibc's), a 64-bit Mach-O for macOS (with the target's CPU), a PE
 * ("MZ") for Windows. The release gate uses it so a binary built for the wrong platform
 * never ships under a name.
 */
import { open } from "node:fs/promises";
import type { ReleaseTarget } from "./release-targets.ts";

const ELF_MACHINE = { x64: 0x3e, arm64: 0xb7 } as const;
const MACHO_CPU = { x64: 0x01000007, arm64: 0x0100000c } as const;

export function describeHeader(bytes: Uint8Array): string {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length >= 20 && view.getUint32(0) === 0x7f454c46) {
    const machine = view.getUint16(18, true);
    const cpu = Object.entries(ELF_MACHINE).find(([, m]) => m === machine)?.[0] ?? `machine 0x${machine.toString(16)}`;
    return `linux-${cpu}`;
  }
  if (bytes.length >= 8 && view.getUint32(0, true) === 0xfeedfacf) {
    const type = view.getUint32(4, true);
    const cpu = Object.entries(MACHO_CPU).find(([, t]) => t === type)?.[0] ?? `cputype 0x${type.toString(16)}`;
    return `darwin-${cpu}`;
  }
  if (bytes[0] === 0x4d && bytes[1] === 0x5a) return "windows";
  return "not an executable";
}

/** The program interpreter (PT_INTERP) a 64-bit little-endian ELF names, if any. */
export function elfInterpreter(bytes: Uint8Array): string | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 64 || view.getUint32(0) !== 0x7f454c46) return undefined;
  const phoff = Number(view.getBigUint64(32, true));
  const [size, count] = [view.getUint16(54, true), view.getUint16(56, true)];
  for (let i = 0; i < count; i++) {
    const at = phoff + i * size;
    if (at + 56 > bytes.length) return undefined;
    if (view.getUint32(at, true) !== 3) continue; // PT_INTERP
    const [offset, length] = [Number(view.getBigUint64(at + 8, true)), Number(view.getBigUint64(at + 32, true))];
    if (offset + length > bytes.length) return undefined;
    return new TextDecoder().decode(bytes.subarray(offset, offset + length)).replace(/\0+$/, "");
  }
  return undefined;
}

/** Throws unless `path` is an executable for `target`. */
export async function assertBinaryFor(path: string, target: ReleaseTarget): Promise<void> {
  const file = await open(path, "r");
  // The ELF header, its program headers and the interpreter's name come first in the file.
  const header = new Uint8Array(4096);
  try {
    await file.read(header, 0, header.length, 0);
  } finally {
    await file.close();
  }
  let found = describeHeader(header);
  if (found.startsWith("linux-") && elfInterpreter(header)?.includes("/ld-musl-")) found += "-musl";
  // PE files carry the CPU further in; Windows has one release target.
  const wanted = target.os === "win32" ? "windows" : target.id;
  if (found !== wanted) throw new Error(`${path} is ${found}, not a ${target.id} executable`);
}
