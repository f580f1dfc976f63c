/**
 * mcpmgr on a full disk: MCPMGR_HOME on a small tmpfs (mounting one needs root, as CI runs), filled
 * up while a real supervisor serves a chatty stdio server. The server's log that cannot be written
 * must not end the supervisor (it kept serving before and after), the proxy log says once why lines
 * are missing, and the log goes on once there is space again. A `secret set` refused for want of
 * space says so in one line and leaves no lock behind to hold off the next one; a command that must
 * take the workloads' lock names the full disk in its hint.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { closeSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { resolvePaths } from "../../src/state/paths.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";
import { cliEnv, expectOneLineError, runCli, runCliOk } from "../support/cli-home.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine.
setDefaultTimeout(90_000);

const PROBE = "npx://./test/fixtures/sandbox-probe";
let root: string;
let home: string;
let env: Record<string, string>;
let store: WorkloadStore;
const filler = () => join(home, "filler");

/** Fills the filesystem of MCPMGR_HOME to the last byte. */
function fillDisk(): void {
  const fd = openSync(filler(), "a");
  const chunk = Buffer.alloc(4096, 120);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (err) {
    expect((err as NodeJS.ErrnoException).code).toBe("ENOSPC");
  } finally {
    closeSync(fd);
  }
}
const freeDisk = () => rmSync(filler(), { force: true });

async function callTool(url: string, name: string, args: Record<string, unknown> = {}): Promise<void> {
  const client = new Client({ name: "full-disk-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    const result = await client.callTool({ name, arguments: args });
    expect(result.isError).toBeFalsy();
  } finally {
    await client.close();
  }
}
const logLines = (url: string, from: number, count: number) => callTool(url, "log_lines", { from, count });

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "mcpmgr-full-disk-"));
  home = join(root, "mcpmgr");
  await mkdir(home);
  const mounted = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=512k,mode=0700", "tmpfs", home]);
  if (mounted.exitCode !== 0) throw new Error(`a tmpfs (root only) is needed: ${mounted.stderr.toString()}`);
  env = { ...cliEnv(root, home), MCPMGR_SECRETS_PASSWORD: "full-disk-test" };
  store = new WorkloadStore(resolvePaths({ MCPMGR_HOME: home }));
});

afterAll(async () => {
  freeDisk();
  runCli(env, ["rm", "chatty"]);
  Bun.spawnSync(["umount", home]);
  await rm(root, { recursive: true, force: true });
});

test("a server log that cannot be written leaves the workload serving; the log goes on once there is space", async () => {
  const url = runCliOk(env, ["run", PROBE, "--name", "chatty"]).stdout.trim();
  await logLines(url, 1, 3);
  fillDisk();
  // Far more than the last free bytes of the log's page: most of it cannot be written.
  await logLines(url, 4, 2000);
  await logLines(url, 2004, 2000);
  const listed = runCliOk(env, ["list"]).stdout;
  expect(listed).toMatch(/chatty\s+running/);
  const proxyLog = readFileSync(store.logFiles("chatty", "proxy").path, "utf8");
  const warnings = proxyLog.split("\n").filter((line) => line.includes("no space left on device"));
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toContain(`cannot write ${store.logPath("chatty")}`);

  freeDisk();
  await logLines(url, 9001, 2);
  const deadline = Date.now() + 10_000;
  while (!readFileSync(store.logPath("chatty"), "utf8").includes("chatty line 009002") && Date.now() < deadline)
    await Bun.sleep(50);
  expect(readFileSync(store.logPath("chatty"), "utf8")).toMatch(/^chatty line 009001 x+\nchatty line 009002 x+\n/m);
  expect(runCliOk(env, ["list"]).stdout).toMatch(/chatty\s+running/);
});

test("a server that crashes on a full disk is restarted; its status is recorded once there is space", async () => {
  const url = runCliOk(env, ["list"]).stdout.match(/chatty\s+running\s+(\S+)/)?.[1] ?? "";
  expect(url).toStartWith("http://127.0.0.1:");
  const supervisor = (await store.readStatus("chatty"))?.pid;
  expect(supervisor).toBeNumber();
  fillDisk();
  try {
    await callTool(url, "crash");
    // Restarted (after a backoff of about a second) by the same supervisor, serving again, its status
    // not yet written.
    const deadline = Date.now() + 20_000;
    let served = false;
    while (!served && Date.now() < deadline) {
      await Bun.sleep(200);
      served = await logLines(url, 20_001, 1).then(
        () => true,
        () => false,
      );
    }
    expect(served).toBe(true);
    const proxyLog = readFileSync(store.logFiles("chatty", "proxy").path, "utf8");
    expect(proxyLog).toContain("chatty: its status cannot be recorded: cannot create the lock file");
  } finally {
    freeDisk();
  }
  const deadline = Date.now() + 20_000;
  while (
    !/chatty\s+running\s+\S+\s+\S+\s+\S+\s+\S+\s+1\b/.test(runCliOk(env, ["list"]).stdout) &&
    Date.now() < deadline
  )
    await Bun.sleep(200);
  expect(runCliOk(env, ["list"]).stdout).toMatch(/chatty\s+running\s+\S+\s+\S+\s+\S+\s+\S+\s+1\b/);
  expect((await store.readStatus("chatty"))?.pid).toBe(supervisor);
});

test("an audit log on a full disk drops lines, says so once, and is written again once there is space", async () => {
  const logFile = join(home, "audit.jsonl");
  const config = join(root, "audit.json");
  await writeFile(config, JSON.stringify({ logFile, includeRequestData: true }));
  const url = runCliOk(env, ["run", PROBE, "--name", "audited", "--audit-config", config]).stdout.trim();
  const client = new Client({ name: "full-disk-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const call = (from: number) => client.callTool({ name: "log_lines", arguments: { from, count: 0 } });
  try {
    fillDisk();
    // More than the last free bytes take, in flushes of the buffer (every 200 ms or at 64 KiB).
    for (let i = 0; i < 600; i++) await call(i);
    await Bun.sleep(300);
    freeDisk();
    await call(777_777);
    const deadline = Date.now() + 10_000;
    while (!readFileSync(logFile, "utf8").includes('"from\\":777777') && Date.now() < deadline) await Bun.sleep(50);
    const lines = readFileSync(logFile, "utf8").split("\n");
    expect(lines.at(-1)).toBe("");
    for (const line of lines.slice(0, -1)) expect(() => JSON.parse(line)).not.toThrow();
    expect(lines.some((line) => line.includes('"from\\":777777'))).toBe(true);
    const warnings = readFileSync(store.logFiles("audited", "proxy").path, "utf8")
      .split("\n")
      .filter((line) => line.includes(`audit log ${logFile}: ENOSPC`));
    expect(warnings).toHaveLength(1);
  } finally {
    await client.close();
    freeDisk();
    runCli(env, ["rm", "audited"]);
  }
});

test("secret set on a full disk: one line naming it; the next one works at once when there is space", () => {
  fillDisk();
  try {
    const line = expectOneLineError(runCliWithStdin(["secret", "set", "token"], "value\n"), 1);
    expect(line).toContain("ENOSPC");
    expect(line).toContain("disk is full");
    // rm may first warn about AI client entries it cannot update on the full disk: the refusal is its last line.
    const removal = runCli(env, ["rm", "chatty"]);
    expect(removal.code).toBe(1);
    expect(removal.stderr).not.toContain("    at ");
    expect(removal.stderr.trim().split("\n").at(-1)).toContain(
      "(hint: the disk is full: free some space and try again)",
    );
  } finally {
    freeDisk();
  }
  const started = Date.now();
  expect(runCliWithStdin(["secret", "set", "token"], "value\n").code).toBe(0);
  expect(Date.now() - started).toBeLessThan(8_000);
});

function runCliWithStdin(args: readonly string[], stdin: string) {
  const result = Bun.spawnSync([process.execPath, join(import.meta.dir, "../../src/main.ts"), ...args], {
    env,
    stdin: Buffer.from(stdin),
    timeout: 60_000,
  });
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}
