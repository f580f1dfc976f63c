/**
 * Whether a URL's host is this machine's loopback, the one place plain http:// may carry a
 * credential or decide what runs (OAuth endpoints, URLs a remote chooses, the embeddings key, a
 * custom registry and its redirects): `localhost`, `::1`, or
 * an address in 127.0.0.0/8 written out in full. A name that only begins with "127." (such as
 * 127.example.com) is a DNS name like any other.
 */
export function isLoopbackHostname(hostname: string): boolean {
  const bare = hostname.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  return bare === "localhost" || bare === "::1" || /^127(?:\.\d{1,3}){3}$/.test(bare);
}
