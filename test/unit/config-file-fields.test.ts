/**
 * The files options name (webhooks, audit, Cedar, tools override, permission profile): a field the
 * format does not know is named as unknown with the nearest known field (the typos users make:
 * camelCase for snake_case, a dropped letter), and a field the format needs is named as missing;
 * both said in words, where valibot's own text ("Invalid key: Expected never but received …") was shown.
 */
import { beforeAll, expect, test } from "bun:test";
import { auditConfig } from "../../src/config/audit-config.ts";
import { authzConfig } from "../../src/config/authz-config.ts";
import { loadPermissionProfile } from "../../src/config/permission-profile.ts";
import { toolsPolicy } from "../../src/config/tools-policy.ts";
import { webhookConfig } from "../../src/config/webhook-config.ts";
import { usageError } from "../support/errors.ts";
import { scratchFiles } from "../support/scratch-files.ts";

const file = scratchFiles("mcpmgr-config-fields-");

test("an unknown field is named, with the field the user most likely meant", async () => {
  const cases: [() => unknown, string][] = [
    [() => webhookConfig([hooks]), 'validating.0: unknown field "failurePolicy" (did you mean failure_policy?)'],
    [() => auditConfig(false, audit, "w"), '(root): unknown field "eventType" (did you mean eventTypes?)'],
    [() => toolsPolicy([], override), 'toolsOverride.echo: unknown field "nmae" (did you mean name?)'],
    [() => loadPermissionProfile(profile), 'network.outbound: unknown field "allowHost" (did you mean allow_host?)'],
    [() => webhookConfig([unlike]), 'validating.0: unknown field "endpoint"'],
  ];
  for (const [load, said] of cases) {
    const err = usageError(load, "INVALID_OPTION");
    expect(err.message).toEndWith(said);
  }
});

test("a missing field the format needs is named as missing", async () => {
  expect(usageError(() => webhookConfig([nameless]), "INVALID_OPTION").message).toEndWith(
    'validating.0: the field "name" is missing',
  );
  expect(usageError(() => authzConfig(policyless), "INVALID_OPTION").message).toEndWith(
    'cedar: the field "policies" is missing',
  );
});

test("a required field misspelt is named as the typo it is, not only as missing", async () => {
  const typo = await file(
    JSON.stringify({ version: "1.0", typ: "cedarv1", cedar: { policies: ["permit(principal, action, resource);"] } }),
    "json",
  );
  expect(usageError(() => authzConfig(typo), "INVALID_OPTION").message).toEndWith(
    '(root): unknown field "typ" (did you mean type?)',
  );
  const renamed = await file(JSON.stringify({ toolOverrides: { echo: { name: "say" } } }), "json");
  expect(usageError(() => toolsPolicy([], renamed), "INVALID_OPTION").message).toEndWith(
    '(root): unknown field "toolOverrides" (did you mean toolsOverride?)',
  );
  // An unknown field that is not near the missing one leaves it missing.
  const other = await file("validating:\n  - url: https://x.example\n    colour: red\n");
  expect(usageError(() => webhookConfig([other]), "INVALID_OPTION").message).toEndWith(
    'validating.0: the field "name" is missing',
  );
});

test("a file that does not parse says where and why; an unquoted Cedar @id in YAML gets its own hint", async () => {
  const annotated = await file(
    'version: "1.0"\ntype: cedarv1\ncedar:\n  policies:\n    - @id("no-big") forbid(principal, action, resource);\n',
  );
  const err = usageError(() => authzConfig(annotated), "INVALID_OPTION");
  expect(err.message).toContain("line 5, column 7");
  expect(err.hint).toContain("quoted in YAML");
  const json = await file('{"eventTypes": ["mcp_tool_call"],}', "json");
  expect(usageError(() => auditConfig(false, json, "w"), "INVALID_OPTION").message).toMatch(/not valid JSON \(.+\)$/);
});

test("a file that does not parse never quotes its own text (a token pasted unquoted), and says the line and column", async () => {
  const token = "ghp_r42SecretToken0123456789";
  const json = await file(
    `{"version": "1.0",\n "type": "cedarv1",\n "cedar": {"policies": ["permit(principal, action, resource);"],\n   "entities_json": ${token}}}`,
    "json",
  );
  const jsonErr = usageError(() => authzConfig(json), "INVALID_OPTION");
  expect(jsonErr.message).not.toContain(token);
  expect(jsonErr.message).toContain("not valid JSON (line 4, column 21: invalid symbol)");
  const unterminated = await file(`{"eventTypes": ["mcp_tool_call"],\n "x": "${token}\n}`, "json");
  const stringErr = usageError(() => auditConfig(false, unterminated, "w"), "INVALID_OPTION");
  expect(stringErr.message).not.toContain(token);
  expect(stringErr.message).toContain("line 2, column 7");
});

test("a JSON option file saved with a byte order mark (Windows Notepad) is read as the file it is", async () => {
  const override = await file(`\uFEFF${JSON.stringify({ toolsOverride: { echo: { name: "say" } } })}\r\n`, "json");
  expect(toolsPolicy([], override)?.realNames.get("say")).toBe("echo");
  const audit = await file(`\uFEFF{"eventTypes": ["mcp_tool_call"]}`, "json");
  expect([...(auditConfig(false, audit, "w")?.eventTypes ?? [])]).toEqual(["mcp_tool_call"]);
});

let hooks: string;
let unlike: string;
let nameless: string;
let audit: string;
let override: string;
let profile: string;
let policyless: string;
beforeAll(async () => {
  hooks = await file("validating:\n  - name: a\n    url: https://x.example\n    failurePolicy: fail\n");
  unlike = await file("validating:\n  - name: a\n    url: https://x.example\n    endpoint: https://y.example\n");
  nameless = await file("validating:\n  - url: https://x.example\n");
  audit = await file("eventType: [mcp_tool_call]\n");
  override = await file(JSON.stringify({ toolsOverride: { echo: { nmae: "say" } } }), "json");
  profile = await file(JSON.stringify({ network: { outbound: { allowHost: ["x.example"] } } }), "json");
  policyless = await file(
    JSON.stringify({ version: "1.0", type: "cedarv1", cedar: { policy: ["permit(principal, action, resource);"] } }),
    "json",
  );
});

test("a value of the wrong type is described, never quoted (a token pasted in the wrong place stays out of the message)", async () => {
  const token = "ghp_0123456789abcdefABCDEF0123456789abcd";
  const misplaced = await file(JSON.stringify({ eventTypes: token }), "json");
  const err = usageError(() => auditConfig(false, misplaced, "w"), "INVALID_OPTION");
  expect(err.message).not.toContain(token);
  expect(err.message).not.toContain("ghp_");
  expect(err.message).toContain("eventTypes: ");
  expect(err.message).toContain("a string");
  const pattern = await file(JSON.stringify({ validating: [{ name: "x", url: token, timeout: 5 }] }), "json");
  const urlErr = usageError(() => webhookConfig([pattern]), "INVALID_OPTION");
  expect(urlErr.message).not.toContain("ghp_");
});
