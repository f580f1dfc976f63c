/**
 * `bun bench/redact.ts`: what redaction costs an audit data field or a line of server output
 * (secrets/redact.ts), by how many secret values the workload redacts. The values are JWTs as a
 * token exchange hands them out (one per client, all with the same header, so they share a long
 * prefix), the fields JSON text of 4 KB and 64 KB that quote none of them (the usual case) or one.
 *   redact    one field through a redactor whose spellings are worked out (`redactor`)
 *   change    a collecting redactor learns one new value, then redacts a 4 KB field (token exchange:
 *             each new client; the first redact after a change pays for it)
 * Each figure is the best of 5 rounds (the machine is shared). REDACT_MODULE=path measures another
 * copy of redact.ts (an older one, for before/after). Prints a markdown table; bench/README.md
 * ("Secret redaction") keeps the figures.
 */
export {};
const { collectingRedactor, redactor }: typeof import("../src/secrets/redact.ts") = await import(
  process.env.REDACT_MODULE ?? "../src/secrets/redact.ts"
);

const COUNTS = (process.env.COUNTS ?? "0,10,256,4096").split(",").map(Number);
const SIZES = [4 * 1024, 64 * 1024];

function base64url(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64url");
}
const header = base64url(new TextEncoder().encode('{"alg":"RS256","typ":"JWT","kid":"k1"}'));
function jwt(i: number): string {
  const claims = { iss: "https://as.example", sub: `client-${i}`, aud: "mcp", exp: 1_900_000_000 + i };
  const signature = crypto.getRandomValues(new Uint8Array(256));
  return `${header}.${base64url(new TextEncoder().encode(JSON.stringify(claims)))}.${base64url(signature)}`;
}

/** JSON text as an audit data field holds it: a tool's answer with words, numbers and ids. */
function field(size: number, quoting?: string): string {
  const words = ["result", "content", "text", "the", "file", "was", "read", "ok", "path", "/srv/data", "eyJ", "id"];
  let text = "";
  let i = 0;
  while (text.length < size)
    text += `{"type":"text","${words[i % words.length]}":"line ${i++} ${words[(i * 7) % words.length]}"},`;
  text = text.slice(0, size);
  if (quoting === undefined) return text;
  const at = Math.floor(size / 2);
  return text.slice(0, at) + quoting + text.slice(at + quoting.length);
}

function time(run: () => unknown, roundMs = 100): number {
  for (let i = 0; i < 20; i++) run();
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 5; round++) {
    let n = 0;
    const start = performance.now();
    let elapsed = 0;
    while (elapsed < roundMs) {
      run();
      n++;
      elapsed = performance.now() - start;
    }
    best = Math.min(best, (elapsed / n) * 1000); // µs
  }
  return best;
}

const fmt = (us: number) => (us >= 1000 ? `${(us / 1000).toFixed(1)} ms` : `${us.toFixed(us < 10 ? 2 : 0)} µs`);
const tokens = Array.from({ length: Math.max(...COUNTS) }, (_, i) => jwt(i));

console.log(
  "| secrets | 4 KB, none quoted | 4 KB, one quoted | 64 KB, none quoted | 64 KB, one quoted | change + 4 KB redact |",
);
console.log("| ---: | ---: | ---: | ---: | ---: | ---: |");
for (const count of COUNTS) {
  const values = tokens.slice(0, count);
  const scrub = redactor(values);
  const cells: string[] = [];
  for (const size of SIZES) {
    const plain = field(size);
    const quoted = field(size, values[Math.floor(count / 2)] ?? "none");
    if (count > 0 && scrub(quoted) === quoted) throw new Error("the quoted value was not redacted");
    cells.push(fmt(time(() => scrub(plain))), fmt(time(() => scrub(quoted))));
  }
  // Each new client: one more value, and the next record pays for the change (500 new clients, averaged).
  const collecting = collectingRedactor([]);
  for (const value of values) collecting.add(value);
  const small = field(SIZES[0] as number);
  collecting.redact(small);
  const extra = Array.from({ length: 500 }, (_, i) => jwt(100_000 + i));
  const start = performance.now();
  for (const value of extra) {
    collecting.add(value);
    collecting.redact(small);
  }
  cells.push(fmt(((performance.now() - start) / extra.length) * 1000));
  console.log(`| ${count} | ${cells.join(" | ")} |`);
}
