/**
 * A key given twice in an option file is refused by the command that starts a background workload:
 * the supervisor reads the files again without that check (it would hold the `yaml` library for its
 * whole life), so `start` checks them before starting it, as `run` and `restart` do.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEnv, runCli } from "../support/cli-home.ts";

// Real processes: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

let home: string;
const mcpmgr = (...args: string[]) => runCli(cliEnv(home), args);

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-option-duplicates-"));
});

afterAll(() => {
  mcpmgr("rm", "od");
  mcpmgr("rm", "gateway-default");
  rmSync(home, { recursive: true, force: true });
});

const forbid = "    - 'forbid(principal, action, resource);'\n";
const permit = "    - 'permit(principal, action, resource);'\n";

test("start and restart refuse an option file edited to hold a key twice; run refuses it too", () => {
  const policies = join(home, "policies.yaml");
  writeFileSync(policies, `version: "1.0"\ntype: cedarv1\ncedar:\n  policies:\n${permit}`);
  expect(mcpmgr("run", "http://127.0.0.1:9/mcp", "--name", "od", "--authz-config", policies).code).toBe(0);
  expect(mcpmgr("stop", "od").code).toBe(0);

  writeFileSync(policies, `version: "1.0"\ntype: cedarv1\ncedar:\n  policies:\n${forbid}  policies:\n${permit}`);
  const start = mcpmgr("start", "od");
  expect(start.code).toBe(2);
  expect(start.stderr).toContain(
    `--authz-config "${policies}": the key "policies" is given twice in one object (line 6)`,
  );
  expect(mcpmgr("list").stdout).toMatch(/^od\s+stopped\s/m);

  writeFileSync(policies, `version: "1.0"\ntype: cedarv1\ncedar:\n  policies:\n${permit}`);
  expect(mcpmgr("start", "od").code).toBe(0);
  writeFileSync(policies, `version: "1.0"\ntype: cedarv1\ncedar:\n  policies:\n${forbid}  policies:\n${permit}`);
  const restart = mcpmgr("restart", "od");
  expect(restart.code).toBe(2);
  expect(restart.stderr).toContain('the key "policies" is given twice');
  expect(mcpmgr("list").stdout).toMatch(/^od\s+running\s/m);

  const again = mcpmgr("run", "http://127.0.0.1:9/mcp", "--name", "od2", "--authz-config", policies);
  expect(again.code).toBe(2);
  expect(again.stderr).toContain('the key "policies" is given twice');
});

test("a background gateway's option file likewise: start refuses it and leaves the gateway stopped", () => {
  const policies = join(home, "gateway-policies.yaml");
  writeFileSync(policies, `version: "1.0"\ntype: cedarv1\ncedar:\n  policies:\n${permit}`);
  expect(mcpmgr("gateway", "default", "--detach", "--authz-config", policies).code).toBe(0);
  expect(mcpmgr("stop", "gateway-default").code).toBe(0);
  writeFileSync(policies, `version: "1.0"\ntype: cedarv1\ncedar:\n  policies:\n${forbid}  policies:\n${permit}`);
  const start = mcpmgr("start", "gateway-default");
  expect(start.code).toBe(2);
  expect(start.stderr).toContain('the key "policies" is given twice in one object (line 6)');
  expect(mcpmgr("list").stdout).toMatch(/^gateway-default\s+stopped\s/m);
});
