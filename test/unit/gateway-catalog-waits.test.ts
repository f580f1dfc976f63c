/**
 * The gateway's bounded waits for a member (gateway/catalog.ts `joining`, `settled`) leave no timer
 * behind once they end: a call to a stopped member used to leave its 30 s timer pending (thousands
 * under a stream of calls). Seen from outside: a process whose only work was such waits exits at
 * once, not when the longest bound runs out.
 */
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const CATALOG = resolve(import.meta.dir, "../../src/gateway/catalog.ts");
const BOUND_MS = 20_000;

test("a wait for a gone member that ended leaves no timer pending", async () => {
  const dir = mkdtempSync(join(tmpdir(), "mcpmgr-catalog-waits-"));
  try {
    const script = join(dir, "waits.ts");
    writeFileSync(
      script,
      `import { GroupCatalog } from ${JSON.stringify(CATALOG)};
const catalog = new GroupCatalog({ prefixMode: "always", timeoutMs: 1000, onChange: () => {}, log: () => {}, retryMs: 60_000 });
// Nobody listens on port 1: the member's first attempt fails at once; then it leaves (held as gone).
catalog.setMembers([{ name: "gone", url: "http://127.0.0.1:1/mcp" }]);
await catalog.settled(${BOUND_MS});
catalog.setMembers([]);
catalog.rereadWith(async () => {});
for (let i = 0; i < 3; i++) await catalog.joining("gone", ${BOUND_MS});
console.log("waits over");
`,
    );
    const proc = Bun.spawn([process.execPath, script], { stdout: "pipe", stderr: "pipe" });
    const started = performance.now();
    const code = await proc.exited;
    const took = performance.now() - started;
    expect(await new Response(proc.stdout).text()).toBe("waits over\n");
    expect(code).toBe(0);
    // The waits themselves end in milliseconds; a leftover timer would hold the process for BOUND_MS.
    expect(took).toBeLessThan(BOUND_MS / 2);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
