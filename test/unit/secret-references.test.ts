/**
 * The secrets a workload record names, for `secret delete`: records of every kind that can name
 * one (a local server's --secret, a remote's header secret, a webhook file's hmac_secret_ref, a
 * gateway's embeddings key), written to a real store in a temporary MCPMGR_HOME the way `run`
 * and `gateway --detach` record them, and the refusal `secret delete` meets.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSecretManager } from "../../src/secrets/manager.ts";
import { fixedPasswordSource } from "../../src/secrets/password.ts";
import { type McpmgrPaths, resolvePaths } from "../../src/state/paths.ts";
import type { WorkloadInput, WorkloadRecord } from "../../src/state/workload-record.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";
import {
  deleteSecret,
  secretReferences,
  secretUsers,
  workloadsUsingSecret,
} from "../../src/workload/secret-references.ts";
import { rejection } from "../support/errors.ts";

let dir: string;
let paths: McpmgrPaths;
let nextPort = 41_500;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "mcpmgr-secret-refs-"));
  paths = resolvePaths({ MCPMGR_HOME: join(dir, "home") });
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function record(input: Omit<WorkloadInput, "proxyPort">): Promise<WorkloadRecord> {
  return new WorkloadStore(paths).create({ workingDir: dir, proxyPort: nextPort++, ...input });
}

/** A local server run as `mcpmgr run npx://pkg --secret ...`. */
const local = (name: string, options: string[], secrets: { name: string; target: string }[] = []) =>
  record({
    name,
    source: { kind: "package", ref: "npx://pkg" },
    transport: "stdio",
    runtime: "process",
    secrets,
    runOptions: ["npx://pkg", ...options, "--name", name, "--"],
  });

/** A remote run as `mcpmgr run URL ...`. */
const remote = (name: string, options: string[]) =>
  record({
    name,
    source: { kind: "remote", ref: "https://mcp.example.com/mcp" },
    transport: "streamable-http",
    runtime: "remote",
    runOptions: ["https://mcp.example.com/mcp", ...options, "--name", name, "--"],
  });

const refs = (r: WorkloadRecord) => secretReferences(r).map((ref) => `${ref.secret} <- ${ref.via}`);

test("--secret, from the options and the record's own list, once each", async () => {
  const r = await local(
    "env-user",
    ["--secret", "gh-token,target=GH_TOKEN", "--secret", "other,target=OTHER"],
    [
      { name: "gh-token", target: "GH_TOKEN" },
      { name: "other", target: "OTHER" },
    ],
  );
  expect(refs(r)).toEqual(["gh-token <- --secret gh-token,target=GH_TOKEN", "other <- --secret other,target=OTHER"]);
});

test("a remote's --remote-forward-headers-secret", async () => {
  const r = await remote("hdr", ["--remote-forward-headers-secret", "X-Api-Key=api-key"]);
  expect(refs(r)).toEqual(["api-key <- --remote-forward-headers-secret X-Api-Key=api-key"]);
});

test("a --webhook-config file's hmac_secret_ref, the file taken from the directory run was given in", async () => {
  writeFileSync(
    join(dir, "hooks.yaml"),
    [
      "validating:",
      "  - name: check",
      "    url: https://hooks.example.com/v",
      "    hmac_secret_ref: hook-key",
      "mutating:",
      "  - name: rewrite",
      "    url: https://hooks.example.com/m",
      "    hmac_secret_ref: rewrite-key",
      "  - name: unsigned",
      "    url: https://hooks.example.com/u",
      "",
    ].join("\n"),
  );
  const r = await remote("hooked", ["--webhook-config", "hooks.yaml"]);
  expect(refs(r)).toEqual([
    `rewrite-key <- --webhook-config ${join(dir, "hooks.yaml")}: webhook rewrite: hmac_secret_ref`,
    `hook-key <- --webhook-config ${join(dir, "hooks.yaml")}: webhook check: hmac_secret_ref`,
  ]);
});

test("a background gateway's --tool-search-embeddings-key-secret", async () => {
  const r = await record({
    name: "gateway-default",
    source: { kind: "gateway", ref: "default" },
    transport: "streamable-http",
    runtime: "gateway",
    runOptions: [
      "default",
      "--detach",
      "--tool-search",
      "--tool-search-embeddings",
      "https://embed.example.com/v1",
      "--tool-search-embeddings-model",
      "m",
      "--tool-search-embeddings-key-secret",
      "embed-key",
    ],
  });
  expect(refs(r)).toEqual(["embed-key <- --tool-search-embeddings-key-secret"]);
});

test("names no secret: plain variables, an OAuth remote (its oauth- logins are mcpmgr's own), a plain gateway", async () => {
  expect(refs(await local("plain", ["-e", "TOKEN_NAME=gh-token"]))).toEqual([]);
  expect(refs(await remote("oauth", ["--remote-auth", "--remote-auth-client-id", "cid"]))).toEqual([]);
  const gateway = await record({
    name: "gateway-g",
    group: "g",
    source: { kind: "gateway", ref: "g" },
    transport: "streamable-http",
    runtime: "gateway",
    runOptions: ["g", "--detach"],
  });
  expect(refs(gateway)).toEqual([]);
});

test("options that no longer parse still count the record's secrets; an unreadable webhook file adds nothing", async () => {
  const edited = await local("edited", ["--no-such-option"], [{ name: "kept", target: "KEPT" }]);
  expect(refs(edited)).toEqual(["kept <- --secret kept,target=KEPT"]);
  const gone = await remote("gone-hooks", [
    "--webhook-config",
    join(dir, "missing.yaml"),
    "--remote-forward-headers-secret",
    "X-Key=still",
  ]);
  expect(refs(gone)).toEqual(["still <- --remote-forward-headers-secret X-Key=still"]);
});

test("workloadsUsingSecret: the workloads naming it, by name, each with how; unreadable records listed", async () => {
  await remote("zeta", ["--remote-forward-headers-secret", "X-Key=shared"]);
  await local(
    "alpha",
    ["--secret", "shared,target=A", "--secret", "shared,target=B"],
    [
      { name: "shared", target: "A" },
      { name: "shared", target: "B" },
    ],
  );
  await local("unrelated", ["--secret", "mine,target=M"], [{ name: "mine", target: "M" }]);
  await record({
    name: "broken",
    source: { kind: "package", ref: "npx://pkg" },
    transport: "stdio",
    runtime: "process",
  });
  writeFileSync(join(paths.stateDir, "workloads", "broken", "workload.json"), "{ not json");
  const found = await workloadsUsingSecret(paths, "shared");
  expect(found.users).toEqual([
    { workload: "alpha", via: ["--secret shared,target=A", "--secret shared,target=B"] },
    { workload: "zeta", via: ["--remote-forward-headers-secret X-Key=shared"] },
  ]);
  expect(found.unreadable).toEqual(["broken"]);
});

test("secretUsers (secret list): every secret named, each with its workloads by name and how; unreadable records listed", async () => {
  await remote("zeta", [
    "--remote-forward-headers-secret",
    "X-Key=shared",
    "--remote-forward-headers-secret",
    "X-Other=mine",
  ]);
  await local("alpha", ["--secret", "shared,target=A"], [{ name: "shared", target: "A" }]);
  await local("plain", ["-e", "A=b"]);
  await record({
    name: "broken",
    source: { kind: "package", ref: "npx://pkg" },
    transport: "stdio",
    runtime: "process",
  });
  writeFileSync(join(paths.stateDir, "workloads", "broken", "workload.json"), "{ not json");
  const found = await secretUsers(paths);
  expect(Object.fromEntries(found.users)).toEqual({
    shared: [
      { workload: "alpha", via: ["--secret shared,target=A"] },
      { workload: "zeta", via: ["--remote-forward-headers-secret X-Key=shared"] },
    ],
    mine: [{ workload: "zeta", via: ["--remote-forward-headers-secret X-Other=mine"] }],
  });
  expect(found.unreadable).toEqual(["broken"]);
});

test("deleteSecret: refused while used (SECRET_IN_USE naming them), done with force, not-found either way", async () => {
  const provider = createSecretManager({
    dir: join(dir, "secrets"),
    env: {},
    keychain: null,
    kdf: { N: 1024, r: 8, p: 1 },
    passwordSource: fixedPasswordSource("pw"),
  }).provider;
  await provider.set("used", "v");
  await provider.set("free", "v");
  await local("user", ["--secret", "used,target=U"], [{ name: "used", target: "U" }]);

  const refused = await rejection(deleteSecret(provider, paths, "used", false), "SECRET_IN_USE");
  expect(refused.message).toBe(
    "secret 'used' is used by user (--secret used,target=U): their next start or restart would fail without it",
  );
  expect(await provider.list()).toContain("used");

  expect((await deleteSecret(provider, paths, "free", false)).users).toEqual([]);
  expect((await deleteSecret(provider, paths, "used", true)).users).toEqual([
    { workload: "user", via: ["--secret used,target=U"] },
  ]);
  expect(await provider.list()).toEqual([]);
  // Gone already: a workload naming it does not turn "not found" into "in use".
  await rejection(deleteSecret(provider, paths, "used", false), "SECRET_NOT_FOUND");
});
