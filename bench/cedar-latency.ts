/**
 * `bun bench/cedar-latency.ts`: what a Cedar decision costs where it is taken. A decision not
 * remembered is asked of the user's Cedar evaluator (one round trip over its Unix socket; a list's
 * items in one frame) instead of the engine in the proxy's own process, as before; a remembered one
 * never leaves the proxy. Measured here, in a private MCPMGR_HOME (its own evaluator):
 *   in-process     the engine in this process (cedar-engine.ts `evaluate`), as each supervisor did
 *   evaluator      one question per round trip (PolicySetClient.decide, awaited one by one)
 *   evaluator ×50  fifty questions in one frame (a list of fifty tools), per question
 *   remembered     the decider's cache (cedarDecider), a question asked before
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const home = mkdtempSync(join(tmpdir(), "mcpmgr-cedar-latency-"));
process.env.MCPMGR_HOME = home;
const { loadPolicySet, evaluate } = await import("../src/middleware/cedar-engine.ts");
const { openPolicySet } = await import("../src/middleware/cedar-client.ts");
const { cedarDecider } = await import("../src/middleware/cedar-decider.ts");

const policies = [
  'permit(principal, action == Action::"call_tool", resource);',
  'forbid(principal, action, resource == Tool::"rm");',
  'forbid(principal, action, resource) when { context has arg_path && context.arg_path like "/etc/*" };',
].join("\n");
const N = Number(process.env.N ?? 2_000);
const question = (i: number) => ({
  subject: "local",
  action: "call_tool",
  type: "Tool",
  id: `tool-${i}`,
  context: {},
  strict: false,
});

function stats(label: string, samples: number[]): void {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number) * 1000;
  const mean = (samples.reduce((s, x) => s + x, 0) / samples.length) * 1000;
  console.log(
    `${label.padEnd(16)} n=${String(samples.length).padStart(5)}  mean ${mean.toFixed(1).padStart(7)} µs  p50 ${at(0.5).toFixed(1).padStart(7)} µs  p99 ${at(0.99).toFixed(1).padStart(7)} µs`,
  );
}

try {
  const loaded = loadPolicySet("latency", policies, [], true);
  if (!("set" in loaded)) throw new Error(loaded.invalid);
  for (let i = 0; i < 200; i++) evaluate(loaded.set, question(-i)); // warm-up
  const inProcess: number[] = [];
  for (let i = 0; i < N; i++) {
    const t = performance.now();
    evaluate(loaded.set, question(i));
    inProcess.push(performance.now() - t);
  }
  stats("in-process", inProcess);

  const config = { policies, entities: [] };
  const started = performance.now();
  const client = await openPolicySet(config);
  console.log(`evaluator start + load: ${(performance.now() - started).toFixed(0)} ms (first client of the home)`);
  for (let i = 0; i < 200; i++) await client.decide(question(-i));
  const oneByOne: number[] = [];
  for (let i = 0; i < N; i++) {
    const t = performance.now();
    await client.decide(question(N + i));
    oneByOne.push(performance.now() - t);
  }
  stats("evaluator", oneByOne);

  const batched: number[] = [];
  for (let round = 0; round < N / 50; round++) {
    const t = performance.now();
    await Promise.all(Array.from({ length: 50 }, (_, i) => client.decide(question(3 * N + round * 50 + i))));
    batched.push((performance.now() - t) / 50);
  }
  stats("evaluator ×50", batched);

  const { decide } = cedarDecider(client);
  const req = new Request("http://localhost/mcp");
  await decide(req, "call_tool", "Tool", "cached");
  const remembered: number[] = [];
  for (let i = 0; i < N; i++) {
    const t = performance.now();
    const decision = decide(req, "call_tool", "Tool", "cached");
    remembered.push(performance.now() - t);
    if (decision instanceof Promise) throw new Error("a remembered decision was asked again");
  }
  stats("remembered", remembered);
  client.close();
} finally {
  rmSync(home, { recursive: true, force: true });
}
