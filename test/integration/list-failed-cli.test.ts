/**
 * `mcpmgr list` (text) says why a failed workload failed: its last error, under the table on
 * stderr (the JSON form has it as `lastError`), and how to run it again; a workload whose
 * supervisor died (a reboot) is stopped by `stop`, and one whose port another program took is
 * told how to free or move it.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv, runCli } from "../support/cli-home.ts";
import { isAlive } from "../support/processes.ts";
import { eventually } from "../support/raw-http.ts";

// Real processes: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

let home: string;
const mcpmgr = (...args: string[]) => runCli(cliEnv(home), args);

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-list-failed-"));
});

afterAll(() => {
  mcpmgr("rm", "lf");
  mcpmgr("rm", "lk");
  mcpmgr("rm", "lp");
  mcpmgr("rm", "lr");
  rmSync(home, { recursive: true, force: true });
});

test("a failed workload's last error is printed under the table, naming the workload", () => {
  const tokenFile = join(home, "token");
  writeFileSync(tokenFile, "a-token\n");
  expect(
    mcpmgr("run", "http://127.0.0.1:9/mcp", "--name", "lf", "--remote-auth-bearer-token-file", tokenFile).code,
  ).toBe(0);
  rmSync(tokenFile);
  // restart would refuse before stopping it (restart-check.ts); a start after a stop finds the file gone.
  expect(mcpmgr("stop", "lf").code).toBe(0);
  expect(mcpmgr("start", "lf").code).not.toBe(0);
  const list = mcpmgr("list");
  expect(list.code).toBe(0);
  expect(list.stdout).toMatch(/^lf\s+failed\s/m);
  expect(list.stdout).not.toContain("cannot read the file");
  expect(list.stderr).toContain(`lf: --remote-auth-bearer-token-file "${tokenFile}": cannot read the file`);
  expect(list.stderr).toContain("mcpmgr logs lf --proxy");
});

test("a workload whose supervisor was killed (as by a reboot) is failed with a way to start it, and 'stop' makes it stopped", async () => {
  expect(mcpmgr("run", "http://127.0.0.1:9/mcp", "--name", "lk").code).toBe(0);
  const statusFile = join(home, ".mcpmgr", "state", "workloads", "lk", "status.json");
  const { pid } = JSON.parse(readFileSync(statusFile, "utf8")) as { pid: number };
  process.kill(pid, "SIGKILL");
  await eventually(() => !isAlive(pid), 10_000, "the supervisor gone");

  const failed = mcpmgr("list");
  expect(failed.stdout).toMatch(/^lk\s+failed\s/m);
  expect(failed.stderr).toContain("lk: the mcpmgr process");
  expect(failed.stderr).toContain("'mcpmgr start lk' runs it again");

  const stop = mcpmgr("stop", "lk");
  expect(stop.code).toBe(0);
  expect(stop.stderr).toContain("lk was not running");
  const stopped = mcpmgr("list");
  expect(stopped.stdout).toMatch(/^lk\s+stopped\s/m);
  expect(stopped.stderr).not.toContain("lk:");
  expect(mcpmgr("rm", "lk").code).toBe(0);
});

test("start on a port another program took meanwhile says how to free it or move the workload, and that way works", () => {
  expect(mcpmgr("run", "http://127.0.0.1:9/mcp", "--name", "lp").code).toBe(0);
  const record = () => JSON.parse(mcpmgr("export", "lp", "-").stdout) as { proxyPort: number; runOptions: string[] };
  const port = record().proxyPort;
  expect(mcpmgr("stop", "lp").code).toBe(0);
  const squatter = Bun.serve({ hostname: "127.0.0.1", port, fetch: () => new Response("another program") });
  try {
    const start = mcpmgr("start", "lp");
    expect(start.code).toBe(1);
    const errors = start.stderr.split("\n").filter((line) => line.startsWith("[error]"));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain(`port ${port} on 127.0.0.1 is already in use`);
    expect(errors[0]).toContain(`lp keeps port ${port} for its clients' URLs, and another program listens there now`);
    expect(errors[0]).toContain("take --proxy-port and its value out of the file's runOptions");
    expect(errors[0]).not.toContain("leave the port option out");
    // list gives the same way out, not 'start lp', which would fail again.
    const listed = mcpmgr("list")
      .stderr.split("\n")
      .find((line) => line.includes("lp: "));
    expect(listed).toContain(`lp keeps port ${port} for its clients' URLs, and another program listens there now`);
    expect(listed).not.toContain("'mcpmgr start lp' runs it again");

    // The way it gives, step by step.
    const file = join(home, "lp.json");
    expect(mcpmgr("export", "lp", file).code).toBe(0);
    const exported = JSON.parse(readFileSync(file, "utf8")) as { runOptions: string[] };
    const at = exported.runOptions.indexOf("--proxy-port");
    exported.runOptions.splice(at, 2);
    writeFileSync(file, JSON.stringify(exported));
    expect(mcpmgr("rm", "lp").code).toBe(0);
    expect(mcpmgr("run", "--from-config", file).code).toBe(0);
    expect(record().proxyPort).not.toBe(port);
    expect(mcpmgr("list").stdout).toMatch(/^lp\s+running\s/m);
  } finally {
    squatter.stop(true);
    mcpmgr("rm", "lp");
  }
});

test('a workload whose server crashes at every start says why under the table (its JSON row without a dangling "its last output:")', async () => {
  // A stdio server that serves until a file appears next to it, then exits, and exits at once at every
  // start while the file is there: a server broken by a change of its own (a bad config it reads).
  const project = join(home, "crash-loop");
  mkdirSync(project);
  writeFileSync(
    join(project, "package.json"),
    JSON.stringify({ name: "crash-loop", version: "1.0.0", bin: "main.mjs" }),
  );
  writeFileSync(
    join(project, "main.mjs"),
    `import { existsSync } from "node:fs";
import { createInterface } from "node:readline";
const broken = () => existsSync(new URL("./broken", import.meta.url));
if (broken()) { console.error("fatal: the configuration is broken"); process.exit(4); }
setInterval(() => { if (broken()) { console.error("fatal: the configuration is broken"); process.exit(4); } }, 100);
createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  const result = m.method === "initialize"
    ? { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "crash-loop", version: "1" } }
    : m.method === "tools/list" ? { tools: [] } : {};
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: m.id, result }) + "\\n");
});
`,
  );
  expect(mcpmgr("run", `npx://${project}`, "--name", "lr").code).toBe(0);
  writeFileSync(join(project, "broken"), "");
  type Row = { name: string; status: string; restarts: number; lastError?: string };
  const row = () => (JSON.parse(mcpmgr("list", "--format", "json").stdout) as Row[]).find((r) => r.name === "lr");
  // First the crash's reason, then each failed restart's: none ends with the log's "its last output:",
  // whose output is in the log alone.
  const reasons = new Set<string>();
  await eventually(
    () => {
      const reason = row()?.lastError ?? "";
      if (reason !== "") reasons.add(reason);
      return reason.includes("did not complete the MCP handshake");
    },
    20_000,
    "a failed restart",
  );
  for (const reason of reasons) expect(reason).not.toEndWith("its last output:");
  const list = mcpmgr("list");
  expect(list.stdout).toMatch(/^lr\s+restarting\s/m);
  const line = list.stderr.split("\n").find((l) => l.includes("lr is restarting"));
  expect(line).toContain("lr is restarting: lr did not complete the MCP handshake: the MCP server exited with code 4");
  expect(line).toContain("'mcpmgr logs lr --proxy'");
  expect(mcpmgr("logs", "lr", "--proxy").stdout).toContain("fatal: the configuration is broken");
  expect(mcpmgr("stop", "lr").code).toBe(0);
  expect(mcpmgr("list").stderr).not.toContain("lr is restarting");
});
