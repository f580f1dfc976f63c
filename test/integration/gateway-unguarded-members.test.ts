/**
 * After an upgrade, a gateway with policies may guard a group whose members an older mcpmgr started,
 * before members refused direct callers (docs/upgrading.md). The gateway asks each member once without
 * its key and warns about one that answers. A workload the current mcpmgr runs (`mcpmgr run URL` in
 * front of test/fixtures/member-server.ts) refuses the question while the group is guarded; the member
 * server reached without mcpmgr's proxy in front answers it, as an older version's member does. A
 * background gateway's `gateway --detach` and `restart` show the warning in their own terminal.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { unguardedMemberCheck } from "../../src/gateway/unguarded-members.ts";
import { guardGroup } from "../../src/state/gateway-guard.ts";
import { resolvePaths } from "../../src/state/paths.ts";
import { type MemberServer, startMemberServer } from "../fixtures/member-server.ts";
import { createTestGroup, type TestGroup } from "../support/gateway-group.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";

setDefaultTimeout(60_000);

let group: TestGroup;
let server: MemberServer;
let olderServer: MemberServer;
let currentUrl: string;

beforeAll(async () => {
  group = await createTestGroup();
  server = startMemberServer({ name: "upgraded", tools: ["echo"] });
  olderServer = startMemberServer({ name: "older", tools: ["echo"] });
  currentUrl = group.run(server.url, "current", "team");
  // A workload of the group whose endpoint answers as an older version's does: recorded and supervised
  // by this mcpmgr, its clients' URL (the record's port) leads to the member server without mcpmgr's
  // proxy in front, so nothing there reads the guard marker.
  group.run(olderServer.url, "older", "team");
  const recordPath = join(resolvePaths({ MCPMGR_HOME: group.home }).stateDir, "workloads", "older", "workload.json");
  const record = JSON.parse(await readFile(recordPath, "utf8")) as { proxyPort: number; proxyPath: string };
  const direct = new URL(olderServer.url);
  await writeFile(
    recordPath,
    JSON.stringify({ ...record, proxyPort: Number(direct.port), proxyPath: direct.pathname }),
  );
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  await server?.stop();
  await olderServer?.stop();
});

test("a guarded group's member that still answers direct callers is named, with the restart that fixes it", async () => {
  const release = await guardGroup(resolvePaths({ MCPMGR_HOME: group.home }), "team", { authenticates: false });
  const warnings: string[] = [];
  const check = unguardedMemberCheck((text) => warnings.push(text));
  try {
    await check.check([
      { name: "current", url: currentUrl },
      { name: "older", url: server.url },
    ]);
    expect(warnings).toEqual([
      "workload 'older' answers callers that bypass this gateway's policies: an older mcpmgr started it, " +
        "before workloads refused direct callers; move it to this version with 'mcpmgr restart older' (docs/upgrading.md)",
    ]);
    // Asked once: the next membership change does not ask (or warn) again.
    await check.check([{ name: "older", url: server.url }]);
    expect(warnings).toHaveLength(1);
  } finally {
    check.close();
    await release();
  }
});

/** mcpmgr in the test's home, not blocking this process: the member servers answer from it. */
async function mcpmgr(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = Bun.spawn([process.execPath, CLI_ENTRY, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: group.home, MCPMGR_RUNTIME: "process" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { code, stdout, stderr };
}

test("a background gateway's start and restart show the warning in the terminal, and still succeed", async () => {
  const warning =
    "workload 'older' answers callers that bypass this gateway's policies: an older mcpmgr started it, " +
    "before workloads refused direct callers; move it to this version with 'mcpmgr restart older' (docs/upgrading.md)";
  try {
    const started = await mcpmgr("gateway", "team", "--detach", "--tools", "current_echo,older_echo");
    expect(started.code).toBe(0);
    expect(started.stderr.split("\n")).toContain(`[warn] gateway 'team': ${warning}`);
    expect(started.stderr).not.toContain("workload 'current' answers");
    expect(started.stdout.trim()).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const restarted = await mcpmgr("restart", "gateway-team");
    expect(restarted.code).toBe(0);
    expect(restarted.stderr.split("\n")).toContain(`[warn] gateway 'team': ${warning}`);
    expect(restarted.stderr.split(warning)).toHaveLength(2);
  } finally {
    await mcpmgr("rm", "gateway-team");
  }
});
