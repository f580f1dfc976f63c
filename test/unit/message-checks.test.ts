/**
 * The one reading of a body that every policy and audit share (middleware/rpc-body.ts,
 * message-checks.ts): a message the server could read differently from how mcpmgr reads it
 * is refused with -32600 before any policy decides on it. The spellings below are those a Go
 * server (encoding/json into structs) reads as the protocol's keys; the integration test
 * proxy-canonical-messages.test.ts sends them to one.
 */
import { describe, expect, test } from "bun:test";
import { denialOf } from "../../src/middleware/denials.ts";
import { messageGate } from "../../src/middleware/message-gate.ts";
import { checkedBody, readRpcBody } from "../../src/middleware/rpc-body.ts";
import { detachedContext } from "../../src/proxy/handler.ts";

const post = (body: string) => new Request("http://127.0.0.1/mcp", { method: "POST", body });

/** "ok", or the status, JSON-RPC code and message of the refusal (which audit sees with its reason). */
async function check(text: string, options = { arguments: false }): Promise<string> {
  const req = post(text);
  const out = checkedBody(req, (await readRpcBody(req))!, options);
  if (!(out instanceof Response)) return "ok";
  const { error } = (await out.json()) as { error: { code: number; message: string } };
  expect(denialOf(out)).toEqual({ reason: error.message, invalid: true });
  return `${out.status} ${error.code} ${error.message}`;
}

const call = (params: string, extra = "") =>
  `{"jsonrpc":"2.0","id":7,"method":"tools/call"${extra},"params":${params}}`;

describe("refused: what a case-insensitive, last-key-wins server reads differently", () => {
  const refused: [string, string, string][] = [
    ["a duplicate key", call('{"name":"echo","name":"secret_tool"}'), 'the key "name" appears twice'],
    [
      "a duplicate key written with escapes",
      call('{"name":"echo","n\\u0061me":"secret_tool"}'),
      '"name" appears twice',
    ],
    ["a duplicate key deep inside", call('{"name":"echo","arguments":{"a":[{"b":1,"b":2}]}}'), '"b" appears twice'],
    ["a protocol key in another case", call('{"Name":"secret_tool"}'), '"Name" in params differs from "name"'],
    ["a case variant next to the key", call('{"name":"echo","nAme":"secret_tool"}'), '"nAme" in params differs'],
    ["PARAMS", '{"jsonrpc":"2.0","id":7,"method":"tools/call","PARAMS":{"name":"secret_tool"}}', '"PARAMS"'],
    ["paramſ (long s)", '{"jsonrpc":"2.0","id":7,"method":"tools/call","paramſ":{"name":"secret_tool"}}', "paramſ"],
    ["paramſ as an escape", '{"jsonrpc":"2.0","id":7,"method":"tools/call","param\\u017f":{"name":"x"}}', "paramſ"],
    ["tasK (Kelvin sign)", call('{"name":"echo","tasK":{}}'), '"tasK" in params differs from "task"'],
    ["Method beside method", call('{"name":"secret_tool"}', ',"Method":"tools/list"'), '"Method" of the message'],
    ["Method alone", '{"jsonrpc":"2.0","id":7,"Method":"tools/call","params":{"name":"x"}}', '"Method"'],
    ["JSONRPC", '{"JSONRPC":"2.0","jsonrpc":"2.0","id":7,"method":"ping"}', '"JSONRPC"'],
    ["_META", call('{"name":"echo","_META":{}}'), '"_META" in params differs from "_meta"'],
  ];
  for (const [what, text, why] of refused)
    test(what, async () => {
      const answer = await check(text);
      expect(answer).toStartWith("400 -32600 Invalid Request:");
      expect(answer).toContain(why);
    });

  test("argument keys that differ only by case, when a policy inspects arguments (at any depth)", async () => {
    const body = call('{"name":"transfer","arguments":{"amount":1,"Amount":1000}}');
    expect(await check(body)).toBe("ok");
    expect(await check(body, { arguments: true })).toContain('the keys "amount" and "Amount" in the arguments');
    expect(await check(call('{"name":"t","arguments":{"x":[{"ſ":1,"s":2}]}}'), { arguments: true })).toContain(
      "differ only by case",
    );
    expect(await check(call('{"name":"t","arguments":{"amount":1,"to":"x"}}'), { arguments: true })).toBe("ok");
  });
});

describe("refused: messages that are neither requests nor responses", () => {
  const refused: [string, string, string][] = [
    ["no method and no answer", '{"jsonrpc":"2.0","id":7,"params":{"name":"secret_tool"}}', "must be a response"],
    ["an answer without an id", '{"jsonrpc":"2.0","result":{}}', "must be a response"],
    ["both a result and an error", '{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}', "response"],
    ["a method and a result", '{"jsonrpc":"2.0","id":1,"method":"tools/call","result":{}}', "not both"],
    ["a method that is not a string", '{"jsonrpc":"2.0","id":1,"method":["tools/call"]}', "must be a string"],
    ["an id that is an object", '{"jsonrpc":"2.0","id":{},"method":"ping"}', "id must be a string or a number"],
    ["params that are not an object", '{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}', "params must be"],
    ["no jsonrpc", '{"id":1,"method":"ping"}', "JSON-RPC 2.0"],
    ["an empty batch", "[]", "an empty batch"],
    ["a batch holding a number", '[{"jsonrpc":"2.0","id":1,"method":"ping"},3]', "not a JSON-RPC message object"],
    ["a lone surrogate", call('{"name":"echo","arguments":{"text":"\\ud800"}}'), "lone surrogate"],
    ["a lone surrogate in a key", call('{"name":"echo","arguments":{"\\udc00":1}}'), "lone surrogate"],
    ["a number beyond a double", call('{"name":"transfer","arguments":{"amount":1e400}}'), "too large for a double"],
  ];
  for (const [what, text, why] of refused)
    test(what, async () => {
      const answer = await check(text);
      expect(answer).toStartWith("400 -32600 Invalid Request:");
      expect(answer).toContain(why);
    });

  test("a request that names its target with something other than a string: -32602", async () => {
    // A JavaScript server would look up tools[["secret_tool"]], which is tools["secret_tool"].
    expect(await check(call('{"name":["secret_tool"]}'))).toStartWith(
      "400 -32602 Invalid params: tools/call names its target with a string name",
    );
    expect(await check('{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{}}')).toStartWith("400 -32602");
  });
});

describe("accepted", () => {
  const accepted: [string, string][] = [
    ["a request", call('{"name":"echo","arguments":{"text":"hi"}}')],
    ["a notification", '{"jsonrpc":"2.0","method":"notifications/initialized"}'],
    ["a response, an error with a null id", '{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"x"}}'],
    ["a response to the server", '{"jsonrpc":"2.0","id":"s-1","result":{"content":[]}}'],
    [
      "whitespace, escapes and a paired surrogate",
      '{ "jsonrpc" : "2.0", "id" : 1, "method" : "ping", "params" : { "_meta" : { "x" : "\\ud83d\\ude00\\u00e9" } } }',
    ],
    ["keys that merely look alike in arguments nobody inspects", call('{"name":"t","arguments":{"a":1,"A":2}}')],
    ["unknown params keys", call('{"name":"t","Extra":1,"other":{"Name":1}}')],
    [
      "a batch",
      `[${call('{"name":"t"}')},{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}]`,
    ],
    [
      "ids and numbers beyond 2^53",
      call('{"name":"t","arguments":{"n":12345678901234567890}}').replace('"id":7', '"id":98765432109876543210'),
    ],
  ];
  for (const [what, text] of accepted)
    test(what, async () => expect(await check(text, { arguments: !what.includes("nobody inspects") })).toBe("ok"));
});

test("the gate: a body on a method other than POST is refused (a lenient server could read it), no body passes", async () => {
  const reached: string[] = [];
  const gate = messageGate({ arguments: false })(async (req) => {
    reached.push(req.method);
    return new Response(null, { status: 204 });
  });
  const ctx = detachedContext();
  const body = call('{"name":"secret_tool"}');
  for (const method of ["PUT", "PATCH", "DELETE"]) {
    const refused = await gate(new Request("http://127.0.0.1/mcp", { method, body }), ctx);
    expect(refused.status).toBe(400);
    expect(denialOf(refused)?.reason).toBe(
      `Invalid Request: MCP messages are sent with POST, not with a ${method} body`,
    );
  }
  for (const method of ["GET", "DELETE", "OPTIONS"])
    expect((await gate(new Request("http://127.0.0.1/mcp", { method }), ctx)).status).toBe(204);
  expect((await gate(post(body), ctx)).status).toBe(204);
  expect(reached).toEqual(["GET", "DELETE", "OPTIONS", "POST"]);
});
