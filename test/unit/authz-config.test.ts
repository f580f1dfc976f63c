/**
 * `--authz-config`: a policy whose scope can never match a request mcpmgr makes (an action it
 * never asks about, a resource or principal type it never gives, an action paired with another
 * action's resource type) is refused at start-up, naming the policy; Cedar itself parses such a
 * policy and then never applies it, so a typo in a forbid let through what it was written to stop.
 * Scopes that name what mcpmgr asks about, or groups the file's entities define, are taken.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { authzConfig } from "../../src/config/authz-config.ts";
import { cedarAuthorization } from "../../src/middleware/authz.ts";
import { compose, detachedContext } from "../../src/proxy/handler.ts";
import { rpc, toyServer } from "../support/mcp-handler.ts";
import { usageError } from "../support/errors.ts";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "authz-config-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

let files = 0;
async function policyFile(policies: string[], entities: unknown[] = []): Promise<string> {
  const path = join(dir, `policies-${files++}.json`);
  await writeFile(
    path,
    JSON.stringify({ version: "1.0", type: "cedarv1", cedar: { policies, entities_json: JSON.stringify(entities) } }),
  );
  return path;
}

const PERMIT_ECHO = 'permit(principal, action == Action::"call_tool", resource == Tool::"echo");';

test("a scope naming an action, a resource type or a principal type mcpmgr never asks about is refused, naming the policy", async () => {
  const cases: [string, string][] = [
    ['forbid(principal, action == Action::"call_tools", resource == Tool::"delete");', 'Action::"call_tools"'],
    ['permit(principal, action in [Action::"call_tool", Action::"callTool"], resource);', 'Action::"callTool"'],
    ['permit(principal, action == Action::"call_tool", resource == Tools::"echo");', 'Tools::"echo"'],
    ["permit(principal, action, resource is Tools);", "is Tools"],
    ['permit(principal == User::"alice", action, resource);', 'User::"alice"'],
    ['permit(principal in Group::"admins", action, resource);', 'Group::"admins"'],
    ['permit(principal, action == Action::"get_prompt", resource == Tool::"echo");', "get_prompt"],
    // An action group the entities define, compared with ==: no request's action is a group.
    ['forbid(principal, action == Action::"writers", resource);', 'action in Action::"writers"'],
  ];
  const groups = [
    { uid: { type: "Action", id: "call_tool" }, attrs: {}, parents: [{ type: "Action", id: "writers" }] },
  ];
  for (const [policy, named] of cases) {
    const path = await policyFile([PERMIT_ECHO, `@id("under-test") ${policy}`], groups);
    const err = usageError(() => authzConfig(path), "INVALID_OPTION");
    expect(err.message).toContain('policy "under-test"');
    expect(err.message).toContain(named);
    expect(err.hint).toContain('Action::"call_tool"');
  }
  // Without an @id, the policy is named by its place, as audit lines name it.
  const unnamed = await policyFile([PERMIT_ECHO, 'permit(principal, action == Action::"read", resource);']);
  expect(usageError(() => authzConfig(unnamed), "INVALID_OPTION").message).toContain("policy1 ");
});

test("the docs' examples, and groups and action groups the file's entities define, are taken", async () => {
  const taken: [string[], unknown[]][] = [
    [['permit(principal, action == Action::"call_tool", resource == Tool::"fetch");'], []],
    [
      [
        PERMIT_ECHO,
        '@id("no-big-transfers") forbid(principal, action == Action::"call_tool", resource == Tool::"transfer") when { context.arg_amount > 100 };',
        'permit(principal, action == Action::"read_resource", resource == Resource::"demo://docs/readme.md");',
        "permit(principal, action, resource is Prompt);",
        "permit(principal is Client, action, resource);",
      ],
      [],
    ],
    [
      [
        'permit(principal in Group::"admins", action in Action::"readers", resource);',
        'permit(principal, action, resource in Folder::"docs");',
      ],
      [
        { uid: { type: "Client", id: "alice" }, attrs: {}, parents: [{ type: "Group", id: "admins" }] },
        { uid: { type: "Action", id: "call_tool" }, attrs: {}, parents: [{ type: "Action", id: "readers" }] },
        { uid: { type: "Tool", id: "echo" }, attrs: {}, parents: [{ type: "Folder", id: "docs" }] },
      ],
    ],
  ];
  for (const [policies, entities] of taken) expect(authzConfig(await policyFile(policies, entities))).toBeDefined();
});

test("the forbid with a typo: Cedar skips it (the tool it was to stop is called), so the file is refused", async () => {
  const policies = [
    "permit(principal, action, resource);",
    'forbid(principal, action == Action::"calltool", resource);',
  ];
  const handle = compose(toyServer().handler, cedarAuthorization({ policies: policies.join("\n"), entities: [] }));
  const answer = await handle(
    rpc({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "echo", arguments: {} } }),
    detachedContext(),
  );
  expect(answer.status).toBe(200);
  const path = await policyFile(policies);
  const err = usageError(() => authzConfig(path), "INVALID_OPTION");
  expect(err.message).toContain('Action::"calltool"');
});

test("an unquoted version: 1.0 in YAML (the number 1 to a YAML reader) is taken, as Go-written files have it", async () => {
  const path = join(dir, "unquoted.yaml");
  await writeFile(path, `version: 1.0\ntype: cedarv1\ncedar:\n  policies:\n    - ${PERMIT_ECHO}\n`);
  expect(authzConfig(path)).toBeDefined();
  const other = join(dir, "two.yaml");
  await writeFile(other, `version: 2.0\ntype: cedarv1\ncedar:\n  policies:\n    - ${PERMIT_ECHO}\n`);
  expect(usageError(() => authzConfig(other), "INVALID_OPTION").message).toContain('version: must be "1.0"');
});
