/**
 * `start`, `restart`, `stop` and `rm` over several workloads, as a user drives them with real
 * background workloads (the process runtime, the sandbox-probe fixture) and a background gateway:
 * several names, `--all`, `--group`, an unknown name among others, a failure in the middle, and
 * every supervisor killed (as a reboot leaves them) then `start --all`. Cursor, in a temporary HOME,
 * follows the group: workloads started and stopped side by side must all reach its one file.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { cliEnv } from "../support/cli-home.ts";
import { installClients } from "../support/client-home.ts";
import { CLI_ENTRY, isAlive, REPO_ROOT } from "../support/processes.ts";

// Real supervisors and servers, several per command.
setDefaultTimeout(60_000);

const PROBE = "npx://./test/fixtures/sandbox-probe";
let dir: string;
let home: string;

function mcpmgr(...args: string[]) {
  const result = Bun.spawnSync([process.execPath, CLI_ENTRY, ...args], {
    cwd: REPO_ROOT,
    env: cliEnv(dir, home),
    stdin: "ignore",
    timeout: 120_000,
  });
  const stderr = result.stderr.toString();
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr, lines: stderr.split("\n").filter(Boolean) };
}

interface Row {
  name: string;
  status: string;
  url: string;
  lastError?: string;
}
const list = (): Row[] => JSON.parse(mcpmgr("list", "--format", "json").stdout) as Row[];
/** The workloads Cursor's file has entries for. */
const inCursor = () =>
  Object.keys(
    (JSON.parse(readFileSync(join(dir, ".cursor", "mcp.json"), "utf8")) as { mcpServers?: object }).mcpServers ?? {},
  ).sort();
const states = () => Object.fromEntries(list().map((row) => [row.name, row.status]));

/** The index of the line that names the workload's result (`started NAME`, `stopped NAME`, ...). */
const lineOf = (lines: readonly string[], text: string) => lines.findIndex((line) => line.includes(text));

async function supervisorPid(name: string): Promise<number> {
  return ((await Bun.file(join(home, "state/workloads", name, "status.json")).json()) as { pid: number }).pid;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-batch-"));
  home = join(dir, ".mcpmgr");
  installClients(dir, cliEnv(dir, home), ["cursor"]);
  expect(mcpmgr("group", "create", "team").code).toBe(0);
  expect(mcpmgr("client", "register", "cursor", "--group", "team").code).toBe(0);
  for (const [name, group] of [
    ["aa", "default"],
    ["bb", "default"],
    ["cc", "team"],
    ["dd", "team"],
  ] as const) {
    const started = mcpmgr("run", PROBE, "--name", name, "--group", group);
    expect([name, started.code, started.code === 0 ? "" : started.stderr]).toEqual([name, 0, ""]);
  }
  expect(mcpmgr("gateway", "team", "--detach").code).toBe(0);
  expect(states()).toEqual({ aa: "running", bb: "running", cc: "running", dd: "running", "gateway-team": "running" });
}, 180_000);

afterAll(async () => {
  for (const row of list()) mcpmgr("rm", row.name);
  await rm(dir, { recursive: true, force: true });
});

describe("several workloads at once", () => {
  test("stop NAME NAME: one line each, the others untouched", () => {
    const stopped = mcpmgr("stop", "aa", "bb");
    expect(stopped.code).toBe(0);
    expect(stopped.stdout).toBe("");
    expect(lineOf(stopped.lines, "[info] stopped aa")).toBeGreaterThan(-1);
    expect(lineOf(stopped.lines, "[info] stopped bb")).toBeGreaterThan(-1);
    expect(states()).toMatchObject({ aa: "stopped", bb: "stopped", cc: "running", dd: "running" });
  });

  test("an unknown name among several fails alone, with did-you-mean; the others are done; exit 1 with a summary", () => {
    const started = mcpmgr("start", "aa", "bbx");
    expect(started.code).toBe(1);
    expect(started.lines.find((line) => line.includes("no workload named bbx"))).toContain("did you mean bb?");
    expect(lineOf(started.lines, "[info] started aa at http://127.0.0.1:")).toBeGreaterThan(-1);
    expect(started.lines.at(-1)).toMatch(/^\[error\] 1 of 2 workloads could not be started: bbx \(hint: /);
    expect(states()).toMatchObject({ aa: "running", bb: "stopped" });
  });

  test("stop --group stops the group's workloads, its gateway after them; the rest keep running", () => {
    const stopped = mcpmgr("stop", "--group", "team");
    expect(stopped.code).toBe(0);
    const gateway = lineOf(stopped.lines, "[info] stopped gateway-team");
    expect(gateway).toBeGreaterThan(lineOf(stopped.lines, "[info] stopped cc"));
    expect(gateway).toBeGreaterThan(lineOf(stopped.lines, "[info] stopped dd"));
    expect(lineOf(stopped.lines, "[info] stopped cc")).toBeGreaterThan(-1);
    expect(states()).toEqual({ aa: "running", bb: "stopped", cc: "stopped", dd: "stopped", "gateway-team": "stopped" });
    expect(inCursor()).toEqual([]);
  });

  test("stop --all stops what runs; with nothing running it says so and succeeds", () => {
    const stopped = mcpmgr("stop", "--all");
    expect(stopped.code).toBe(0);
    expect(stopped.lines).toEqual(["[info] stopped aa"]);
    const again = mcpmgr("stop", "--all");
    expect(again.code).toBe(0);
    expect(again.stdout).toBe("");
    expect(again.lines).toEqual(["[info] no workload is running: nothing to stop"]);
  });

  test("start --group starts the group's gateway first, then its members", () => {
    const started = mcpmgr("start", "--group", "team");
    expect(started.code).toBe(0);
    const gateway = lineOf(started.lines, "[info] started gateway-team at http://127.0.0.1:");
    expect(gateway).toBe(0);
    expect(lineOf(started.lines, "[info] started cc at")).toBeGreaterThan(gateway);
    expect(lineOf(started.lines, "[info] started dd at")).toBeGreaterThan(gateway);
    // Every line whole: concurrent starts never share a line.
    for (const line of started.lines)
      expect(line).toMatch(
        /^\[info\] (started (gateway-team|cc|dd) at http:\/\/127\.0\.0\.1:\d+\/mcp|(cc|dd) is in the AI clients following group team: cursor \([^()]+\))$/,
      );
    expect(states()).toMatchObject({ aa: "stopped", cc: "running", dd: "running", "gateway-team": "running" });
    // Both members written into the one file, though they started side by side.
    expect(inCursor()).toEqual(["cc", "dd"]);
  });

  test("after a reboot (every supervisor killed), start --all starts them all; one whose port is taken fails alone", async () => {
    expect(mcpmgr("start", "aa", "bb").code).toBe(0);
    const names = ["aa", "bb", "cc", "dd", "gateway-team"];
    // As the machine going down leaves them: every supervisor and what it started gone at once.
    for (const name of names) {
      const pid = await supervisorPid(name);
      try {
        process.kill(-pid, "SIGKILL");
      } catch {
        process.kill(pid, "SIGKILL");
      }
    }
    for (const name of names) {
      const pid = await supervisorPid(name);
      const deadline = Date.now() + 20_000;
      while (isAlive(pid) && Date.now() < deadline) await Bun.sleep(50);
    }
    expect(new Set(Object.values(states()))).toEqual(new Set(["failed"]));
    // Another program took bb's port meanwhile.
    const bbPort = Number(new URL(list().find((row) => row.name === "bb")?.url ?? "").port);
    const stranger = Bun.listen({ hostname: "127.0.0.1", port: bbPort, socket: { data() {} } });
    try {
      const started = mcpmgr("start", "--all");
      expect(started.code).toBe(1);
      expect(started.stdout).toBe("");
      // Lines before it may say which stale AI-client entries went (its start prunes them).
      const gateway = lineOf(started.lines, "[info] started gateway-team at");
      expect(gateway).toBeGreaterThan(-1);
      for (const name of ["aa", "cc", "dd"])
        expect(lineOf(started.lines, `[info] started ${name} at`)).toBeGreaterThan(gateway);
      expect(started.lines.find((line) => line.startsWith("[error] bb"))).toContain(
        `another program listens there now`,
      );
      expect(started.lines.at(-1)).toMatch(/^\[error\] 1 of 5 workloads could not be started: bb \(hint: /);
      expect(states()).toEqual({
        aa: "running",
        bb: "failed",
        cc: "running",
        dd: "running",
        "gateway-team": "running",
      });
      // The group's AI client has its workloads back.
      expect(inCursor()).toEqual(["cc", "dd"]);
    } finally {
      stranger.stop(true);
    }
    // The gateway, started before its members, serves them once they are up.
    const gatewayUrl = list().find((row) => row.name === "gateway-team")?.url as string;
    const client = new Client({ name: "batch-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(gatewayUrl)));
    try {
      const deadline = Date.now() + 20_000;
      let tools: string[] = [];
      while (Date.now() < deadline) {
        tools = (await client.listTools()).tools.map((tool) => tool.name);
        if (tools.some((tool) => tool.includes("cc")) && tools.some((tool) => tool.includes("dd"))) break;
        await Bun.sleep(200);
      }
      expect(tools.some((tool) => tool.includes("cc")) && tools.some((tool) => tool.includes("dd"))).toBe(true);
    } finally {
      await client.close();
    }
    // Now that the port is free again.
    expect(mcpmgr("start", "--all").lines).toEqual([expect.stringMatching(/^\[info\] started bb at http:/)]);
    const again = mcpmgr("start", "--all");
    expect([again.code, again.lines]).toEqual([0, ["[info] every workload is running already: nothing to start"]]);
  }, 180_000);

  test("restart --all restarts the running ones, each on a new supervisor", async () => {
    expect(mcpmgr("stop", "bb").code).toBe(0);
    const before = await supervisorPid("aa");
    const restarted = mcpmgr("restart", "--all");
    expect(restarted.code).toBe(0);
    const done = restarted.lines.filter((line) => line.startsWith("[info] restarted "));
    expect(done.length).toBe(4);
    // Its members first, so the restarted gateway finds them on this version (docs/upgrading.md).
    expect(lineOf(done, "[info] restarted gateway-team at")).toBe(3);
    expect(await supervisorPid("aa")).not.toBe(before);
    expect(states()).toMatchObject({ aa: "running", bb: "stopped" });
  }, 120_000);

  test("rm --group removes the group's workloads and gateway, not the group; rm --all the rest", () => {
    const removed = mcpmgr("rm", "--group", "team");
    expect(removed.code).toBe(0);
    expect(lineOf(removed.lines, "[info] removed gateway-team")).toBeGreaterThan(
      lineOf(removed.lines, "[info] removed cc"),
    );
    expect(list().map((row) => row.name)).toEqual(["aa", "bb"]);
    expect(mcpmgr("group", "list", "--format", "json").stdout).toContain('"team"');
    const all = mcpmgr("rm", "--all");
    expect(all.code).toBe(0);
    expect(all.lines.sort()).toEqual(["[info] removed aa", "[info] removed bb"]);
    expect(list()).toEqual([]);
    const nothing = mcpmgr("rm", "--all");
    expect([nothing.code, nothing.lines]).toEqual([0, ["[info] no workloads yet: nothing to remove"]]);
  });

  test("names and selectors that do not go together are refused before anything happens", () => {
    for (const args of [
      ["rm"],
      ["stop", "aa", "--all"],
      ["start", "--all", "--group", "team"],
      ["rm", "aa", "--group", "team"],
    ]) {
      const refused = mcpmgr(...args);
      expect([args.join(" "), refused.code, refused.lines.length]).toEqual([args.join(" "), 2, 1]);
      expect(refused.lines[0]).toContain("(hint: ");
    }
    const unknownGroup = mcpmgr("stop", "--group", "tem");
    expect(unknownGroup.code).toBe(1);
    expect(unknownGroup.lines).toEqual([expect.stringContaining("did you mean team?")]);
  });
});
