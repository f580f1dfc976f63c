/**
 * The user's one Cedar evaluator (middleware/cedar-evaluator.ts) behind real background workloads:
 * shared by workloads with different policies, each decided on its own; the only process that loads
 * the Cedar engine; started again after a `kill -9`, with nothing allowed that the policies deny;
 * unmoved by garbage on its socket; gone once the last workload stops; refusing a folder others reach.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { createConnection, type Socket } from "node:net";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ANSWER_TIMEOUT_MS, evaluatorAccess, PolicySetClient } from "../../src/middleware/cedar-client.ts";
import { evaluatorSocketName } from "../../src/state/cedar-socket-path.ts";
import { createTestGroup, PROBE_FIXTURE, type TestGroup, until } from "../support/gateway-group.ts";
import { CLI_ENTRY, cedarEvaluatorPids, isAlive, REPO_ROOT } from "../support/processes.ts";

setDefaultTimeout(60_000);

let group: TestGroup;
let pkg: string;
let socketPath: string;
const clients: Client[] = [];
const policies: Record<string, string[]> = {
  // Only echo may be called.
  "only-echo": ['permit(principal, action == Action::"call_tool", resource == Tool::"echo");'],
  // Everything but echo and sleep.
  "no-echo": [
    "permit(principal, action, resource);",
    'forbid(principal, action, resource == Tool::"echo");',
    'forbid(principal, action, resource == Tool::"sleep");',
  ],
};

beforeAll(async () => {
  group = await createTestGroup();
  pkg = await group.packageOf(PROBE_FIXTURE);
  socketPath = join(group.home, "run", "cedar", evaluatorSocketName());
  for (const [name, rules] of Object.entries(policies))
    await writeFile(
      join(group.home, `${name}.json`),
      JSON.stringify({ version: "1.0", type: "cedarv1", cedar: { policies: rules } }),
    );
});
afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
  await group?.cleanup();
});

/** A background workload of the probe server behind `policy`'s file; its URL. */
function startWorkload(name: string, policy: string): string {
  const args = ["run", pkg, "--name", name, "--permission-profile", "none"];
  const started = group.mcpmgr(...args, "--authz-config", join(group.home, `${policy}.json`));
  if (started.code !== 0) throw new Error(`mcpmgr run ${name} failed:\n${started.stderr}`);
  return started.stdout.trim();
}

async function connect(url: string): Promise<Client> {
  const client = new Client({ name: "cedar-evaluator-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  clients.push(client);
  return client;
}

async function toolNames(client: Client): Promise<string[]> {
  return (await client.listTools()).tools.map((tool) => tool.name).sort();
}

/** "ok" when the call went through, "forbidden" when Cedar refused it. */
async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<"ok" | "forbidden"> {
  try {
    await client.callTool({ name, arguments: args });
    return "ok";
  } catch (err) {
    if (/Forbidden/.test(String(err))) return "forbidden";
    throw err;
  }
}

/** The pids of evaluators serving this test's home (or `socket`), by their command line. */
function evaluators(socket = socketPath): number[] {
  return cedarEvaluatorPids((served) => served === socket);
}

/**
 * Whether a process instantiated WebAssembly: JavaScriptCore reserves 4 GiB and a guard region,
 * inaccessible, for each wasm memory; a Bun process without wasm has no such mapping.
 */
function holdsWasmMemory(pid: number): boolean {
  return readFileSync(`/proc/${pid}/maps`, "utf8")
    .split("\n")
    .some((line) => {
      const [range, perms] = line.split(" ");
      if (range === undefined || perms !== "---p") return false;
      const [start, end] = range.split("-").map((hex) => BigInt(`0x${hex}`)) as [bigint, bigint];
      return end - start > 4n * 2n ** 30n;
    });
}

function supervisorOf(name: string): number {
  const status = JSON.parse(readFileSync(join(group.home, "state", "workloads", name, "status.json"), "utf8"));
  return status.pid as number;
}

/** Connects to the evaluator's socket, lets `speak` write, and resolves with all it answered once the connection closes. */
function talk(speak: (socket: Socket) => void): Promise<string> {
  return new Promise<string>((resolve) => {
    const socket = createConnection(socketPath);
    let got = "";
    socket.on("data", (chunk) => {
      got += chunk.toString();
    });
    socket.on("error", () => {});
    socket.on("close", () => resolve(got));
    socket.on("connect", () => speak(socket));
  });
}

let a: Client;
let b: Client;

test("two workloads with different policies share one evaluator, each decided on its own; only the evaluator loads the engine", async () => {
  a = await connect(startWorkload("cedar-a", "only-echo"));
  b = await connect(startWorkload("cedar-b", "no-echo"));
  expect(await toolNames(a)).toEqual(["echo"]);
  const bTools = await toolNames(b);
  expect(bTools).toContain("stats");
  expect(bTools).not.toContain("echo");
  expect(bTools).not.toContain("sleep");
  expect(await call(a, "echo", { text: "hi" })).toBe("ok");
  expect(await call(a, "stats")).toBe("forbidden");
  expect(await call(b, "echo", { text: "hi" })).toBe("forbidden");
  expect(await call(b, "stats")).toBe("ok");

  const pids = evaluators();
  expect(pids).toHaveLength(1);
  expect(holdsWasmMemory(pids[0] as number)).toBe(true);
  for (const name of ["cedar-a", "cedar-b"]) expect(holdsWasmMemory(supervisorOf(name))).toBe(false);
});

test("garbage on the evaluator's socket ends that connection only: the evaluator and the workloads' decisions stay", async () => {
  const [pid] = evaluators();
  const exchange = (bytes: string | Uint8Array) =>
    talk((socket) => {
      socket.write(bytes);
      // A well-behaved frame after the garbage: never answered, the connection is gone.
      socket.write(`${JSON.stringify({ op: "decide", n: 9, requests: [] })}\n`);
      setTimeout(() => socket.end(), 500);
    });
  expect(await exchange("not json at all\n")).toBe("");
  expect(await exchange(`${"[".repeat(100_000)}\n`)).toBe("");
  expect(await exchange(`${JSON.stringify({ op: "decide", n: 1, requests: [{ subject: 1 }] })}\n`)).toBe("");
  expect(await exchange(new Uint8Array(41 * 2 ** 20).fill(120))).toBe("");
  // A frame that asks before loading a set is answered with an error, not a decision.
  const early = await exchange(`${JSON.stringify({ op: "decide", n: 1, requests: [] })}\n`);
  expect(JSON.parse(early.split("\n")[0] as string)).toEqual({
    n: 1,
    error: "no policy set loaded on this connection",
  });

  expect(evaluators()).toEqual([pid as number]);
  // Questions no workload asked before: the evaluator is asked them now.
  expect(await call(b, "roots")).toBe("ok");
  expect(await call(a, "roots")).toBe("forbidden");
});

/** A policy nested about a thousand levels deep: the engine's parser overflows its stack (a WebAssembly trap). */
const deepPolicy = `permit(principal, action, resource) when { ${"(".repeat(1000)}1${")".repeat(1000)} == 1 };`;

test("a load the engine traps on is refused and the evaluator exits; the workloads' next questions go to a clean one", async () => {
  const [old] = evaluators();
  const answer = await talk((socket) =>
    socket.write(`${JSON.stringify({ op: "load", n: 1, policies: deepPolicy, entities: [], check: true })}\n`),
  );
  const frame = JSON.parse(answer.split("\n")[0] as string);
  expect(frame).toMatchObject({ n: 1, invalid: true });
  expect(frame.error).toContain("the Cedar engine failed on the policies");
  expect(await until(() => !isAlive(old as number), 10_000)).toBe(true);
  // Every question after the trap would trap too in that instance: a new evaluator answers them.
  expect(await until(async () => (await call(b, "raw_request")) === "ok", 15_000)).toBe(true);
  expect(await call(a, "big", { bytes: 1 })).toBe("forbidden");
  const now = evaluators();
  expect(now).toHaveLength(1);
  expect(now[0]).not.toBe(old as number);
});

test("policies the engine traps on are an option error of the command, not an unexpected one", async () => {
  const file = join(group.home, "deep.json");
  await writeFile(file, JSON.stringify({ version: "1.0", type: "cedarv1", cedar: { policies: [deepPolicy] } }));
  const run = group.mcpmgr("run", "--foreground", "http://127.0.0.1:9/mcp", "--authz-config", file);
  expect(run.stderr).toContain(`--authz-config ${file}: the Cedar engine failed on the policies`);
  expect(run.code).toBe(2);
  expect(run.stderr).not.toContain("unexpected error");
});

test("kill -9 of the evaluator: the next requests are decided by a new one, and nothing the policies deny is allowed", async () => {
  const [old] = evaluators();
  process.kill(old as number, "SIGKILL");
  expect(await until(() => !isAlive(old as number), 10_000)).toBe(true);
  // Denied (by the policies, or for want of an evaluator) every time, never allowed.
  for (let i = 0; i < 3; i++) expect(await call(b, "sleep", { ms: 1 })).toBe("forbidden");
  expect(await call(a, "progress")).toBe("forbidden");
  // Allowed again once the client has started a new evaluator and loaded its set there.
  expect(await until(async () => (await call(b, "log_all")) === "ok", 15_000)).toBe(true);
  expect(await call(a, "echo", { text: "again" })).toBe("ok");
  const now = evaluators();
  expect(now).toHaveLength(1);
  expect(now[0]).not.toBe(old as number);
});

test("while no evaluator can be started, what it must decide is denied and the workload's log says so; then decided again", async () => {
  const folder = join(group.home, "run", "cedar");
  const [old] = evaluators();
  // A folder others could reach: the client will neither start an evaluator there nor connect.
  chmodSync(folder, 0o755);
  try {
    process.kill(old as number, "SIGKILL");
    expect(await until(() => !isAlive(old as number), 10_000)).toBe(true);
    for (let i = 0; i < 3; i++) expect(await call(b, "notify_list_changed")).toBe("forbidden");
    expect(evaluators()).toEqual([]);
  } finally {
    chmodSync(folder, 0o700);
  }
  expect(await until(async () => (await call(b, "notify_list_changed")) === "ok", 15_000)).toBe(true);
  const log = group.mcpmgr("logs", "cedar-b", "--proxy").stdout;
  expect(log).toContain("the Cedar evaluator could not decide");
  expect(log).toContain("is not private");
  expect(log).toContain("the Cedar evaluator answers again");
});

test("the evaluator exits once the last workload with policies stops", async () => {
  expect(evaluators()).toHaveLength(1);
  for (const client of clients.splice(0)) await client.close();
  for (const name of ["cedar-a", "cedar-b"]) expect(group.mcpmgr("stop", name).code).toBe(0);
  expect(await until(() => evaluators().length === 0, 20_000)).toBe(true);
});

test("the evaluator refuses a socket folder other users can reach; a workload will not use one", async () => {
  const open = join(group.home, "open-folder");
  mkdirSync(open, { mode: 0o755 });
  chmodSync(open, 0o755);
  const refused = Bun.spawnSync([process.execPath, CLI_ENTRY, "__cedar-evaluator", join(open, "evaluator.sock")], {
    cwd: REPO_ROOT,
    env: { ...process.env, NO_COLOR: "1" },
    timeout: 30_000,
  });
  expect(refused.exitCode).toBe(1);
  expect(refused.stderr.toString()).toContain("is not private");
  expect(readdirSync(open)).toEqual([]);

  chmodSync(join(group.home, "run", "cedar"), 0o755);
  const started = group.mcpmgr(
    "run",
    pkg,
    "--name",
    "cedar-c",
    "--permission-profile",
    "none",
    "--authz-config",
    join(group.home, "only-echo.json"),
  );
  expect(started.code).not.toBe(0);
  expect(started.stderr).toContain("is not private");
  expect(evaluators()).toEqual([]);
  chmodSync(join(group.home, "run", "cedar"), 0o700);
});

test("clients that start the evaluator at the same moment end with one evaluator, and each its own decisions", async () => {
  const home = join(group.home, "race");
  const access = evaluatorAccess({ ...process.env, MCPMGR_HOME: home });
  const socket = join(home, "run", "cedar", evaluatorSocketName());
  expect(access.socketPath).toBe(socket);
  const opened = await Promise.all(
    Array.from({ length: 4 }, async (_, i) => {
      const client = new PolicySetClient(
        { policies: `permit(principal, action, resource == Tool::"tool-${i}");`, entities: [] },
        access,
      );
      await client.open();
      return client;
    }),
  );
  // Each client started one (none answered yet); those that lost the lock leave.
  expect(await until(() => evaluators(socket).length === 1, 10_000)).toBe(true);
  for (const [i, client] of opened.entries()) {
    const ask = (tool: string) =>
      client.decide({ subject: "local", action: "call_tool", type: "Tool", id: tool, context: {}, strict: false });
    expect((await ask(`tool-${i}`)).allowed).toBe(true);
    expect((await ask(`tool-${(i + 1) % 4}`)).allowed).toBe(false);
  }
  expect(evaluators(socket)).toHaveLength(1);
  for (const client of opened) client.close();
  expect(await until(() => evaluators(socket).length === 0, 20_000)).toBe(true);
});

test("a stuck evaluator (stopped, not dead): every question is denied within the answer's timeout, then decided once it resumes", async () => {
  const access = evaluatorAccess({ ...process.env, MCPMGR_HOME: join(group.home, "stuck") });
  const client = new PolicySetClient(
    { policies: 'permit(principal, action, resource == Tool::"echo");', entities: [] },
    access,
  );
  await client.open();
  const [pid] = evaluators(access.socketPath);
  expect(pid).toBeDefined();
  const question = (id: string) => ({
    subject: "local",
    action: "call_tool",
    type: "Tool",
    id,
    context: {},
    strict: false,
  });
  process.kill(pid as number, "SIGSTOP");
  try {
    // The first waits out its answer on the open connection; the second connects again (the kernel
    // accepts for a stopped process) and must not wait out the load's longer timeout.
    for (const id of ["echo", "echo-again"]) {
      const asked = Date.now();
      const decision = await client.decide(question(id));
      expect(decision.allowed).toBe(false);
      expect(decision.reason).toContain("the Cedar evaluator could not decide");
      expect(Date.now() - asked).toBeLessThan(ANSWER_TIMEOUT_MS + 2_000);
    }
  } finally {
    process.kill(pid as number, "SIGCONT");
  }
  expect(await until(async () => (await client.decide(question("echo"))).allowed, 30_000)).toBe(true);
  expect((await client.decide(question("other"))).allowed).toBe(false);
  client.close();
});
