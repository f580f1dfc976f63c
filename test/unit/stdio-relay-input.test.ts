/**
 * What `proxy stdio` says about its input: a stdin that fails to be read is said to be unreadable
 * (and ends the relay as failed), not reported as a skipped line as a bad line is.
 */
import { expect, test } from "bun:test";
import { PassThrough } from "node:stream";
import { startStdioRelay } from "../../src/proxy/remote-client/stdio-relay.ts";

function relayOver(stdin: PassThrough) {
  const lines: string[] = [];
  const log = {
    info: (text: string) => lines.push(`info ${text}`),
    warn: (text: string) => lines.push(`warn ${text}`),
    error: (text: string) => lines.push(`error ${text}`),
  };
  // Nothing is sent: no line reaches the remote, which is never asked.
  const relay = startStdioRelay({
    target: new URL("http://127.0.0.1:9/mcp"),
    fetch: undefined,
    stdin,
    stdout: new PassThrough(),
    log,
  });
  return { relay, lines };
}

test("a read error of stdin is said as one, and the relay ends failed", async () => {
  const stdin = new PassThrough();
  const { relay, lines } = relayOver(stdin);
  const { finished } = await relay;
  stdin.destroy(Object.assign(new Error("EIO: i/o error, read"), { code: "EIO" }));
  expect(await finished).toBe(1);
  expect(lines).toEqual(["error stdin: cannot be read: EIO: i/o error, read"]);
});

test("a line that is not JSON, or not a JSON-RPC message, is said to be skipped, and the input goes on", async () => {
  const stdin = new PassThrough();
  const { relay, lines } = relayOver(stdin);
  const { finished } = await relay;
  stdin.end("not json\n[]\n");
  expect(await finished).toBe(0);
  expect(lines).toEqual([
    expect.stringMatching(/^warn stdin: skipped a line that is not JSON: JSON Parse error/),
    "warn stdin: skipped a line that is not a JSON-RPC message",
  ]);
});

test("a line past the transport's buffer says that no more input is read", async () => {
  const stdin = new PassThrough();
  const { relay, lines } = relayOver(stdin);
  const { finished } = await relay;
  stdin.write(Buffer.alloc(11 * 1024 * 1024, "x"));
  expect(await finished).toBe(0);
  expect(lines).toEqual(["warn stdin: a line longer than 10485760 bytes: no more input is read"]);
});
