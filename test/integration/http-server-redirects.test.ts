/**
 * The supervisor's wait for an HTTP server it started to answer, in front of a real server that
 * redirects every request: before, fetch followed the redirect (to another origin, or round a
 * loop until it gave up), each try failed, and after 60 s the run said the server did not listen
 * and to check MCP_PORT. Now it fails at once, naming where the server sends its clients.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CLI_ENTRY, REPO_ROOT, spawnUntil } from "../support/processes.ts";

setDefaultTimeout(60_000);

/** `run --foreground` of the redirecting server in `mode`: how long it took to fail, and what it said. */
async function runRedirecting(mode: string): Promise<{ code: number; stderr: string; seconds: number }> {
  const started = performance.now();
  const run = Bun.spawn(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      "--foreground",
      "npx://./test/fixtures/redirecting-http",
      "--name",
      `redirects-${mode}`,
      "--transport",
      "streamable-http",
      "--permission-profile",
      "network",
      "--",
      mode,
    ],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, NO_COLOR: "1", MCPMGR_RUNTIME: "process" },
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  const ended = await Promise.race([run.exited.then(() => true), Bun.sleep(30_000).then(() => false)]);
  if (!ended) run.kill("SIGKILL");
  return {
    code: await run.exited,
    stderr: await new Response(run.stderr).text(),
    seconds: (performance.now() - started) / 1000,
  };
}

test("a server that redirects to another origin fails the start at once, naming where it sends its clients", async () => {
  const { code, stderr, seconds } = await runRedirecting("elsewhere");
  expect(code).not.toBe(0);
  expect(seconds).toBeLessThan(25);
  expect(stderr).toContain("redirects to http://login.invalid/mcp, another origin, which mcpmgr does not follow");
  expect(stderr).toContain("the server must answer MCP at /mcp on its own port");
  expect(stderr).not.toContain("MCP_PORT");
  expect(stderr).not.toContain("    at ");
});

test("a server that redirects to itself in a loop fails the start at once", async () => {
  const { code, stderr, seconds } = await runRedirecting("loop");
  expect(code).not.toBe(0);
  expect(seconds).toBeLessThan(25);
  expect(stderr).toContain("redirects in a loop (5 redirects followed, the last to http://127.0.0.1:");
  expect(stderr).not.toContain("MCP_PORT");
});

test("a server that sends a browser's GET to another origin with a 302, and answers MCP's POST, starts and serves", async () => {
  // A 302 turns the POST into a GET: only a 307/308 would send MCP's requests elsewhere too.
  const run = await spawnUntil(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      "--foreground",
      "npx://./test/fixtures/redirecting-http",
      "--name",
      "redirects-browsers-elsewhere",
      "--transport",
      "streamable-http",
      "--permission-profile",
      "network",
      "--",
      "browsers-elsewhere",
    ],
    /^(http:\/\/\S+)$/m,
    { env: { MCPMGR_RUNTIME: "process" }, timeoutMs: 45_000 },
  );
  try {
    const client = new Client({ name: "http-server-redirects", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(run.match[1] as string)));
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(["here"]);
    await client.close();
    expect(run.output()).not.toContain("another origin");
  } finally {
    await run.stop();
  }
});
