import { expect, test } from "bun:test";
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { unknownSession400 } from "../../src/proxy/remote-client/relay-failures.ts";

const posted = (code: number, body: string) => new StreamableHTTPError(code, `Error POSTing to endpoint: ${body}`);

test("a 400 whose JSON-RPC error speaks of the session counts as a forgotten session", () => {
  // server-everything's own streamable HTTP mode, for a session it does not know.
  const everything = '{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"}}';
  expect(unknownSession400(posted(400, everything))).toBe(true);
  expect(
    unknownSession400(posted(400, '{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"}}')),
  ).toBe(true);
});

test("any other 400, or a session word outside the JSON-RPC error, is the request's own failure", () => {
  const unsupported = '{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Unsupported protocol version"}}';
  expect(unknownSession400(posted(400, unsupported))).toBe(false);
  expect(unknownSession400(posted(400, '{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}'))).toBe(
    false,
  );
  expect(unknownSession400(posted(400, "Bad Request: no valid session"))).toBe(false);
  expect(unknownSession400(posted(400, '{"jsonrpc":"2.0","id":1,"result":{"session":"x"}}'))).toBe(false);
  // Not a 400; not the SDK's error; a GET (no body kept).
  expect(unknownSession400(posted(500, '{"error":{"message":"session store down"}}'))).toBe(false);
  expect(unknownSession400(new Error('Error POSTing to endpoint: {"error":{"message":"session"}}'))).toBe(false);
  expect(unknownSession400(new StreamableHTTPError(400, "Failed to open SSE stream: Bad Request"))).toBe(false);
});
