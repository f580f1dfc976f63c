/**
 * After an upgrade, a gateway with policies may guard a group whose members an older mcpmgr started,
 * before members refused direct callers (docs/upgrading.md). The gateway asks each member once without
 * its key and warns about one that answers. A workload the current mcpmgr runs (`mcpmgr run URL` in
 * front of test/fixtures/member-server.ts) refuses the question while the group is guarded; the member
 * server reached without mcpmgr's proxy in front answers it, as an older version's member does.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { unguardedMemberCheck } from "../../src/gateway/unguarded-members.ts";
import { guardGroup } from "../../src/state/gateway-guard.ts";
import { resolvePaths } from "../../src/state/paths.ts";
import { type MemberServer, startMemberServer } from "../fixtures/member-server.ts";
import { createTestGroup, type TestGroup } from "../support/gateway-group.ts";

setDefaultTimeout(60_000);

let group: TestGroup;
let server: MemberServer;
let currentUrl: string;

beforeAll(async () => {
  group = await createTestGroup();
  server = startMemberServer({ name: "upgraded" });
  currentUrl = group.run(server.url, "current", "team");
}, 120_000);

afterAll(async () => {
  await group?.cleanup();
  await server?.stop();
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
