/**
 * `stop` while a request is in flight waits for it (up to 10 s, docs/workloads.md): it says so, once,
 * when the wait is noticeable, and says nothing of it when nothing holds the stop up. A stop held up by
 * a server that does not exit as its input closes (an SDK server waiting on a request of its own) says
 * that, not that requests are in progress.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { cliEnv, runCli, runCliOk } from "../support/cli-home.ts";

// A real workload, a call held open for seconds, and the stop that waits for it.
setDefaultTimeout(60_000);

const PROBE = "npx://./test/fixtures/sandbox-probe";
const NOTICE = "waiting for slow to stop: requests in progress get up to 10 s to finish";
let home: string;
let env: Record<string, string>;
let silent: Server;
const held: Socket[] = [];

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-stop-wait-"));
  env = cliEnv(home);
  // Takes connections and never answers: the probe's http_get waits on it (3 s, its own timeout).
  silent = createServer((socket) => held.push(socket));
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
});

afterAll(() => {
  runCli(env, ["rm", "slow"]);
  runCli(env, ["rm", "lingers"]);
  for (const socket of held) socket.destroy();
  silent.close();
  rmSync(home, { recursive: true, force: true });
});

const notices = (stderr: string) => stderr.split("\n").filter((line) => line.includes(NOTICE));

test("stop with a call in flight says once what it waits for; without one it says nothing of it", async () => {
  const url = runCliOk(env, ["run", PROBE, "--name", "slow"]).stdout.trim();
  const client = new Client({ name: "stop-wait", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const port = (silent.address() as { port: number }).port;
  const call = client
    .callTool({ name: "http_get", arguments: { url: `http://127.0.0.1:${port}/` } })
    .catch((err: unknown) => err);
  const deadline = Date.now() + 10_000;
  while (held.length === 0 && Date.now() < deadline) await Bun.sleep(50);
  expect(held.length).toBe(1);
  // The call's answer waits in the socket's buffer while this process waits for the stop.
  const stopped = runCliOk(env, ["stop", "slow"]);
  expect(notices(stopped.stderr)).toHaveLength(1);
  await call;
  await client.close().catch(() => {});

  runCliOk(env, ["start", "slow"]);
  const quiet = runCliOk(env, ["stop", "slow"]);
  expect(notices(quiet.stderr)).toHaveLength(0);
});

test("a stop held up by a server that stays after its input closed does not say requests are in progress", () => {
  runCliOk(env, ["run", "npx://./test/fixtures/unruly-stdio", "--name", "lingers", "--", "slow-to-stop"]);
  const stopped = runCliOk(env, ["stop", "lingers"]);
  expect(stopped.stderr).not.toContain("requests in progress");
  expect(stopped.stderr).toContain("waiting for lingers to stop: its MCP server is given a few seconds to exit");
});

test("a stop with a call in flight does not tell the AI clients the workload runs", async () => {
  // The draining status is a status with state running: it was written as a start's, with what a start
  // does after it (the AI clients' entries written again, `X is in the AI clients ...` in its log).
  mkdirSync(join(home, ".config", "Claude"), { recursive: true });
  expect(runCli(env, ["client", "register", "claude-desktop"]).code).toBe(0);
  const url = runCliOk(env, ["run", PROBE, "--name", "told"]).stdout.trim();
  const told = () =>
    runCliOk(env, ["logs", "told", "--proxy"])
      .stdout.split("\n")
      .filter((line) => line.includes("told is in the AI clients following group")).length;
  const before = told();
  const client = new Client({ name: "stop-told", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const port = (silent.address() as { port: number }).port;
  const waiting = held.length;
  const call = client
    .callTool({ name: "http_get", arguments: { url: `http://127.0.0.1:${port}/` } })
    .catch((err: unknown) => err);
  const deadline = Date.now() + 10_000;
  while (held.length === waiting && Date.now() < deadline) await Bun.sleep(50);
  expect(held.length).toBe(waiting + 1);
  const stopped = runCliOk(env, ["stop", "told"]);
  expect(notices(stopped.stderr.replaceAll("told", "slow"))).toHaveLength(1);
  await call;
  await client.close().catch(() => {});
  expect(told()).toBe(before);
  runCli(env, ["rm", "told"]);
});
