/**
 * Server→client traffic through the stdio bridge: sampling, elicitation and roots
 * requests made inside a tool call reach the session that called the tool and no
 * other; a client without the capability gets an error instead of a hang; log
 * messages are filtered per session by that session's logging/setLevel.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import {
  connectClient,
  startProbeBridge,
  waitFor,
  waitInFlight,
  type Bridged,
  type ProbeClient,
} from "../fixtures/bridge-probe-client.ts";
import { LOG_LEVELS } from "../fixtures/bridge-probe-server.ts";

// Real server processes; generous for slow machines (each test here takes well under 3 s).
setDefaultTimeout(20_000);

let bridged: Bridged;
const opened: ProbeClient[] = [];

async function client(name: string, options: { serverRequests?: boolean } = {}): Promise<ProbeClient> {
  const c = await connectClient(bridged.url, name, { ...options, bridge: bridged.bridge });
  opened.push(c);
  return c;
}

const counts = (c: ProbeClient) => ({
  sampling: c.seen.sampling.length,
  elicitation: c.seen.elicitation.length,
  roots: c.seen.roots,
});

beforeAll(async () => {
  bridged = await startProbeBridge();
});

afterAll(async () => {
  await Promise.allSettled(opened.map((c) => c.close()));
  await bridged?.stop();
});

describe("server→client requests", () => {
  let a: ProbeClient;
  let b: ProbeClient;

  beforeAll(async () => {
    a = await client("A", { serverRequests: true });
    b = await client("B", { serverRequests: true });
  });

  test("sampling, elicitation and roots reach the calling session only (the other one is connected with a GET stream)", async () => {
    const sampled = await a.call("sample", { prompt: "question from A" });
    expect(sampled).toEqual({ answer: "answer from A", model: "model-A" });
    const elicited = await a.call("elicit", { message: "who are you, A?" });
    expect(elicited.result).toEqual({ action: "accept", content: { name: "A" } });
    const roots = await a.call("roots");
    expect(roots.roots).toEqual([{ uri: "file:///roots/A", name: "A" }]);

    expect(a.seen.sampling).toEqual(["question from A"]);
    expect(a.seen.elicitation).toEqual(["who are you, A?"]);
    expect(a.seen.roots).toBe(1);
    expect(counts(b)).toEqual({ sampling: 0, elicitation: 0, roots: 0 });

    // And the other way round.
    expect(await b.call("sample", { prompt: "question from B" })).toEqual({
      answer: "answer from B",
      model: "model-B",
    });
    expect((await b.call("roots")).roots).toEqual([{ uri: "file:///roots/B", name: "B" }]);
    expect(counts(a)).toEqual({ sampling: 1, elicitation: 1, roots: 1 });
    expect([...a.seen.errors, ...b.seen.errors]).toEqual([]);
  });

  // A stdio server's request does not say which of its client requests it serves. While
  // only one session is busy the bridge knows; while several are, it refuses the request
  // to the server instead of guessing, so a prompt can never reach another client.
  test("both sessions sampling at the same time: nobody sees the other's prompt or answer", async () => {
    const before = [counts(a), counts(b)];
    const [fromA, fromB] = await Promise.all([
      a.call("sample", { prompt: "concurrent A", delayMs: 300 }),
      b.call("sample", { prompt: "concurrent B", delayMs: 300 }),
    ]);
    expect(fromA.answer).not.toBe("answer from B");
    expect(fromB.answer).not.toBe("answer from A");
    expect(a.seen.sampling.slice(before[0]?.sampling)).not.toContain("concurrent B");
    expect(b.seen.sampling.slice(before[1]?.sampling)).not.toContain("concurrent A");
    // Refused rather than guessed: the tool reports an error naming the reason.
    expect([fromA.error, fromB.error].join(" ")).toContain("cannot tell which");
  });

  test("a request B starts while A's tool is working never receives A's sampling request", async () => {
    const before = [counts(a), counts(b)];
    const fromA = a.call("sample", { prompt: "private prompt of A", delayMs: 400 });
    await waitInFlight(bridged, 1);
    const fromB = b.call("sleep", { ms: 1_000 });
    const [sampled] = await Promise.all([fromA, fromB]);
    expect(counts(b)).toEqual(before[1] as ReturnType<typeof counts>);
    expect(b.seen.sampling).not.toContain("private prompt of A");
    expect(sampled.answer).not.toBe("answer from B");
  });

  test("once the other session is idle again, sampling reaches the caller", async () => {
    await waitFor(() => bridged.bridge.inFlightCount === 0, "the bridge to have nothing in flight", 10_000);
    const sampled = await a.call("sample", { prompt: "quiet again" });
    expect(sampled.answer).toBe("answer from A");
  });

  test("a client without sampling/elicitation/roots gets an error result, not a hang", async () => {
    const c = await client("C-no-capabilities");
    const started = performance.now();
    const sampled = await c.call("sample", { prompt: "nobody can answer" }, { timeout: 5_000 });
    expect(sampled.code).toBe(-32601);
    expect(sampled.error).toContain("sampling/createMessage");
    const elicited = await c.call("elicit", { message: "nobody can answer" }, { timeout: 5_000 });
    expect(elicited.code).toBe(-32601);
    const roots = await c.call("roots", {}, { timeout: 5_000 });
    expect(roots.code).toBe(-32601);
    expect(performance.now() - started).toBeLessThan(3_000);
    // And nobody else was asked in its place.
    expect(a.seen.sampling).not.toContain("nobody can answer");
    expect(b.seen.sampling).not.toContain("nobody can answer");
    expect(b.seen.elicitation).not.toContain("nobody can answer");
  });
});

describe("logging/setLevel per session", () => {
  test("A at debug gets every level, B at error only error and above; the server logs at the most verbose level wanted", async () => {
    const trigger = await client("log-trigger");
    const a = await client("log-A");
    const b = await client("log-B");
    const everyone = [trigger, a, b];
    // Logs a server writes while working on one session's request go to that session only.
    const logAll = async (caller: ProbeClient, tag: string) => {
      const barrier = everyone.map((x) => x.seen.promptsChanged);
      await caller.call("log_all", { tag, barrier: true });
      // The barrier (a list_changed, sent to everyone) follows the log messages.
      await waitFor(() => everyone.every((x, i) => x.seen.promptsChanged > (barrier[i] ?? 0)), "the barrier");
    };
    const levelsOf = (c: ProbeClient, tag: string) =>
      c.seen.logs.filter((l) => String(l.data).startsWith(`${tag}:`)).map((l) => l.level);

    // B asks first, so A's more verbose level has to be passed on to the server.
    await b.client.setLoggingLevel("error");
    await a.client.setLoggingLevel("debug");
    await logAll(a, "one-a");
    await logAll(b, "one-b");
    expect(levelsOf(a, "one-a")).toEqual([...LOG_LEVELS]);
    expect(levelsOf(b, "one-b")).toEqual(["error", "critical", "alert", "emergency"]);
    // Nobody sees the logs of another session's request.
    expect(levelsOf(b, "one-a")).toEqual([]);
    expect(levelsOf(a, "one-b")).toEqual([]);
    expect(levelsOf(trigger, "one-a")).toEqual([]);

    // B raising its level changes nothing for A.
    await b.client.setLoggingLevel("critical");
    await logAll(a, "two-a");
    await logAll(b, "two-b");
    expect(levelsOf(a, "two-a")).toEqual([...LOG_LEVELS]);
    expect(levelsOf(b, "two-b")).toEqual(["critical", "alert", "emergency"]);

    // A leaves: the server goes back to the most verbose level still wanted.
    await a.close();
    everyone.splice(everyone.indexOf(a), 1);
    await logAll(b, "three");
    expect(levelsOf(b, "three")).toEqual(["critical", "alert", "emergency"]);
    const stats = await trigger.call("stats");
    expect(stats.setLevel).toEqual(["error", "debug", "critical"]);
  });
});
