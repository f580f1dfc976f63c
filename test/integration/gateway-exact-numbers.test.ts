/**
 * Integers beyond 2^53 through the gateway's relay (src/gateway/relayed-call.ts reads a member's
 * answer with parseExactJson): a real Go member (test/fixtures/go-json-server, whose encoding/json
 * keeps every digit of a json.Number) echoes a transfer's amount in its text, its JSON text and its
 * structuredContent; called through `mcpmgr gateway` by a 2025-era session (the fast lane) and by a
 * 2026-07-28 request (the modern lane), the caller reads the digits it sent, not the nearest double.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestGroup, type TestGroup } from "../support/gateway-group.ts";
import { REPO_ROOT, type Running, spawnUntil } from "../support/processes.ts";
import { openRawSession } from "../support/raw-session.ts";
import { statelessHeaders, statelessMeta } from "../support/stateless-request.ts";

setDefaultTimeout(60_000);

/** 2^53 + 1: the nearest double is 2^53, so a JSON.parse on the way answers ...992. */
const BIG = "9007199254740993";

let dir: string;
let goServer: Running & { url: string };
let group: TestGroup;
let gatewayUrl: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-gateway-numbers-"));
  const binary = join(dir, "go-json-server");
  const build = Bun.spawnSync(["go", "build", "-o", binary, "."], {
    cwd: join(REPO_ROOT, "test/fixtures/go-json-server"),
    stderr: "pipe",
  });
  if (build.exitCode !== 0) throw new Error(`go build failed: ${build.stderr.toString()}`);
  const running = await spawnUntil([binary, "-http", "127.0.0.1:0"], /^(http:\/\/\S+)$/m);
  goServer = { ...running, url: running.match[1] as string };
  group = await createTestGroup();
  group.run(goServer.url, "gonum", "numbers");
  gatewayUrl = (await group.gateway("numbers")).url;
}, 180_000);

afterAll(async () => {
  await group?.cleanup();
  await goServer?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The call as JSON text with the amount's digits written out (JSON.stringify could not write them). */
const transferCall = (meta?: Record<string, unknown>) =>
  `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"gonum_transfer","arguments":{"amount":${BIG},"to":"x"}${
    meta ? `,"_meta":${JSON.stringify(meta)}` : ""
  }}}`;

/** The answer as the caller received it, every digit as sent (an event stream's data lines, or the JSON body). */
function expectExactDigits(answer: string): void {
  expect(answer).toContain(`transferred ${BIG} to x`);
  // The JSON text block, itself JSON inside a JSON string.
  expect(answer).toContain(`{\\"amount\\":${BIG},\\"to\\":\\"x\\"}`);
  // structuredContent: a number in the message itself.
  expect(answer).toMatch(new RegExp(`"structuredContent":\\{"amount":${BIG},"to":"x"\\}`));
  expect(answer).not.toContain("9007199254740992");
}

test("a 2025-era session's call through the fast lane gets a member's integer beyond 2^53 with every digit", async () => {
  const session = await openRawSession(gatewayUrl, "2025-11-25", "numbers-2025");
  const response = await session.post(transferCall());
  expect(response.status).toBe(200);
  expectExactDigits(await response.text());
});

test("a 2026-07-28 call through the modern lane gets a member's integer beyond 2^53 with every digit", async () => {
  const response = await fetch(gatewayUrl, {
    method: "POST",
    headers: statelessHeaders("tools/call", "gonum_transfer"),
    body: transferCall(statelessMeta({}, { name: "numbers-2026", version: "1" })),
  });
  expect(response.status).toBe(200);
  expectExactDigits(await response.text());
});
