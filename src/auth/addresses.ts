/**
 * Which addresses are "inside" (loopback, private, link-local, and the IPv6 forms that
 * embed them), for refusing to follow URLs that someone else chose into the local network:
 * the issuer's JWKS for incoming tokens, a remote server's OAuth metadata for outgoing ones.
 */
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";

function v4Private(address: string): boolean {
  const [a = 0, b = 0] = address.split(".").map(Number);
  return (
    a === 0 ||
    a === 10 ||
    a === 127 ||
    a >= 224 || // this network, private, loopback, multicast and reserved
    (a === 100 && b >= 64 && b <= 127) || // carrier-grade NAT
    (a === 169 && b === 254) || // link-local (cloud metadata)
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 198 && (b === 18 || b === 19)) // benchmarking
  );
}

/** The 16 bytes of an IPv6 address. */
function v6Bytes(address: string): number[] {
  let text = address.toLowerCase();
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)?.[1];
  if (v4) {
    const [a = 0, b = 0, c = 0, d = 0] = v4.split(".").map(Number);
    text = `${text.slice(0, -v4.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === undefined || tail === "" ? [] : tail.split(":");
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill("0"), ...right];
  return groups.flatMap((g) => {
    const n = Number.parseInt(g, 16) || 0;
    return [n >> 8, n & 0xff];
  });
}

export function isPrivateAddress(address: string): boolean {
  const bare = address.replace(/^\[(.*)\]$/, "$1").replace(/%.*$/, "");
  if (isIP(bare) === 4) return v4Private(bare);
  if (isIP(bare) !== 6) return false;
  const b = v6Bytes(bare);
  const embedded = (at: number) => v4Private(b.slice(at, at + 4).join("."));
  const zeros = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  if (zeros(0, 16)) return true; // ::
  if (zeros(0, 15) && b[15] === 1) return true; // ::1
  if (zeros(0, 10) && b[10] === 0xff && b[11] === 0xff) return embedded(12); // ::ffff:a.b.c.d
  if (zeros(0, 12)) return true; // ::a.b.c.d (deprecated compatible form)
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b) return embedded(12); // NAT64 64:ff9b::/96
  if (b[0] === 0x20 && b[1] === 0x02) return embedded(2); // 6to4 2002::/16
  const first = b[0] ?? 0;
  return (first & 0xfe) === 0xfc || (first === 0xfe && ((b[1] ?? 0) & 0xc0) === 0x80) || first === 0xff; // ULA, link-local, multicast
}

/** Whether a host is, or resolves to, an inside address. A host that does not resolve counts as inside: refuse rather than guess. */
export async function resolvesInside(host: string): Promise<{ inside: boolean; address?: string }> {
  const bare = host.replace(/^\[(.*)\]$/, "$1");
  if (isIP(bare) !== 0) return { inside: isPrivateAddress(bare), address: bare };
  if (bare === "localhost" || bare.endsWith(".localhost")) return { inside: true, address: bare };
  const addresses = await lookup(bare, { all: true }).catch(() => undefined);
  if (addresses === undefined || addresses.length === 0) return { inside: true };
  const found = addresses.find((a) => isPrivateAddress(a.address));
  return found ? { inside: true, address: found.address } : { inside: false };
}
