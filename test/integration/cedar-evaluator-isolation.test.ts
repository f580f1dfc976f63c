/**
 * Who the Cedar evaluator's clients talk to, and who reaches the evaluator:
 * - past sun_path's 107 bytes its socket lies in `TMP/mcpmgr-cedar-UID-HASH/`, outside mcpmgr's home:
 *   a server in the process sandbox given `-v` of the temporary folder must not see it there, or it
 *   could ask the evaluator (and, with the volume writable, put a socket of its own in its place that
 *   allows everything);
 * - an evaluator of another build (an older mcpmgr, still kept alive by its workloads) is never
 *   asked: its engine and decision code may be what the upgrade replaced;
 * - a process whose executable an upgrade replaced on disk still gets an evaluator when its own died;
 * - another user cannot stop a long home's evaluator by making its temporary folder first, when the
 *   user has a runtime folder of their own (XDG_RUNTIME_DIR).
 */
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import {
  chmodSync,
  chownSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { evaluatorAccess, PolicySetClient } from "../../src/middleware/cedar-client.ts";
import { privateSocketFolder } from "../../src/middleware/cedar-socket.ts";
import { evaluatorSocketName, evaluatorSocketPath } from "../../src/state/cedar-socket-path.ts";
import { resolvePaths } from "../../src/state/paths.ts";
import { until } from "../support/gateway-group.ts";
import { CLI_ENTRY, spawnUntil } from "../support/processes.ts";

setDefaultTimeout(60_000);

const PROBE = "npx://./test/fixtures/sandbox-probe";
const top = mkdtempSync(join(tmpdir(), "mcpmgr-cedar-iso-"));
const servers: Server[] = [];

afterAll(() => {
  for (const server of servers) server.close();
  rmSync(top, { recursive: true, force: true });
});

function request(id: string) {
  return { subject: "local", action: "call_tool", type: "Tool", id, context: {}, strict: false };
}

test("a sandboxed server with -v of the temporary folder cannot reach the evaluator's socket there", async () => {
  // Long enough that RUNTIME/cedar/evaluator-….sock passes 107 bytes: the socket goes to the temporary folder.
  const home = join(top, "a-home-whose-path-is-long-enough-to-push-the-socket-out-of-it-0123456789");
  const access = evaluatorAccess({ ...process.env, MCPMGR_HOME: home });
  expect(access.socketPath.startsWith(home)).toBe(false);
  writeFileSync(join(top, "visible.txt"), "visible");
  const policySet = new PolicySetClient({ policies: "permit(principal, action, resource);", entities: [] }, access);
  await policySet.open();
  const running = await spawnUntil(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      "--foreground",
      PROBE,
      "--permission-profile",
      "none",
      "-v",
      `${dirname(dirname(access.socketPath))}:/tmp/view`,
    ],
    /^(http:\/\/\S+)$/m,
    { env: { MCPMGR_HOME: home } },
  );
  try {
    const client = new Client({ name: "cedar-sandbox-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(running.match[1] as string)));
    const call = async (name: string, args: Record<string, unknown>) =>
      ((await client.callTool({ name, arguments: args })) as { content: { text: string }[] }).content[0]?.text;
    // The volume works (the test can fail) ...
    expect(await call("read_file", { path: join("/tmp/view", basename(top), "visible.txt") })).toBe("visible");
    // ... but the evaluator's socket is not in it: it answers mcpmgr's processes, not the server.
    const seen = join("/tmp/view", basename(dirname(access.socketPath)), basename(access.socketPath));
    expect(await call("unix_connect", { path: seen })).not.toBe("connected");
    expect((await policySet.decide(request("echo"))).allowed).toBe(true);
    await client.close();
  } finally {
    policySet.close();
    await running.stop();
  }
});

/** An evaluator that allows everything: what a client must never take for its own. */
async function allowingEvaluator(path: string): Promise<void> {
  const server = createServer((socket) => {
    let held = "";
    socket.on("data", (chunk) => {
      held += chunk.toString();
      for (let end = held.indexOf("\n"); end !== -1; end = held.indexOf("\n")) {
        const frame = JSON.parse(held.slice(0, end)) as { n: number; op: string; requests?: unknown[] };
        held = held.slice(end + 1);
        const none = { whole: false, attributes: [], nested: [] };
        const answer =
          frame.op === "load"
            ? { n: frame.n, facts: { everywhere: none, scoped: [] } }
            : { n: frame.n, decisions: (frame.requests ?? []).map(() => ({ allowed: true })) };
        socket.write(`${JSON.stringify(answer)}\n`);
      }
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(path, resolve));
}

test("an evaluator of another build answering in the same home is not asked: this build starts its own", async () => {
  const home = join(top, "upgraded");
  const access = evaluatorAccess({ ...process.env, MCPMGR_HOME: home });
  const folder = privateSocketFolder(access.socketPath);
  // The name of the build before this change (the wire's version alone), and of an older release.
  await allowingEvaluator(join(folder, "evaluator-v2.sock"));
  const older = { version: "0.0.1", commit: "0".repeat(40), executable: process.execPath, source: "" };
  await allowingEvaluator(join(folder, evaluatorSocketName(older)));
  expect(evaluatorSocketName(older)).not.toBe(basename(access.socketPath));
  const policySet = new PolicySetClient(
    {
      policies: 'permit(principal, action, resource);\nforbid(principal, action, resource == Tool::"echo");',
      entities: [],
    },
    access,
  );
  try {
    await policySet.open();
    const denied = await policySet.decide(request("echo"));
    expect(denied).toEqual({
      allowed: false,
      reason: "forbidden by policy1",
      forbidden: true,
      forbiddenBy: ["policy1"],
    });
    expect((await policySet.decide(request("other"))).allowed).toBe(true);
  } finally {
    policySet.close();
  }
});

/** Pids of evaluators whose socket lies under `under`, by their command line. */
function evaluatorsUnder(under: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const argv = (() => {
      try {
        return readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      } catch {
        return [];
      }
    })();
    const at = argv.indexOf("__cedar-evaluator");
    if (at !== -1 && argv[at + 1]?.startsWith(under)) pids.push(Number(entry));
  }
  return pids;
}

test("a run whose executable was replaced in place (an upgrade) still starts its evaluator after it died", async () => {
  const dir = join(top, "upgraded-in-place");
  mkdirSync(dir);
  const executable = join(dir, "bun");
  copyFileSync(process.execPath, executable);
  chmodSync(executable, 0o755);
  const home = join(dir, "home");
  const policies = join(dir, "authz.json");
  writeFileSync(
    policies,
    JSON.stringify({ version: "1.0", type: "cedarv1", cedar: { policies: ["permit(principal, action, resource);"] } }),
  );
  const running = await spawnUntil(
    [executable, CLI_ENTRY, "run", "--foreground", PROBE, "--permission-profile", "none", "--authz-config", policies],
    /^(http:\/\/\S+)$/m,
    { env: { MCPMGR_HOME: home } },
  );
  try {
    const client = new Client({ name: "cedar-upgrade-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(running.match[1] as string)));
    const call = async (name: string, args: Record<string, unknown>) =>
      ((await client.callTool({ name, arguments: args })) as { content: { text: string }[] }).content[0]?.text;
    expect(await call("read_file", { path: "/etc/hostname" })).toBeString();
    // The upgrade: a new file renamed over the executable, as package managers do.
    copyFileSync(process.execPath, `${executable}.new`);
    chmodSync(`${executable}.new`, 0o755);
    renameSync(`${executable}.new`, executable);
    const [pid] = evaluatorsUnder(dir);
    expect(pid).toBeDefined();
    process.kill(pid as number, "SIGKILL");
    // A question not remembered: asked of a new evaluator, which the running build must be able to start.
    const decided = async () => /^\d+$/.test((await call("fs_size", { path: "/" }).catch(String)) ?? "");
    expect(await until(decided, 15_000)).toBe(true);
    await client.close();
  } finally {
    await running.stop();
  }
});

test("a folder another user made first at the temporary place does not stop a home whose user has a runtime folder", async () => {
  const home = join(top, "another-home-whose-path-is-long-enough-to-push-the-socket-out-of-it-01234567");
  const runtime = join(top, "xdg-runtime");
  mkdirSync(runtime, { mode: 0o700 });
  // Where the socket goes without a runtime folder of the user's: another user (uid 65534) made it first.
  const squatted = dirname(evaluatorSocketPath(resolvePaths({ MCPMGR_HOME: home }), process.getuid?.(), {}));
  mkdirSync(squatted, { mode: 0o755 });
  chownSync(squatted, 65534, 65534);
  const access = evaluatorAccess({ ...process.env, MCPMGR_HOME: home, XDG_RUNTIME_DIR: runtime });
  const policySet = new PolicySetClient({ policies: "permit(principal, action, resource);", entities: [] }, access);
  try {
    await policySet.open();
    expect((await policySet.decide(request("echo"))).allowed).toBe(true);
    expect(dirname(dirname(access.socketPath))).toBe(runtime);
  } finally {
    policySet.close();
    rmSync(squatted, { recursive: true, force: true });
  }
});
