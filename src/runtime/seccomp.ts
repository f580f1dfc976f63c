/**
 * The seccomp filter of the process sandbox: a classic BPF program (the format the kernel
 * and `bwrap --seccomp FD` take) that refuses the system calls an MCP server never needs
 * and that widen the kernel's attack surface or reach outside the sandbox: mounting,
 * namespaces (unshare, setns, clone with a CLONE_NEW* flag), tracing other processes,
 * the kernel keyring, eBPF and perf, io_uring, kernel modules and kexec, clocks, swap,
 * reboot, file handles (open_by_handle_at walks around mount boundaries); and any mode with
 * the set-user-ID or set-group-ID bit (chmod, and the calls that create files with a mode).
 *
 * Emitted here rather than by libseccomp: the program is a short, fixed list of
 * comparisons, so no native library has to be present (or loadable from the single
 * compiled binary) on the user's machine. Numbers are the kernel's for x86_64
 * (arch/x86/entry/syscalls/syscall_64.tbl) and aarch64 (include/uapi/asm-generic/unistd.h);
 * a unit test checks them against the installed kernel headers.
 *
 * Refused calls fail with EPERM (the error a program expects when it lacks a privilege),
 * except clone3 and io_uring_setup, which fail with ENOSYS: the C library then falls back
 * to clone (whose flags the filter can see; clone3 passes them in memory it cannot read),
 * and runtimes that try io_uring fall back to ordinary I/O. A process of another
 * architecture (32-bit x86, x32, AArch32), whose numbers differ, is killed.
 *
 * socket() and socketpair() are allowed for the address families a server uses (Unix,
 * IPv4, IPv6, and netlink, which the C library asks for the interfaces' addresses) and fail
 * with EAFNOSUPPORT for every other, as on a kernel without that family: VM sockets
 * (AF_VSOCK) are not confined by the network namespace, so they would reach the hypervisor
 * from a sandbox with profile `none`; the rarely used families (packet, crypto API, RDS,
 * TIPC, Bluetooth, CAN, ...) are kernel attack surface no server needs.
 */
import { McpmgrError } from "../errors.ts";

export type SeccompArch = "x64" | "arm64";

const EPERM = 1;
const ENOSYS = 38;
/** The same number on x86_64 and aarch64 (asm-generic errno). */
const EAFNOSUPPORT = 97;

/** Address families socket() and socketpair() may create; the rest fail with EAFNOSUPPORT. */
export const allowedSocketFamilies: Readonly<Record<string, number>> = {
  AF_UNIX: 1,
  AF_INET: 2,
  AF_INET6: 10,
  AF_NETLINK: 16,
};

/** Every CLONE_NEW* flag clone(2) accepts (CLONE_NEWTIME is only valid for clone3 and unshare). */
const CLONE_NAMESPACE_FLAGS =
  0x00020000 | // CLONE_NEWNS
  0x02000000 | // CLONE_NEWCGROUP
  0x04000000 | // CLONE_NEWUTS
  0x08000000 | // CLONE_NEWIPC
  0x10000000 | // CLONE_NEWUSER
  0x20000000 | // CLONE_NEWPID
  0x40000000; // CLONE_NEWNET

/** name → [x86_64 number, aarch64 number]; undefined where the architecture has no such call. */
const blocked: Readonly<Record<string, readonly [number | undefined, number | undefined]>> = {
  // mounts and root changes
  mount: [165, 40],
  umount2: [166, 39],
  pivot_root: [155, 41],
  chroot: [161, 51],
  open_tree: [428, 428],
  move_mount: [429, 429],
  fsopen: [430, 430],
  fsconfig: [431, 431],
  fsmount: [432, 432],
  fspick: [433, 433],
  mount_setattr: [442, 442],
  // namespaces (clone is checked by its flags below)
  unshare: [272, 97],
  setns: [308, 268],
  // other processes' memory
  ptrace: [101, 117],
  process_vm_readv: [310, 270],
  process_vm_writev: [311, 271],
  pidfd_getfd: [438, 438],
  // the kernel keyring
  add_key: [248, 217],
  request_key: [249, 218],
  keyctl: [250, 219],
  // eBPF, perf, userfaultfd: large kernel attack surface, never needed by a server
  bpf: [321, 280],
  perf_event_open: [298, 241],
  userfaultfd: [323, 282],
  // io_uring (ENOSYS, see above)
  io_uring_setup: [425, 425],
  io_uring_enter: [426, 426],
  io_uring_register: [427, 427],
  // the machine itself
  kexec_load: [246, 104],
  kexec_file_load: [320, 294],
  init_module: [175, 105],
  finit_module: [313, 273],
  delete_module: [176, 106],
  reboot: [169, 142],
  swapon: [167, 224],
  swapoff: [168, 225],
  acct: [163, 89],
  settimeofday: [164, 170],
  clock_settime: [227, 112],
  adjtimex: [159, 171],
  clock_adjtime: [305, 266],
  syslog: [103, 116],
  quotactl: [179, 60],
  quotactl_fd: [443, 443],
  sethostname: [170, 161],
  setdomainname: [171, 162],
  vhangup: [153, 58],
  lookup_dcookie: [212, 18],
  nfsservctl: [180, 42],
  // file handles bypass the mount view
  name_to_handle_at: [303, 264],
  open_by_handle_at: [304, 265],
  // x86 only: raw I/O ports and obsolete calls
  iopl: [172, undefined],
  ioperm: [173, undefined],
  uselib: [134, undefined],
  _sysctl: [156, undefined],
  // clone3 (ENOSYS, see above)
  clone3: [435, 435],
  // modes the filter cannot see (openat2's is in memory; fchmodat2 is newer than the headers
  // in use): ENOSYS, so the C library falls back to openat and fchmodat, which it checks
  openat2: [437, 437],
  fchmodat2: [452, 452],
};

const enosys = new Set(["clone3", "io_uring_setup", "io_uring_enter", "io_uring_register", "openat2", "fchmodat2"]);

/**
 * The calls that set a file's mode, checked for the set-user-ID and set-group-ID bits: run by
 * root, the sandbox's uid is the host's uid 0, so a setuid file it makes in a writable volume
 * runs as root for every user on the host (nosuid holds only inside the sandbox). name →
 * [x86_64 number, aarch64 number], the mode's argument, and the flags' argument when the mode
 * counts only for a file the call creates (open, openat).
 */
export const modeCalls: Readonly<
  Record<
    string,
    { readonly nr: readonly [number | undefined, number | undefined]; readonly mode: number; readonly flags?: number }
  >
> = {
  chmod: { nr: [90, undefined], mode: 1 },
  fchmod: { nr: [91, 52], mode: 1 },
  fchmodat: { nr: [268, 53], mode: 2 },
  creat: { nr: [85, undefined], mode: 1 },
  open: { nr: [2, undefined], mode: 2, flags: 1 },
  openat: { nr: [257, 56], mode: 3, flags: 2 },
  mkdir: { nr: [83, undefined], mode: 1 },
  mkdirat: { nr: [258, 34], mode: 2 },
  mknod: { nr: [133, undefined], mode: 1 },
  mknodat: { nr: [259, 33], mode: 2 },
};
/** S_ISUID | S_ISGID. */
export const SETID_BITS = 0o6000;
/** O_CREAT | __O_TMPFILE (the same on x86_64 and aarch64): the flags under which open's mode counts. */
const CREATING_FLAGS = 0o100 | 0o20000000;

/** The system calls the filter refuses on `arch`, by name (documented in docs/security.md). */
export function blockedSyscalls(arch: SeccompArch = hostArch()): Record<string, number> {
  const column = arch === "x64" ? 0 : 1;
  const out: Record<string, number> = {};
  for (const [name, numbers] of Object.entries(blocked)) {
    const nr = numbers[column];
    if (nr !== undefined) out[name] = nr;
  }
  return out;
}

const CLONE_NR: Readonly<Record<SeccompArch, number>> = { x64: 56, arm64: 220 };
/** The calls checked by their address family (first argument): socket and socketpair. */
export const SOCKET_NRS: Readonly<Record<SeccompArch, readonly [socket: number, socketpair: number]>> = {
  x64: [41, 53],
  arm64: [198, 199],
};
export const AUDIT_ARCH: Readonly<Record<SeccompArch, number>> = { x64: 0xc000003e, arm64: 0xc00000b7 };
/** x32 system calls come in with the x86_64 audit arch and this bit set in the number. */
export const X32_SYSCALL_BIT = 0x40000000;

// BPF instruction classes and modes (linux/bpf_common.h), seccomp return values (linux/seccomp.h).
export const LD_W_ABS = 0x20;
export const JEQ_K = 0x15;
const JGE_K = 0x35;
const JSET_K = 0x45;
export const RET_K = 0x06;
export const RET_KILL_PROCESS = 0x80000000;
export const RET_ERRNO = 0x00050000;
export const RET_ALLOW = 0x7fff0000;
// Offsets in struct seccomp_data: nr (u32), arch (u32), instruction_pointer (u64), args[6] (u64).
export const OFFSET_NR = 0;
export const OFFSET_ARCH = 4;
const OFFSET_ARG0_LOW = 16; // little-endian: the low 32 bits of args[0] (clone's flags, socket's family: ints)
/** The low 32 bits of args[n] (a mode or open's flags: ints). */
const argLow = (n: number) => OFFSET_ARG0_LOW + 8 * n;

export type Insn = readonly [code: number, jt: number, jf: number, k: number];

/** The filter for `arch` as the kernel's struct sock_filter array (8 bytes per instruction, host byte order). */
export function seccompProgram(arch: SeccompArch = hostArch()): Uint8Array {
  const insns: Insn[] = [
    [LD_W_ABS, 0, 0, OFFSET_ARCH],
    [JEQ_K, 1, 0, AUDIT_ARCH[arch]],
    [RET_K, 0, 0, RET_KILL_PROCESS],
    [LD_W_ABS, 0, 0, OFFSET_NR],
  ];
  if (arch === "x64") insns.push([JGE_K, 0, 1, X32_SYSCALL_BIT], [RET_K, 0, 0, RET_KILL_PROCESS]);
  for (const [name, nr] of Object.entries(blockedSyscalls(arch))) {
    insns.push([JEQ_K, 0, 1, nr], [RET_K, 0, 0, RET_ERRNO | (enosys.has(name) ? ENOSYS : EPERM)]);
  }
  // A mode with the set-user-ID or set-group-ID bit: EPERM.
  insns.push(...setIdModeChecks(modeCallNumbers(arch), [[LD_W_ABS, 0, 0, OFFSET_NR]]));
  // socket/socketpair of a family not in the allow-list: EAFNOSUPPORT. The jump after the
  // family checks lands on the final ALLOW, past the clone check (which reloads the number).
  const families = Object.values(allowedSocketFamilies);
  const [socketNr, socketpairNr] = SOCKET_NRS[arch];
  insns.push([JEQ_K, 1, 0, socketNr], [JEQ_K, 0, families.length + 2, socketpairNr], [LD_W_ABS, 0, 0, OFFSET_ARG0_LOW]);
  families.forEach((family, i) => {
    // To the final ALLOW: past the later family checks, the refusal and the clone check's first four.
    insns.push([JEQ_K, families.length - i + 4, 0, family]);
  });
  insns.push([RET_K, 0, 0, RET_ERRNO | EAFNOSUPPORT]);
  // clone with any CLONE_NEW* flag: refused; plain clone (threads, fork) goes through.
  insns.push(
    [JEQ_K, 0, 3, CLONE_NR[arch]],
    [LD_W_ABS, 0, 0, OFFSET_ARG0_LOW],
    [JSET_K, 0, 1, CLONE_NAMESPACE_FLAGS],
    [RET_K, 0, 0, RET_ERRNO | EPERM],
    [RET_K, 0, 0, RET_ALLOW],
  );
  return assemble(insns);
}

/** The mode calls' numbers on `arch` (name → number; a call the architecture lacks is left out). */
export function modeCallNumbers(arch: SeccompArch): Record<string, number> {
  const column = arch === "x64" ? 0 : 1;
  const out: Record<string, number> = {};
  for (const [name, { nr }] of Object.entries(modeCalls)) if (nr[column] !== undefined) out[name] = nr[column];
  return out;
}

/**
 * The checks refusing (EPERM) a mode with the set-user-ID or set-group-ID bit to the mode calls
 * numbered `numbers` (name → number, the names of modeCalls), with the number in the accumulator
 * on entry. Each check ends with `reload`, which puts the number back for the checks after it (and
 * for whatever follows them): a plain load, or a load and a mask (setid-filter.ts, for x32).
 */
export function setIdModeChecks(numbers: Readonly<Record<string, number>>, reload: readonly Insn[]): Insn[] {
  const insns: Insn[] = [];
  for (const [name, nr] of Object.entries(numbers)) {
    const call = modeCalls[name];
    if (call === undefined) throw new Error(`${name} is not a mode call`);
    // The jumps that skip a call land on the first instruction of its `reload`.
    if (call.flags === undefined) insns.push([JEQ_K, 0, 3, nr]);
    else insns.push([JEQ_K, 0, 5, nr], [LD_W_ABS, 0, 0, argLow(call.flags)], [JSET_K, 0, 3, CREATING_FLAGS]);
    insns.push(
      [LD_W_ABS, 0, 0, argLow(call.mode)],
      [JSET_K, 0, 1, SETID_BITS],
      [RET_K, 0, 0, RET_ERRNO | EPERM],
      ...reload,
    );
  }
  return insns;
}

/** A program as the kernel's struct sock_filter array (8 bytes per instruction, little-endian hosts). */
export function assemble(insns: readonly Insn[]): Uint8Array {
  const bytes = new Uint8Array(insns.length * 8);
  const view = new DataView(bytes.buffer);
  insns.forEach(([code, jt, jf, k], i) => {
    view.setUint16(i * 8, code, true);
    view.setUint8(i * 8 + 2, jt);
    view.setUint8(i * 8 + 3, jf);
    view.setUint32(i * 8 + 4, k >>> 0, true);
  });
  return bytes;
}

/** The architecture the filter is built for: this process's, which is the sandboxed server's too. */
export function hostArch(): SeccompArch {
  if (process.arch === "x64" || process.arch === "arm64") return process.arch;
  throw new McpmgrError("SANDBOX_UNAVAILABLE", `the process sandbox has no seccomp filter for ${process.arch}`, {
    hint: "run the server in a container (start Docker or Podman), or pass --insecure-allow-unsandboxed",
  });
}
