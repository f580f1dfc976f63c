import { expect, test } from "bun:test";
import { checkedBody, forwardWith, readRpcBody } from "../../src/middleware/rpc-body.ts";

const post = (body: string | Uint8Array, headers: Record<string, string> = {}) =>
  new Request("http://127.0.0.1/mcp", { method: "POST", body, headers });

test("a body not in canonical form is re-serialised: what goes upstream is what the policies checked", async () => {
  const req = post(
    '{ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "env", "note": "a:1234567890123456", "x": 1.50} }',
  );
  const body = checkedBody(req, (await readRpcBody(req))!);
  if (body instanceof Response) throw new Error("refused");
  expect(body.text).toBe(
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"env","note":"a:1234567890123456","x":1.5}}',
  );
  expect(await forwardWith(req, body).text()).toBe(body.text);
});

test("integers beyond 2^53 keep their exact digits through the check", async () => {
  const text =
    '{"jsonrpc":"2.0","id":12345678901234567890,"method":"tools/call","params":{"name":"env","arguments":{"n":-98765432109876543210,"f":1.5}}}';
  const req = post(text);
  const body = checkedBody(req, (await readRpcBody(req))!);
  if (body instanceof Response) throw new Error("refused");
  expect(body.text).toBe(text);
});

test("a body no policy can parse is refused; a body forwarded unchecked keeps its bytes", async () => {
  const garbage = post('{"jsonrpc":"2.0",');
  const refused = checkedBody(garbage, (await readRpcBody(garbage))!);
  expect(refused).toBeInstanceOf(Response);
  expect((refused as Response).status).toBe(400);
  const bytes = new Uint8Array([0xff, 0xfe, 0x00, 0x41]);
  const binary = post(bytes);
  const body = (await readRpcBody(binary))!;
  expect(new Uint8Array(await forwardWith(binary, body).arrayBuffer())).toEqual(bytes);
});

test("Mcp-Method and Mcp-Name must agree with the body, and go with single requests only", async () => {
  const call = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"env"}}';
  const check = async (text: string, headers: Record<string, string>) => {
    const req = post(text, headers);
    const out = checkedBody(req, (await readRpcBody(req))!);
    return out instanceof Response
      ? `${out.status} ${((await out.json()) as { error: { message: string } }).error.message}`
      : "ok";
  };
  expect(await check(call, { "mcp-method": "tools/call", "mcp-name": "env" })).toBe("ok");
  expect(await check(call, { "mcp-method": "tools/list" })).toStartWith("400 Mcp-Method does not match");
  expect(await check(call, { "mcp-name": "write_file" })).toStartWith("400 Mcp-Name does not match");
  expect(
    await check('{"jsonrpc":"2.0","id":1,"method":"tools/list"}', {
      "mcp-method": "tools/list",
      "mcp-name": "write_file",
    }),
  ).toStartWith("400 Mcp-Name does not match");
  expect(await check(`[${call}]`, { "mcp-method": "tools/call" })).toStartWith(
    "400 Mcp-Method and Mcp-Name go with a single request",
  );
  expect(
    await check('{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///a"}}', {
      "mcp-method": "resources/read",
      "mcp-name": "file:///a",
    }),
  ).toBe("ok");
});

test("Mcp-Name in the Base64 sentinel form is compared decoded; a mismatch is the revision's -32020", async () => {
  const check = async (name: string, headerName: string) => {
    const text = JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name } });
    const req = post(text, { "mcp-method": "tools/call", "mcp-name": headerName });
    const out = checkedBody(req, (await readRpcBody(req))!);
    return out instanceof Response
      ? `${out.status} ${((await out.json()) as { error: { code: number } }).error.code}`
      : "ok";
  };
  const sentinel = (value: string) => `=?base64?${Buffer.from(value, "utf8").toString("base64")}?=`;
  // A name outside plain ASCII must travel encoded (MCP 2026-07-28, Value Encoding); any name may.
  expect(await check("météo", sentinel("météo"))).toBe("ok");
  expect(await check("env", sentinel("env"))).toBe("ok");
  expect(await check("env", sentinel("write_file"))).toBe("400 -32020");
  expect(await check("env", "=?base64?not base64?=")).toBe("400 -32020");
  expect(await check("env", "write_file")).toBe("400 -32020");
});
