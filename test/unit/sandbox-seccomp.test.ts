/**
 * The process sandbox's seccomp program: its system call numbers match the kernel's own
 * headers (linux-libc-dev), and the program is well-formed classic BPF.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import {
  allowedSocketFamilies,
  blockedSyscalls,
  hostArch,
  modeCalls,
  SETID_BITS,
  SOCKET_NRS,
  seccompProgram,
  type SeccompArch,
} from "../../src/runtime/seccomp.ts";

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
    // fchmodat2 (Linux 6.6) is newer than the headers of some distributions: 452 in the kernel's tables.
    const newer: Record<string, number> = { fchmodat2: 452 };
    for (const [name, nr] of Object.entries(ours))
      expect(`${name}=${kernel.get(name) ?? newer[name]}`).toBe(`${name}=${nr}`);
    for (const [name, { nr }] of Object.entries(modeCalls)) {
      const ourNr = nr[arch === "x64" ? 0 : 1];
      if (ourNr !== undefined || kernel.has(name)) expect(`${name}=${kernel.get(name)}`).toBe(`${name}=${ourNr}`);
    }
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

/**
 * What the program answers for one call: classic BPF run over a struct seccomp_data (only
 * the loads, jumps and returns the program uses). The kernel runs the same bytes in the
 * integration test (run-sandbox.test.ts "seccomp: ..."); this checks every branch on both
 * architectures.
 */
function decide(program: Uint8Array, data: { arch: number; nr: number; arg0: number; args?: number[] }): number {
  const args = data.args ?? [data.arg0];
  const view = new DataView(program.buffer);
  let acc = 0;
  for (let pc = 0; pc < program.length / 8; ) {
    const [code, jt, jf, k] = [
      view.getUint16(pc * 8, true),
      view.getUint8(pc * 8 + 2),
      view.getUint8(pc * 8 + 3),
      view.getUint32(pc * 8 + 4, true),
    ];
    pc++;
    if (code === 0x20) acc = k === 0 ? data.nr : k === 4 ? data.arch : k >= 16 ? (args[(k - 16) / 8] ?? 0) : Number.NaN;
    else if (code === 0x06) return k;
    else if (code === 0x15) pc += acc === k ? jt : jf;
    else if (code === 0x35) pc += acc >= k ? jt : jf;
    else if (code === 0x45) pc += (acc & k) !== 0 ? jt : jf;
    else throw new Error(`unexpected instruction ${code}`);
  }
  throw new Error("the program ran off its end");
}

const AUDIT_ARCH = { x64: 0xc000003e, arm64: 0xc00000b7 } as const;
const ALLOW = 0x7fff0000;
const errno = (n: number) => 0x00050000 | n;

for (const arch of ["x64", "arm64"] as const) {
  test(`${arch}: socket and socketpair create only Unix, IPv4, IPv6 and netlink sockets (EAFNOSUPPORT for VM sockets and the rest)`, () => {
    const program = seccompProgram(arch);
    const call = (nr: number, arg0: number) => decide(program, { arch: AUDIT_ARCH[arch], nr, arg0 });
    for (const nr of SOCKET_NRS[arch]) {
      for (const family of Object.values(allowedSocketFamilies)) expect(call(nr, family)).toBe(ALLOW);
      // AF_VSOCK, AF_PACKET, AF_ALG, AF_BLUETOOTH, AF_CAN, AF_TIPC, AF_RDS, AF_UNSPEC
      for (const family of [40, 17, 38, 31, 29, 30, 21, 0]) expect(call(nr, family)).toBe(errno(97));
    }
    // Other calls are not judged by their first argument as a family.
    const read = arch === "x64" ? 0 : 63;
    expect(call(read, 40)).toBe(ALLOW);
    // The clone check still follows: plain clone allowed, CLONE_NEWUSER refused.
    const clone = arch === "x64" ? 56 : 220;
    expect(call(clone, 0x11)).toBe(ALLOW);
    expect(call(clone, 0x10000000)).toBe(errno(1));
    expect(call(blockedSyscalls(arch).mount as number, 0)).toBe(errno(1));
  });
}

test("socket and socketpair have the kernel's numbers", () => {
  for (const arch of [...new Set([hostArch(), "arm64" as const])]) {
    const kernel = headerNumbers(headers[arch]);
    expect([kernel.get("socket"), kernel.get("socketpair")]).toEqual([...SOCKET_NRS[arch]]);
  }
});

for (const arch of ["x64", "arm64"] as const) {
  test(`${arch}: a mode with the set-user-ID or set-group-ID bit is refused (chmod, and creating calls with O_CREAT); other modes and plain opens pass`, () => {
    const program = seccompProgram(arch);
    const call = (nr: number, args: number[]) =>
      decide(program, { arch: AUDIT_ARCH[arch], nr, arg0: args[0] ?? 0, args });
    const column = arch === "x64" ? 0 : 1;
    let checked = 0;
    for (const [name, { nr: numbers, mode, flags }] of Object.entries(modeCalls)) {
      const nr = numbers[column];
      if (nr === undefined) continue;
      checked++;
      const args = (modeBits: number, flagBits: number) => {
        const out = [0, 0, 0, 0, 0, 0];
        out[mode] = modeBits;
        if (flags !== undefined) out[flags] = flagBits;
        return out;
      };
      for (const bits of [0o4755, 0o2755, 0o6777, SETID_BITS])
        expect(`${name} ${bits.toString(8)}: ${call(nr, args(bits, 0o101))}`).toBe(
          `${name} ${bits.toString(8)}: ${errno(1)}`,
        );
      expect(call(nr, args(0o755, 0o101))).toBe(ALLOW);
      // O_TMPFILE creates too; without O_CREAT or O_TMPFILE, open's mode is unused.
      if (flags !== undefined) {
        expect(call(nr, args(0o4755, 0o20200002))).toBe(errno(1));
        expect(call(nr, args(0o4755, 0o2))).toBe(ALLOW);
      }
    }
    expect(checked).toBe(arch === "x64" ? 10 : 5);
    // Modes the filter cannot read: ENOSYS, and the C library falls back to a checked call.
    expect(call(blockedSyscalls(arch).openat2 as number, [])).toBe(errno(38));
    expect(call(blockedSyscalls(arch).fchmodat2 as number, [])).toBe(errno(38));
    // The checks after them still hold.
    expect(call(SOCKET_NRS[arch][0], [40])).toBe(errno(97));
    expect(call(arch === "x64" ? 56 : 220, [0x10000000])).toBe(errno(1));
  });
}
