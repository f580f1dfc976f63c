/**
 * The answers a stdio relay writes to its client (one JSON-RPC message a line), by id, as they come:
 * for tests that drive `startStdioRelay` in-process on a PassThrough.
 */
import type { Readable, Writable } from "node:stream";
import { expect } from "bun:test";
import { until } from "./gateway-group.ts";

export function answersOf<T extends { id?: unknown }>(stdout: Readable): Map<unknown, T> {
  const answers = new Map<unknown, T>();
  let buffered = "";
  stdout.on("data", (chunk: Buffer) => {
    buffered += chunk.toString();
    for (let end = buffered.indexOf("\n"); end >= 0; end = buffered.indexOf("\n")) {
      const message = JSON.parse(buffered.slice(0, end)) as T;
      buffered = buffered.slice(end + 1);
      if (message.id !== undefined) answers.set(message.id, message);
    }
  });
  return answers;
}

/**
 * A raw JSON-RPC conversation with an in-process relay: `send` a message, wait for the `answer` to an
 * id, and `initialize` as Claude Desktop does (initialize, its answer checked, then initialized).
 */
export function relayConversation<T extends { id?: unknown; result?: unknown }>(stdin: Writable, stdout: Readable) {
  const answers = answersOf<T>(stdout);
  const send = (message: object) => stdin.write(`${JSON.stringify(message)}\n`);
  const answer = async (id: number): Promise<T> => {
    expect(await until(() => answers.has(id))).toBe(true);
    return answers.get(id) as T;
  };
  const initialize = async () => {
    send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "claude-ai", version: "1" } },
    });
    expect((await answer(1)).result).toBeDefined();
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
  };
  return { answers, send, answer, initialize };
}
