import { expect, test } from "bun:test";
import { redactor } from "../../src/secrets/redact.ts";
import type { ServerHandle } from "../../src/runtime/server-handle.ts";
import { keepOutput, MAX_LINE_CHARS, unroutedLogLine } from "../../src/workload/server-output.ts";

const SECRET = "s3cr3t-value-of-the-server-0123456789";

/** A server whose stderr is the given chunks, then its end. */
function serverWriting(chunks: readonly string[]): ServerHandle {
  const encoder = new TextEncoder();
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
  return {
    stdout: new ReadableStream(),
    stderr: stream,
    stdin: { write: () => 0 },
    exited: new Promise(() => {}),
    redact: redactor([SECRET]),
    stop: async () => undefined,
  };
}

async function logged(chunks: readonly string[]): Promise<string[]> {
  const lines: string[] = [];
  const log = { debug: (m: string) => lines.push(m), info() {}, warn() {}, error() {} };
  await keepOutput(serverWriting(chunks), "s", log, undefined, false).drained;
  return lines;
}

test("a line that never ends is logged in pieces, none longer than the limit's order", async () => {
  const lines = await logged(Array.from({ length: 40 }, () => "x".repeat(16 * 1024)));
  expect(lines.length).toBeGreaterThan(5);
  expect(lines.join("").replaceAll("s stderr: ", "").length).toBe(40 * 16 * 1024);
  for (const line of lines) expect(line.length).toBeLessThan(MAX_LINE_CHARS + 64 * 1024);
});

test("a long line is never cut inside a secret value: the value is still redacted", async () => {
  // The first cut falls 8 KiB before the end of what is held: put the secret across it, at each offset.
  for (let k = 1; k < SECRET.length; k += 3) {
    const held = `${"a".repeat(MAX_LINE_CHARS)}${SECRET}${"b".repeat(8 * 1024 - k)}`;
    const lines = await logged([held, "\n"]);
    const text = lines.join("\n");
    expect(text).not.toContain(SECRET.slice(0, 12));
    expect(text).toContain("***");
  }
});

/** What the server wrote, from what was logged: each line without its prefix. */
function bodies(lines: readonly string[]): string[] {
  return lines.map((line) => line.replace(/^s stderr: /, ""));
}

test("a secret written over and over without a line end is never cut: every piece is redacted whole", async () => {
  // Lengths that the search's stride (and a naive cut) lands inside of, a prime one among them.
  for (const length of [40, 251, 997, 1000, 4096]) {
    const secret = Array.from({ length }, (_, i) => String.fromCharCode(65 + ((i * 7) % 26))).join("");
    const lines: string[] = [];
    const log = { debug: (m: string) => lines.push(m), info() {}, warn() {}, error() {} };
    const server = { ...serverWriting([secret.repeat(Math.ceil((3 * MAX_LINE_CHARS) / length)), "\n"]) };
    await keepOutput({ ...server, redact: redactor([secret]) }, "s", log, undefined, false).drained;
    expect(lines.length).toBeGreaterThan(1);
    for (const body of bodies(lines))
      expect({ length, body }).toEqual({ length, body: expect.stringMatching(/^(\*\*\*)+$/) });
  }
});

test("a cut never splits a character outside the Basic Multilingual Plane", async () => {
  for (const lead of ["", "a"]) {
    const text = `${lead}${"😀".repeat(MAX_LINE_CHARS)}b`;
    const lines = await logged([text, "\n"]);
    expect(lines.length).toBeGreaterThan(1);
    for (const body of bodies(lines)) expect(body.isWellFormed()).toBe(true);
    expect(bodies(lines).join("")).toBe(text);
  }
});

test("a multi-line secret printed one line per write is redacted line by line", async () => {
  const pem =
    "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----";
  const server = serverWriting(pem.split("\n").map((line) => `${line}\n`));
  const lines: string[] = [];
  const log = { debug: (m: string) => lines.push(m), info() {}, warn() {}, error() {} };
  const kept = keepOutput({ ...server, redact: redactor([pem]) }, "s", log, undefined, false);
  await kept.drained;
  expect(lines.join("\n")).not.toContain("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7");
  expect(lines).toEqual(["s stderr: ***", "s stderr: ***", "s stderr: ***"]);
  expect(kept.tail()).toBe("***\n***\n***");
});

test("an unrouted MCP log message is redacted before it is cut: a secret across the cut leaves nothing of itself", () => {
  const server = serverWriting([]);
  // The data is cut at 4000 characters: the secret starts 10, 1 and its length less one before the cut.
  for (const before of [3_990, 3_999, 4_000 - SECRET.length + 1]) {
    const line = unroutedLogLine(server, { level: "info", logger: "app", data: `${"x".repeat(before)}${SECRET} tail` });
    const prefix = `[mcp log info] app: ${"x".repeat(before)}`;
    expect({ before, after: line.slice(prefix.length, prefix.length + 1) }).toEqual({ before, after: "*" });
  }
});
