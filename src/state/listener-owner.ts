/**
 * Whether the listening socket a connection reached is held by a given process: the gateway asks it of
 * each new connection to a member (gateway/member-send.ts), and `proxy stdio NAME` of each to its
 * workload (workload/live-workload.ts), so that the installation's key, or a user's token, goes to the
 * workload's supervisor and to no other listener. Linux only (/proc): elsewhere the answer is yes, and
 * only the supervisor's pid is checked. A live supervisor is not enough: a stopping one closes its port
 * a moment before it exits, and another local user may listen there. (`--host localhost` is bound, and
 * named in URLs, as 127.0.0.1, so no connection tries ::1 for it: config/loopback.ts `listenAddress`.)
 *
 * The kernel's socket tables (/proc/net/tcp, tcp6) name each listener's address, port and inode, and the
 * process's descriptors (/proc/PID/fd) name the inodes it holds. A connection goes to the listener whose
 * address is the connection's own, else to a wildcard one (0.0.0.0, then a dual-stack ::), so the most
 * specific kind present is the one that answered.
 */
import { Buffer } from "node:buffer";
import { closeSync, openSync, readdirSync, readlinkSync, readSync } from "node:fs";
import { isIP } from "node:net";
import { endianness } from "node:os";

/** TCP_LISTEN in the tables' `st` column. */
const LISTEN = "0A";

interface Listener {
  readonly address: string;
  readonly inode: string;
}

/** Whether the listener that accepts connections at `address`:`port` is held by process `pid`. */
export function listenerHeldBy(pid: number, address: string, port: number): boolean {
  if (process.platform !== "linux") return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  const v4 = mapped ?? (isIP(address) === 4 ? address : undefined);
  if (v4 === undefined && isIP(address) !== 6) return false;
  const held = (answering: readonly Listener[]) => {
    const inodes = socketInodes(pid);
    return answering.every((l) => inodes.has(l.inode));
  };
  const anyV6 = tableForm(new Uint8Array(16));
  try {
    if (v4 === undefined) {
      const tcp6 = listeners("/proc/net/tcp6", port);
      const exact = tcp6.filter((l) => l.address === tableForm(ipv6Bytes(address)));
      const answering = exact.length > 0 ? exact : tcp6.filter((l) => l.address === anyV6);
      return answering.length > 0 && held(answering);
    }
    // A listener on the IPv4 address itself excludes any other there (or on a wildcard) of another
    // user's; the IPv6 table, slow to read where it holds no connection, is then not needed.
    const tcp = listeners("/proc/net/tcp", port);
    const exact = tcp.filter((l) => l.address === tableForm(ipv4Bytes(v4)));
    if (exact.length > 0) return held(exact);
    const tcp6 = listeners("/proc/net/tcp6", port);
    const kinds = [
      tcp6.filter((l) => l.address === tableForm(ipv6Bytes(`::ffff:${v4}`))),
      tcp.filter((l) => l.address === tableForm(new Uint8Array(4))),
      tcp6.filter((l) => l.address === anyV6),
    ];
    const answering = kinds.find((kind) => kind.length > 0);
    return answering !== undefined && held(answering);
  } catch {
    return false; // a table not read to its end names no listener for sure
  }
}

/**
 * The listening sockets on `port` in one of the kernel's tables. The kernel writes the listeners first,
 * then walks its whole table of connections (a quarter million slots on a machine of some memory: milliseconds
 * per read); the table is generated as it is read, so reading it a few lines at a time and stopping at
 * the first line that is not a listener spares that walk.
 */
function listeners(table: string, port: number): Listener[] {
  let fd: number;
  try {
    fd = openSync(table, "r");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return []; // no IPv6 in this kernel
    throw err;
  }
  const found: Listener[] = [];
  const chunk = Buffer.alloc(512);
  let pending = "";
  let header = true;
  try {
    for (;;) {
      const read = readSync(fd, chunk, 0, chunk.length, null);
      if (read === 0) return found;
      pending += chunk.toString("latin1", 0, read);
      let end = pending.indexOf("\n");
      while (end !== -1) {
        const line = pending.slice(0, end);
        pending = pending.slice(end + 1);
        end = pending.indexOf("\n");
        if (header) {
          header = false;
          continue;
        }
        // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
        const fields = line.trim().split(/\s+/);
        if (fields[3] !== LISTEN) return found;
        const [address, hexPort] = (fields[1] ?? "").split(":");
        if (address !== undefined && fields[9] !== undefined && Number.parseInt(hexPort ?? "", 16) === port)
          found.push({ address: address.toUpperCase(), inode: fields[9] });
      }
    }
  } finally {
    closeSync(fd);
  }
}

/** The socket inodes among a process's open descriptors (none when it is gone or not ours to read). */
function socketInodes(pid: number): Set<string> {
  const inodes = new Set<string>();
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return inodes;
  }
  for (const fd of fds) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match) inodes.add(match[1] as string);
    } catch {
      // closed meanwhile
    }
  }
  return inodes;
}

/** An address as the tables write it: 32-bit words in the machine's byte order, in upper-case hex. */
function tableForm(bytes: Uint8Array): string {
  let text = "";
  for (let word = 0; word < bytes.length; word += 4) {
    const group = Array.from(bytes.subarray(word, word + 4));
    if (endianness() === "LE") group.reverse();
    text += group.map((b) => b.toString(16).padStart(2, "0")).join("");
  }
  return text.toUpperCase();
}

function ipv4Bytes(address: string): Uint8Array {
  return Uint8Array.from(address.split(".").map(Number));
}

function ipv6Bytes(address: string): Uint8Array {
  const bytes = new Uint8Array(16);
  let text = address.replace(/%.*$/, "");
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)?.[1];
  if (tail !== undefined) {
    const [a, b, c, d] = ipv4Bytes(tail);
    text = `${text.slice(0, -tail.length)}${(((a as number) << 8) | (b as number)).toString(16)}:${(((c as number) << 8) | (d as number)).toString(16)}`;
  }
  const [head = "", rest] = text.split("::");
  const front = head === "" ? [] : head.split(":");
  const back = rest === undefined || rest === "" ? [] : rest.split(":");
  const groups = [...front, ...Array<string>(8 - front.length - back.length).fill("0"), ...back];
  groups.forEach((group, i) => {
    const value = Number.parseInt(group, 16);
    bytes[i * 2] = value >> 8;
    bytes[i * 2 + 1] = value & 0xff;
  });
  return bytes;
}
