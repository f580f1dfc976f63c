/**
 * The Cedar evaluator's start and end, with real evaluator processes and real `mcpmgr run`s: one that
 * cannot start is a typed error with a hint (not an unexpected one), at the command and in the
 * workload's log; and a client that connects as an idle evaluator leaves is served by the evaluator
 * on the socket, never by one nobody else reaches (which left two running).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  type EvaluatorAccess,
  evaluatorAccess,
  PolicySetClient,
  startEvaluator,
} from "../../src/middleware/cedar-client.ts";
import { withLock } from "../../src/state/lock.ts";
import { createTestGroup, PROBE_FIXTURE, type TestGroup, until } from "../support/gateway-group.ts";
import { cedarEvaluatorPids } from "../support/processes.ts";

setDefaultTimeout(60_000);

let group: TestGroup;
let pkg: string;
let policyFile: string;
beforeAll(async () => {
  group = await createTestGroup();
  pkg = await group.packageOf(PROBE_FIXTURE);
  policyFile = join(group.home, "policies.json");
  await writeFile(
    policyFile,
    JSON.stringify({ version: "1.0", type: "cedarv1", cedar: { policies: ["permit(principal, action, resource);"] } }),
  );
});
afterAll(async () => {
  for (const pid of cedarEvaluatorPids((socket) => socket.startsWith(group.home))) process.kill(pid, "SIGKILL");
  await group?.cleanup();
});

const config = { policies: "permit(principal, action, resource);", entities: [] };
const question = { subject: "local", action: "call_tool", type: "Tool", id: "echo", context: {}, strict: false };

function accessOf(name: string, idleMs?: number): EvaluatorAccess {
  const env = { ...process.env, MCPMGR_HOME: join(group.home, name) };
  const access = evaluatorAccess(env);
  if (idleMs === undefined) return access;
  return { ...access, start: () => startEvaluator([access.socketPath, access.logPath, String(idleMs)], env) };
}

/** `mcpmgr run` of the probe server behind the policies, in the foreground or as a background workload. */
function runWorkload(name: string, background: boolean) {
  const args = ["run", pkg, "--name", name, "--permission-profile", "none", "--authz-config", policyFile];
  return group.mcpmgr(...args, ...(background ? [] : ["--foreground"]));
}

test("a socket folder nobody may write in (immutable, which stops root too): `run`, in the foreground or not, says why, with a hint", async () => {
  const folder = join(group.home, "run", "cedar");
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  Bun.spawnSync(["chattr", "+i", folder]);
  try {
    for (const background of [false, true]) {
      const name = background ? "cedar-bg" : "cedar-fg";
      const run = runWorkload(name, background);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(`the Cedar evaluator cannot make its socket in ${folder} (`);
      expect(run.stderr).toContain(`(hint: make ${folder} writable for you`);
      expect(run.stderr).not.toContain("unexpected error");
      group.mcpmgr("rm", name);
    }
  } finally {
    Bun.spawnSync(["chattr", "-i", folder]);
  }
});

test("a gateway with --authz-config whose evaluator cannot start (its folder immutable, or its socket's place taken): the same typed error, in the foreground and detached", async () => {
  const access = evaluatorAccess({ ...process.env, MCPMGR_HOME: group.home });
  const folder = dirname(access.socketPath);
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  const gateway = (detach: boolean) =>
    group.mcpmgr("gateway", "default", "--authz-config", policyFile, ...(detach ? ["--detach"] : []));
  Bun.spawnSync(["chattr", "+i", folder]);
  try {
    for (const detach of [false, true]) {
      const run = gateway(detach);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(`the Cedar evaluator cannot make its socket in ${folder} (`);
      expect(run.stderr).toContain(`(hint: make ${folder} writable for you`);
      expect(run.stderr).not.toContain("unexpected error");
    }
  } finally {
    Bun.spawnSync(["chattr", "-i", folder]);
  }
  rmSync(access.socketPath, { recursive: true, force: true });
  mkdirSync(access.socketPath, { recursive: true });
  try {
    for (const detach of [false, true]) {
      const run = gateway(detach);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain("the Cedar evaluator could not be started: it exited at once (exit code 1)");
      expect(run.stderr).toContain(`(hint: its log says why: ${access.logPath};`);
      expect(run.stderr).not.toContain("unexpected error");
    }
  } finally {
    rmSync(access.socketPath, { recursive: true, force: true });
  }
  // Nothing of a detached gateway that failed to start is kept.
  expect(group.mcpmgr("list", "--format", "json").stdout).not.toContain("gateway-default");
});

test("a running workload whose evaluator died and cannot be started again: its calls are denied, its log says why; then decided again", async () => {
  const url = runWorkload("cedar-running", true).stdout.trim();
  const client = new Client({ name: "cedar-lifecycle-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  // Each tool's decision is remembered once taken: a tool not called yet is asked of the evaluator.
  const call = (name: string) =>
    client.callTool({ name, arguments: {} }).then(
      () => "ok",
      (err: unknown) => (/Forbidden/.test(String(err)) ? "forbidden" : String(err)),
    );
  try {
    expect(await call("echo")).toBe("ok");
    const access = evaluatorAccess({ ...process.env, MCPMGR_HOME: group.home });
    const folder = dirname(access.socketPath);
    const [evaluator] = cedarEvaluatorPids((socket) => socket === access.socketPath);
    Bun.spawnSync(["chattr", "+i", folder]);
    try {
      process.kill(evaluator as number, "SIGKILL");
      expect(await until(() => cedarEvaluatorPids((socket) => socket === access.socketPath).length === 0)).toBe(true);
      // The first may meet the dead evaluator's connection; the next tries to start one.
      for (let i = 0; i < 2; i++) expect(await call("notify_list_changed")).toBe("forbidden");
    } finally {
      Bun.spawnSync(["chattr", "-i", folder]);
    }
    expect(await until(async () => (await call("notify_list_changed")) === "ok")).toBe(true);
    const log = group.mcpmgr("logs", "cedar-running", "--proxy").stdout;
    expect(log).toContain(
      `the Cedar evaluator could not decide (the Cedar evaluator cannot make its socket in ${folder} (`,
    );
    expect(log).toContain("the Cedar evaluator answers again");
  } finally {
    await client.close();
    group.mcpmgr("rm", "cedar-running");
  }
});

test("an evaluator that exits at once (its socket's place taken by a folder): `run` says so at once, pointing to the evaluator's log, which says why", async () => {
  const access = evaluatorAccess({ ...process.env, MCPMGR_HOME: group.home });
  // The evaluator of the workloads before has left (idle) and taken its socket with it.
  expect(await until(() => !existsSync(access.socketPath))).toBe(true);
  mkdirSync(access.socketPath, { recursive: true });
  try {
    const started = performance.now();
    const run = runWorkload("cedar-exits", false);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("the Cedar evaluator could not be started: it exited at once (exit code 1)");
    expect(run.stderr).toContain(`(hint: its log says why: ${access.logPath};`);
    expect(run.stderr).not.toContain("unexpected error");
    // Not the start's whole wait (5 s), with the run's own start around it.
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(readFileSync(access.logPath, "utf8")).toMatch(/cedar evaluator: could not start: .*EADDRINUSE/);
    group.mcpmgr("rm", "cedar-exits");
  } finally {
    rmSync(access.socketPath, { recursive: true, force: true });
  }
});

test("a client that connects while the idle evaluator waits for the lock to leave is served on the socket: one evaluator", async () => {
  const access = accessOf("late");
  const lock = join(dirname(access.socketPath), "evaluator.lock");
  const first = new PolicySetClient(config, access);
  await first.open();
  const [evaluator] = cedarEvaluatorPids((socket) => socket === access.socketPath);
  let late: PolicySetClient | undefined;
  // Held as a starting evaluator holds it: the idle one waits for it to leave, still listening.
  await withLock(lock, async () => {
    first.close();
    expect(await until(() => readFileSync(access.logPath, "utf8").includes("no client for a while; leaving"))).toBe(
      true,
    );
    late = new PolicySetClient(config, access);
    await late.open();
  });
  expect(await until(() => readFileSync(access.logPath, "utf8").includes("a client came meanwhile; staying"))).toBe(
    true,
  );
  expect(existsSync(access.socketPath)).toBe(true);
  // Whoever comes next reaches the same evaluator: no second one is started.
  const next = new PolicySetClient(config, access);
  await next.open();
  expect((await next.decide(question)).allowed).toBe(true);
  expect((await late?.decide(question))?.allowed).toBe(true);
  expect(cedarEvaluatorPids((socket) => socket === access.socketPath)).toEqual([evaluator as number]);
  next.close();
  late?.close();
  expect(await until(() => cedarEvaluatorPids((socket) => socket === access.socketPath).length === 0)).toBe(true);
});

test("clients coming just as an idle evaluator leaves, again and again: never two evaluators, never a failed start", async () => {
  const idleMs = 30;
  const access = accessOf("race", idleMs);
  const running = () => cedarEvaluatorPids((socket) => socket === access.socketPath);
  for (let round = 0; round < 60; round++) {
    const first = new PolicySetClient(config, access);
    await first.open();
    first.close();
    // Around the moment the evaluator gives up on clients: before, at and after it.
    await Bun.sleep(idleMs - 10 + (round % 8) * 3);
    const late = new PolicySetClient(config, access);
    await late.open();
    expect((await late.decide(question)).allowed).toBe(true);
    // The evaluator serving it is the one on the socket: whoever comes next is served by it too.
    expect(existsSync(access.socketPath)).toBe(true);
    const next = new PolicySetClient(config, access);
    await next.open();
    expect(await until(() => running().length === 1, 3_000)).toBe(true);
    next.close();
    late.close();
  }
  expect(await until(() => running().length === 0, 10_000)).toBe(true);
}, 120_000);
