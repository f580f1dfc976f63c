/**
 * Whether a file is an executable for a release target, from its header: an ELF for
 * Linux, a 64-bit Mach-O for macOS (with the target's CPU), a PE ("MZ") for Windows. The
 * release gate uses it so a binary built for the wrong platform never ships under a name.
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

/** Throws unless `path` is an executable for `target`. */
export async function assertBinaryFor(path: string, target: ReleaseTarget): Promise<void> {
  const file = await open(path, "r");
  const header = new Uint8Array(64);
  try {
    await file.read(header, 0, header.length, 0);
  } finally {
    await file.close();
  }
  const found = describeHeader(header);
  // PE files carry the CPU further in; Windows has one release target.
  const wanted = target.os === "win32" ? "windows" : target.id;
  if (found !== wanted) throw new Error(`${path} is ${found}, not a ${target.id} executable`);
}
