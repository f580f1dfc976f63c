/**
 * The Cedar evaluator (middleware/cedar-evaluator.ts) shared by clients that ask very different
 * questions, with real evaluator processes: one client flooding it with slow questions (from a
 * process of its own, test/fixtures/cedar-flood.ts) does not hold up another's (cedar-turns.ts); a
 * question past the size bound is denied unasked (cedar-cost.ts); and the evaluator keeps a log of
 * its own, in the home's state folder, without policies or values.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { evaluatorAccess, PolicySetClient } from "../../src/middleware/cedar-client.ts";
import { OVERSIZED_REASON } from "../../src/middleware/cedar-cost.ts";
import { until } from "../support/gateway-group.ts";
import { cedarEvaluatorPids, REPO_ROOT } from "../support/processes.ts";

setDefaultTimeout(60_000);

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "mcpmgr-cedar-fair-"));
});
afterAll(async () => {
  for (const pid of cedarEvaluatorPids((socket) => socket.startsWith(root))) process.kill(pid, "SIGKILL");
  await rm(root, { recursive: true, force: true });
});

const FLOOD = join(REPO_ROOT, "test/fixtures/cedar-flood.ts");

/** A home of its own per test: its own evaluator. */
function homeAccess(name: string) {
  const home = join(root, name);
  return { home, access: evaluatorAccess({ ...process.env, MCPMGR_HOME: home }) };
}

const question = (id: string, context: Record<string, unknown> = {}) => ({
  subject: "local",
  action: "call_tool",
  type: "Tool",
  id,
  context: context as never,
  strict: true,
});

async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stream.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return text.trim();
}

test("a client flooding the evaluator with slow questions: another's simple question is still answered well within the limit", async () => {
  const { access } = homeAccess("fair");
  const simple = new PolicySetClient(
    { policies: 'permit(principal, action, resource == Tool::"echo");', entities: [] },
    access,
  );
  await simple.open();
  // Eight frames in flight, each of 56 questions over a set of 9,998 items (10,000 values with the
  // context and the set themselves: within the bound, so each is evaluated, some 15-30 ms here; each
  // frame under 4 MiB): seconds of work per frame, one more sent as each is answered.
  const flood = Bun.spawn([process.execPath, FLOOD, access.socketPath, "8", "56", "9998"], {
    stdout: "pipe",
    stderr: "inherit",
  });
  try {
    expect(await firstLine(flood.stdout)).toBe("flooding");
    // Asked now and then for 4 s, each question its own frame: some land while a flood frame is decided.
    const waits: number[] = [];
    for (const until = performance.now() + 4_000; performance.now() < until; ) {
      const asked = performance.now();
      const decision = await simple.decide(question("echo", { round: waits.length }));
      waits.push(Math.round(performance.now() - asked));
      expect(decision).toEqual({ allowed: true });
      await Bun.sleep(100);
    }
    console.log(`simple question's waits under the flood (ms): ${waits.join(", ")}`);
    // The answer's limit is 5 s; before turns, each waited out the whole backlog and was denied.
    expect(Math.max(...waits)).toBeLessThan(1_000);
    // And typically about a slice or two, not a flood frame's worth (before turns: some 800 ms each).
    const median = [...waits].sort((x, y) => x - y)[Math.floor(waits.length / 2)] as number;
    expect(median).toBeLessThan(300);
    // Still flooding: its questions were evaluated, not denied for their size.
    expect(flood.exitCode).toBeNull();
  } finally {
    flood.kill();
    simple.close();
  }
});

test("a question past the size bound is denied unasked; the evaluator's log says so, never with its values; others decided as usual", async () => {
  const { home, access } = homeAccess("bound");
  const client = new PolicySetClient(
    {
      policies: [
        "permit(principal, action, resource);",
        'forbid(principal, action, resource) when { context has arg_tags && context.arg_tags.contains("never") };',
      ].join("\n"),
      entities: [],
    },
    access,
  );
  await client.open();
  const large = Array.from({ length: 20_000 }, (_, i) => `secret-value-${i}`);
  const denied = await client.decide(question("slow", { arg_tags: large }));
  expect(denied).toEqual({ allowed: false, reason: OVERSIZED_REASON, forbidden: true });
  const text = "x".repeat(2 ** 20 + 1);
  expect((await client.decide(question("slow", { arg_tags: [text] }))).allowed).toBe(false);
  expect(await client.decide(question("slow", { arg_tags: large.slice(0, 100) }))).toEqual({ allowed: true });
  expect((await client.decide(question("slow", { arg_tags: ["never"] }))).allowed).toBe(false);
  client.close();

  const logPath = join(home, "state", "logs", "cedar-evaluator.log");
  expect(access.logPath).toBe(logPath);
  expect(await until(() => readFileSync(logPath, "utf8").includes("exiting (idle)"), 15_000)).toBe(true);
  const log = readFileSync(logPath, "utf8");
  expect(log).toContain(`listening on ${access.socketPath}`);
  expect(log).toContain("a client connected (1 connected)");
  expect(log).toContain("denied 1 question(s) too large to evaluate (the last: over 10001 values");
  expect(log).toContain("a client left (0 connected)");
  expect(log).not.toContain("secret-value");
  expect(log).not.toContain("permit(");
});

test("the evaluator's log tells of refused frames and clients coming and going, never what they sent", async () => {
  const { home, access } = homeAccess("log");
  const client = new PolicySetClient({ policies: "permit(principal, action, resource);", entities: [] }, access);
  await client.open();
  const logPath = join(home, "state", "logs", "cedar-evaluator.log");
  await new Promise<void>((resolve) => {
    const socket = createConnection(access.socketPath);
    socket.on("connect", () => socket.write('{"op":"guess","password":"hunter2"}\n'));
    socket.on("error", () => {});
    socket.on("close", () => resolve());
  });
  expect(await until(() => readFileSync(logPath, "utf8").includes("a client left (1 connected)"))).toBe(true);
  const log = readFileSync(logPath, "utf8");
  expect(log).toContain("a client connected (2 connected)");
  expect(log).toContain("a client's connection was ended: a frame that is not JSON or not one of the protocol's");
  expect(log).not.toContain("hunter2");
  // A frame of questions past its bound is refused unread.
  await new Promise<void>((resolve) => {
    const socket = createConnection(access.socketPath);
    socket.on("connect", () => socket.write(`{"op":"decide","n":1,"requests":["${"y".repeat(5 * 2 ** 20)}"]}\n`));
    socket.on("error", () => {});
    socket.on("close", () => resolve());
  });
  expect(
    await until(() => readFileSync(logPath, "utf8").includes("a frame of questions longer than 4194304 bytes")),
  ).toBe(true);
  // Each line: when, which process.
  expect(log.split("\n")[0]).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z \[\d+\] cedar evaluator: listening on /);
  client.close();
});

test("questions asked together past a frame's bound go in several frames: each is decided, none refused", async () => {
  const { access } = homeAccess("split");
  const client = new PolicySetClient(
    {
      policies: [
        "permit(principal, action, resource);",
        'forbid(principal, action, resource) when { context has arg_tags && context.arg_tags.contains("never") };',
      ].join("\n"),
      entities: [],
    },
    access,
  );
  await client.open();
  // Sixty questions of some 100 kB each, asked in one turn: 6 MB, past the 4 MiB of a frame.
  const tags = Array.from({ length: 9_000 }, (_, i) => `tag-${i}`);
  const decisions = await Promise.all(
    Array.from({ length: 60 }, (_, i) =>
      client.decide(question(`tool-${i}`, { arg_tags: i === 7 ? ["never"] : tags })),
    ),
  );
  expect(decisions.filter((d) => d.allowed)).toHaveLength(59);
  expect(decisions[7]).toEqual({
    allowed: false,
    reason: "forbidden by policy1",
    forbidden: true,
    forbiddenBy: ["policy1"],
  });
  client.close();
});
