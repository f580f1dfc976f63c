/**
 * The seccomp filter the set-ID guard installs in a Docker container whose engine has no
 * profile file mcpmgr can extend (docs/security.md W9): it refuses only the set-user-ID and
 * set-group-ID modes, with the process sandbox's own checks (seccomp.ts), and lets every other
 * call through to Docker's profile. Filters stack and the kernel takes the most restrictive
 * answer, so Docker's compiled-in profile keeps deciding the rest.
 *
 * Unlike the sandbox's filter, it must not kill another ABI's calls: Docker's default lets 32-bit
 * x86 and x32 programs run, and an image may hold one. So each ABI the kernel can enter from an
 * x86_64 process is checked with its own numbers: x86_64 and x32 (the same numbers for these
 * calls, x32's with bit 30 set, masked away here), and i386 (its own table). A call of any
 * other architecture (none can come from an x86_64 process) is killed.
 */
import {
  AUDIT_ARCH,
  assemble,
  type Insn,
  JEQ_K,
  LD_W_ABS,
  modeCallNumbers,
  OFFSET_ARCH,
  OFFSET_NR,
  RET_ALLOW,
  RET_ERRNO,
  RET_K,
  RET_KILL_PROCESS,
  setIdModeChecks,
  X32_SYSCALL_BIT,
} from "./seccomp.ts";

/** AUDIT_ARCH_I386: 32-bit x86 calls made by a process on an x86_64 kernel. */
const AUDIT_ARCH_I386 = 0x40000003;
/** BPF_ALU | BPF_AND | BPF_K. */
const AND_K = 0x54;
const ENOSYS = 38;

/** The mode calls' numbers in the i386 table (arch/x86/entry/syscalls/syscall_32.tbl). */
export const I386_MODE_CALLS: Readonly<Record<string, number>> = {
  chmod: 15,
  fchmod: 94,
  fchmodat: 306,
  creat: 8,
  open: 5,
  openat: 295,
  mkdir: 39,
  mkdirat: 296,
  mknod: 14,
  mknodat: 297,
};

/**
 * Calls whose mode the filter cannot read (openat2's is in a struct, fchmodat2 is newer than the
 * checks, io_uring's are in shared memory): ENOSYS, so the C library falls back to the calls it
 * checks. The same numbers on every ABI (the kernel's unified numbering above 403).
 */
export const UNREADABLE_MODE_CALLS: Readonly<Record<string, number>> = {
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
  openat2: 437,
  fchmodat2: 452,
};

/** One ABI's block: the mode checks, the unreadable calls, then ALLOW. Entered with nothing loaded. */
function abiBlock(numbers: Readonly<Record<string, number>>, reload: readonly Insn[]): Insn[] {
  const insns: Insn[] = [...reload, ...setIdModeChecks(numbers, reload)];
  for (const nr of Object.values(UNREADABLE_MODE_CALLS))
    insns.push([JEQ_K, 0, 1, nr], [RET_K, 0, 0, RET_ERRNO | ENOSYS]);
  insns.push([RET_K, 0, 0, RET_ALLOW]);
  return insns;
}

/** The guard's filter for an x86_64 container (the only architecture the guard is built for). */
export function setIdGuardFilter(): Uint8Array {
  // The number with x32's bit cleared: x32's mode calls share x86_64's numbers (all "common").
  const x64 = abiBlock(modeCallNumbers("x64"), [
    [LD_W_ABS, 0, 0, OFFSET_NR],
    [AND_K, 0, 0, ~X32_SYSCALL_BIT >>> 0],
  ]);
  const i386 = abiBlock(I386_MODE_CALLS, [[LD_W_ABS, 0, 0, OFFSET_NR]]);
  return assemble([
    [LD_W_ABS, 0, 0, OFFSET_ARCH],
    [JEQ_K, 2, 0, AUDIT_ARCH.x64],
    [JEQ_K, x64.length + 1, 0, AUDIT_ARCH_I386],
    [RET_K, 0, 0, RET_KILL_PROCESS],
    ...x64,
    ...i386,
  ]);
}
