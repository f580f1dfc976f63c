/**
 * The process sandbox's seccomp program: its system call numbers match the kernel's own
 * headers (linux-libc-dev), and the program is well-formed classic BPF.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { blockedSyscalls, hostArch, seccompProgram, type SeccompArch } from "../../src/runtime/seccomp.ts";

/** `#define __NR_name number` (and the asm-generic `__NR3264_name`) from a kernel header. */
function headerNumbers(path: string): Map<string, number> {
  const numbers = new Map<string, number>();
  for (const m of readFileSync(path, "utf8").matchAll(/^#define __NR(?:3264)?_(\w+)\s+(\d+)\s*$/gm))
    numbers.set(m[1] as string, Number(m[2]));
  return numbers;
}

/** The kernel headers' table for an architecture: aarch64 uses the generic one, present on every machine. */
const headers: Record<SeccompArch, string> = {
  x64: "/usr/include/x86_64-linux-gnu/asm/unistd_64.h",
  arm64: "/usr/include/asm-generic/unistd.h",
};

// x86_64's table is checked where its header is installed (an x86_64 machine, as CI's); the
// generic table, aarch64's, is installed on every machine.
for (const arch of [...new Set([hostArch(), "arm64" as const])]) {
  test(`${arch}: every refused call has the kernel's number`, () => {
    const kernel = headerNumbers(headers[arch]);
    const ours = blockedSyscalls(arch);
    expect(Object.keys(ours).length).toBeGreaterThan(40);
    for (const [name, nr] of Object.entries(ours)) expect(`${name}=${kernel.get(name)}`).toBe(`${name}=${nr}`);
    // The one call checked by its flags.
    expect(kernel.get("clone")).toBe(arch === "x64" ? 56 : 220);
  });
}

for (const arch of ["x64", "arm64"] as const) {
  test(`${arch}: the program is classic BPF the kernel accepts (size, jumps in range, ends in a return)`, () => {
    const program = seccompProgram(arch);
    expect(program.length % 8).toBe(0);
    const count = program.length / 8;
    expect(count).toBeLessThanOrEqual(4096);
    const view = new DataView(program.buffer);
    for (let i = 0; i < count; i++) {
      const code = view.getUint16(i * 8, true);
      if ((code & 0x07) === 0x05) {
        // A conditional jump: both targets inside the program.
        expect(i + 1 + view.getUint8(i * 8 + 2)).toBeLessThan(count);
        expect(i + 1 + view.getUint8(i * 8 + 3)).toBeLessThan(count);
      }
    }
    expect(view.getUint16((count - 1) * 8, true)).toBe(0x06);
    expect(view.getUint32((count - 1) * 8 + 4, true)).toBe(0x7fff0000);
  });
}
