/**
 * `mcpmgr proxy stdio` never follows a redirect of the remote (review finding M6): fetch would
 * send the request again, mcpmgr's bearer token and injected headers included, to another
 * path of the remote or to another origin. Real HTTP servers redirect; they record every
 * request that reaches them. The relay reports the redirect to the client instead.
 */
import { afterAll, afterEach, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Server } from "bun";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";
import { statelessMeta } from "../support/stateless-request.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

interface Seen {
  readonly method: string;
  readonly path: string;
  readonly authorization: string | null;
  readonly apiKey: string | null;
}

let home: string;
/** Where redirects point on another origin: nothing of mcpmgr's may reach it. */
let elsewhere: Server<unknown>;
/** The "remote": its MCP endpoint redirects, as the test sets. */
let remote: Server<unknown>;
let seenElsewhere: Seen[] = [];
let seenRemote: Seen[] = [];
let redirect: { status: number; location: () => string } = { status: 308, location: () => "/admin/delete-everything" };

function record(into: Seen[], req: Request): void {
  into.push({
    method: req.method,
    path: new URL(req.url).pathname,
    authorization: req.headers.get("authorization"),
    apiKey: req.headers.get("x-api-key"),
  });
}

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), "mcpmgr-proxy-stdio-redirects-"));
  elsewhere = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      record(seenElsewhere, req);
      return Response.json({ jsonrpc: "2.0", id: 1, result: { hijacked: true } });
    },
  });
  remote = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      record(seenRemote, req);
      if (new URL(req.url).pathname !== "/mcp")
        return Response.json({ jsonrpc: "2.0", id: 1, result: { hijacked: true } });
      return new Response(null, { status: redirect.status, headers: { location: redirect.location() } });
    },
  });
});

afterEach(() => {
  seenElsewhere = [];
  seenRemote = [];
});

afterAll(async () => {
  elsewhere?.stop(true);
  remote?.stop(true);
  await rm(home, { recursive: true, force: true });
});

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "redirects", version: "1" } },
};
/** A 2026-07-28 request: sent statelessly, by another code path than the SDK's transport. */
const statelessList = {
  jsonrpc: "2.0",
  id: 7,
  method: "tools/list",
  params: { _meta: statelessMeta({}, { name: "redirects", version: "1" }) },
};

const credentials = [
  "--remote-auth-bearer-token",
  "tok-SECRET",
  "--remote-forward-headers",
  "X-Api-Key=sk-live-SECRET",
];

/** proxy stdio with `messages` piped in; its answers (by id) and stderr once it exits. */
async function relay(messages: readonly object[], args: readonly string[]) {
  const proc = Bun.spawn([process.execPath, CLI_ENTRY, "proxy", "stdio", `${remote.url.origin}/mcp`, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home },
    stdin: new Blob([`${messages.map((m) => JSON.stringify(m)).join("\n")}\n`]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stdout, stderr] = await Promise.all([
    proc.exited,
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
  ]);
  const answers = new Map<unknown, { result?: unknown; error?: { message: string } }>();
  for (const line of stdout.trim().split("\n").filter(Boolean)) {
    const message = JSON.parse(line) as { id?: unknown; result?: unknown; error?: { message: string } };
    answers.set(message.id, message);
  }
  return { code, answers, stderr };
}

test("a same-origin redirect to another path: not followed, the token and headers stay on the MCP endpoint", async () => {
  redirect = { status: 308, location: () => "/admin/delete-everything" };
  const { answers, stderr } = await relay([initialize], credentials);
  expect(seenRemote.filter((seen) => seen.path !== "/mcp")).toEqual([]);
  // The endpoint itself got the credentials (that is where they belong).
  expect(seenRemote[0]).toMatchObject({ method: "POST", path: "/mcp", authorization: "Bearer tok-SECRET" });
  const error = answers.get(1)?.error?.message ?? "";
  expect(error).toContain("redirect (HTTP 308 to");
  expect(error).toContain("/admin/delete-everything");
  expect(answers.get(1)?.result).toBeUndefined();
  expect(stderr).not.toContain("tok-SECRET");
}, 30_000);

test("a redirect to another origin: nothing reaches it, not even the injected headers", async () => {
  redirect = { status: 307, location: () => `${elsewhere.url.origin}/collect` };
  const { answers } = await relay([initialize], credentials);
  expect(seenElsewhere).toEqual([]);
  expect(answers.get(1)?.error?.message).toContain(`${elsewhere.url.origin}/collect`);
}, 30_000);

test("a 2026-07-28 request, sent statelessly, is not redirected either", async () => {
  redirect = { status: 302, location: () => `${elsewhere.url.origin}/collect` };
  const { answers } = await relay([statelessList], credentials);
  expect(seenElsewhere).toEqual([]);
  expect(seenRemote.map((seen) => seen.path)).toEqual(["/mcp"]);
  expect(answers.get(7)?.error?.message).toContain("redirect (HTTP 302");
}, 30_000);

test("without credentials of mcpmgr's the relay does not follow redirects either", async () => {
  redirect = { status: 301, location: () => `${elsewhere.url.origin}/collect` };
  const { answers } = await relay([initialize], []);
  expect(seenElsewhere).toEqual([]);
  expect(answers.get(1)?.error?.message).toContain("redirect (HTTP 301");
}, 30_000);
