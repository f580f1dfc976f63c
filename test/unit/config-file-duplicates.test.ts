/**
 * The option files keep every key once: a key given twice in one object (which Bun's YAML parser and
 * JSON.parse take silently, the last one winning) is refused in one line naming the key and its line,
 * never quoting the file; an alias with no anchor says where and why.
 */
import { expect, test } from "bun:test";
import { auditConfig } from "../../src/config/audit-config.ts";
import { authzConfig } from "../../src/config/authz-config.ts";
import { loadPermissionProfile } from "../../src/config/permission-profile.ts";
import { toolsPolicy } from "../../src/config/tools-policy.ts";
import { webhookConfig } from "../../src/config/webhook-config.ts";
import { usageError } from "../support/errors.ts";
import { scratchFiles } from "../support/scratch-files.ts";

const file = scratchFiles("mcpmgr-config-duplicates-");

const permit = "permit(principal, action, resource);";
const forbid = 'forbid(principal, action == Action::"call_tool", resource == Tool::"delete_everything");';

test("a Cedar file with two policies: keys is refused, naming the key and the line, not a policy", async () => {
  const yaml = await file(
    `version: "1.0"\ntype: cedarv1\ncedar:\n  policies:\n    - '${forbid}'\n  policies:\n    - '${permit}'\n`,
  );
  const err = usageError(() => authzConfig(yaml), "INVALID_OPTION");
  expect(err.message).toContain('the key "policies" is given twice in one object (line 6)');
  expect(err.message).not.toContain("delete_everything");
  expect(err.message).not.toContain("permit(");
  // Quoted one way and plain the other is still the same key to the parser that builds the object.
  const quoted = await file(
    `version: "1.0"\ntype: cedarv1\ncedar:\n  policies: ['${forbid}']\n  "policies": ['${permit}']\n`,
  );
  expect(usageError(() => authzConfig(quoted), "INVALID_OPTION").message).toContain('"policies" is given twice');
  const json = await file(
    `{"version": "1.0", "type": "cedarv1",\n "cedar": {"policies": [${JSON.stringify(forbid)}],\n  "polic\\u0069es": ["${permit}"]}}`,
    "json",
  );
  const jsonErr = usageError(() => authzConfig(json), "INVALID_OPTION");
  expect(jsonErr.message).toContain('the key "policies" is given twice in one object (line 3)');
  expect(jsonErr.message).not.toContain("delete_everything");
});

test("a webhook with two urls, a profile with two network blocks, an override and an audit file likewise", async () => {
  const hooks = await file(
    "validating:\n  - name: gate\n    url: https://gate.example/check\n    url: https://other.example/allow-all\n",
  );
  expect(usageError(() => webhookConfig([hooks]), "INVALID_OPTION").message).toContain(
    `--webhook-config "${hooks}": the key "url" is given twice in one object (line 4)`,
  );
  const profile = await file(
    '{"network": {"outbound": {"allow_host": ["api.example"]}},\n "read": [],\n "network": {"outbound": {"insecure_allow_all": true}}}',
    "json",
  );
  expect(usageError(() => loadPermissionProfile(profile), "INVALID_OPTION").message).toContain(
    'the key "network" is given twice in one object (line 3)',
  );
  const override = await file('{"toolsOverride": {"echo": {"name": "say", "name": "shout"}}}', "json");
  expect(usageError(() => toolsPolicy([], override), "INVALID_OPTION").message).toContain('"name" is given twice');
  const audit = await file("eventTypes: [mcp_tool_call]\nexcludeEventTypes: []\neventTypes: [mcp_initialize]\n");
  expect(usageError(() => auditConfig(false, audit, "w"), "INVALID_OPTION").message).toContain(
    'the key "eventTypes" is given twice in one object (line 3)',
  );
});

test("the same key in two objects, or a list item repeated, is no duplicate", async () => {
  const hooks = await file(
    "validating:\n  - name: a\n    url: https://a.example\n  - name: b\n    url: https://b.example\n",
  );
  expect(webhookConfig([hooks])?.validating.map((hook) => hook.name)).toEqual(["a", "b"]);
  const policies = await file(
    `version: "1.0"\ntype: cedarv1\ncedar:\n  policies:\n    - '${permit}'\n    - '${permit}'\n`,
  );
  expect(authzConfig(policies)).toBeDefined();
});

test("merge keys (<<) are no duplicates: each adds its keys, as Bun's parser applies them", async () => {
  // Two `<<` in one mapping, and a key of the mapping over a merged one: Bun takes all of it.
  const hooks = await file(
    [
      "validating:",
      "  - &gate",
      "    name: gate",
      "    url: https://gate.example/check",
      "  - &lenient",
      "    name: lenient",
      "    url: https://lenient.example/check",
      "    failure_policy: ignore",
      "  - <<: *gate",
      "    <<: *lenient",
      "    name: third",
      "",
    ].join("\n"),
  );
  const third = webhookConfig([hooks])?.validating[2];
  expect(third?.name).toBe("third");
  expect(third?.failurePolicy).toBe("ignore");
  // A quoted "<<" is an ordinary key to Bun's parser (the later replaces the earlier): still refused.
  const quoted = await file(
    `version: "1.0"\ntype: cedarv1\ncedar:\n  policies: ['${permit}']\n  "<<": {}\n  "<<": {}\n`,
  );
  expect(usageError(() => authzConfig(quoted), "INVALID_OPTION").message).toContain('the key "<<" is given twice');
});

test("an alias with no anchor says the line, the column and why, not the alias's name", async () => {
  const alias = await file(`version: "1.0"\ntype: cedarv1\ncedar:\n  policies: *ghp_secretlooking0123\n`);
  const err = usageError(() => authzConfig(alias), "INVALID_OPTION");
  expect(err.message).toContain(
    "not valid YAML (line 4, column 13: an alias (*) with no anchor (&) of its name before it)",
  );
  expect(err.message).not.toContain("ghp_");
});
