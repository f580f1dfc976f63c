/**
 * A background remote workload whose OAuth login waits for the user's browser, stopped (or
 * removed) meanwhile: the command returns at once, the login stops waiting (its callback port
 * is free again), and the `run` that showed the login URL says what happened. The remote is
 * `mcpmgr proxy --oidc-*` in front of the conformance fixture, the authorization server the real
 * oidc-provider; nobody logs in.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import { portInUse } from "../../src/proxy/serve.ts";
import { CALLBACK_PORTS } from "../support/auth-server.ts";
import { type ProtectedRemote, publicLogin, startProtectedRemote, until } from "../support/protected-remote.ts";
import { CLI_ENTRY, isAlive, REPO_ROOT } from "../support/processes.ts";

setDefaultTimeout(120_000);

let setup: ProtectedRemote;

beforeAll(async () => {
  setup = await startProtectedRemote("mcpmgr-login-cancelled-");
}, 60_000);

afterAll(async () => {
  await setup?.stop();
});

test.each([["stop"], ["rm"]])(
  "%s of a workload whose OAuth login waits for the browser returns at once and ends the login",
  async (command) => {
    const home = await mkdtemp(join(setup.scratch, "home-"));
    const env = { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home };
    const name = `waiting-${command}`;
    const callbackPort = CALLBACK_PORTS[2];
    const run = Bun.spawn(
      [process.execPath, CLI_ENTRY, "run", setup.remote.url, "--name", name, ...publicLogin(setup, callbackPort, "5m")],
      { cwd: REPO_ROOT, env, stdout: "pipe", stderr: "pipe" },
    );
    let stderr = "";
    void (async () => {
      for await (const chunk of run.stderr) stderr += new TextDecoder().decode(chunk);
    })();
    // The login URL is shown: the supervisor's callback server waits for the browser.
    await until(() => (stderr.includes("/auth?") ? true : undefined), "the login URL", 60_000);
    expect(portInUse(callbackPort, "127.0.0.1")).toBe(true);
    const status = JSON.parse(await Bun.file(join(home, "state/workloads", name, "status.json")).text()) as {
      pid: number;
    };
    const before = performance.now();
    const stopped = Bun.spawnSync([process.execPath, CLI_ENTRY, command, name], { cwd: REPO_ROOT, env });
    expect(stopped.exitCode).toBe(0);
    // Without an abortable start, it waited for the 15 s SIGKILL (or the login's 5 minutes).
    expect(performance.now() - before).toBeLessThan(6_000);
    // Gone once reaped: until `run` (its parent, still waiting) reaps it, an exited supervisor is a zombie.
    await until(() => (isAlive(status.pid) ? undefined : true), "the supervisor's exit", 5_000);
    expect(portInUse(callbackPort, "127.0.0.1")).toBe(false);
    expect(await run.exited).toBe(1);
    // rm stops the workload, then removes its record: the waiting run reads one or the other, both true.
    expect(stderr).toMatch(
      command === "rm"
        ? new RegExp(`${name} was (stopped|removed) while it was starting`)
        : new RegExp(`${name} was stopped while it was starting`),
    );
    const list = Bun.spawnSync([process.execPath, CLI_ENTRY, "list", "--format", "json"], { cwd: REPO_ROOT, env });
    const rows = JSON.parse(list.stdout.toString()) as { name: string; status: string }[];
    expect(rows).toEqual(command === "stop" ? [expect.objectContaining({ name, status: "stopped" })] : []);
    if (command === "stop") Bun.spawnSync([process.execPath, CLI_ENTRY, "rm", name], { cwd: REPO_ROOT, env });
  },
);
