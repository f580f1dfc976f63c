/**
 * What `rm` says about the OAuth records it keeps for a remote workload, over a real encrypted
 * secrets file: the records of that remote (labelled, or older ones whose key names it), never
 * another remote's; the command that forgets them; nothing for a workload that does not log in
 * with OAuth; a store that cannot be read is said so.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { remoteOf } from "../../src/auth/outgoing/grant-labels.ts";
import { clientHomeKey, deferredLoginKey } from "../../src/auth/outgoing/grant-store.ts";
import { SECRETS_FILE_NAME } from "../../src/secrets/encrypted-file.ts";
import { createSecretManager, type SecretManager } from "../../src/secrets/manager.ts";
import { resolvePaths } from "../../src/state/paths.ts";
import type { WorkloadRecord } from "../../src/state/workload-record.ts";
import { keptLoginsLine } from "../../src/workload/kept-logins.ts";

const dir = mkdtempSync(join(tmpdir(), "mcpmgr-kept-logins-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const url = "https://remote.example/mcp";
const paths = resolvePaths({ MCPMGR_HOME: dir });
const encrypted = (at: string) =>
  createSecretManager({
    provider: "encrypted",
    dir: at,
    env: { MCPMGR_SECRETS_PASSWORD: "a password" },
    keychain: null,
    kdf: { N: 1024, r: 8, p: 1 },
  });

function remoteRecord(runOptions: string[], ref = url): WorkloadRecord {
  return {
    schema_version: 1,
    name: "remote",
    group: "default",
    labels: {},
    source: { kind: "remote", ref },
    transport: "streamable-http",
    proxyMode: "streamable-http",
    host: "127.0.0.1",
    proxyPort: 8100,
    proxyPath: "/mcp",
    runtime: "remote",
    env: {},
    secrets: [],
    args: [],
    volumes: [],
    runOptions: [ref, "--name", "remote", ...runOptions, "--"],
    createdAt: new Date(0).toISOString(),
  };
}

const line = (record: WorkloadRecord, secrets: SecretManager) =>
  keptLoginsLine(record, { env: {}, paths, secrets: () => secrets });

const grant = "oauth-0123456789abcdef0123456789abcdef";
const otherRemote = "oauth-11111111111111111111111111111111";

test("the remote's records are named, labelled or older ones whose key names it, with the command that forgets them", async () => {
  const secrets = encrypted(join(dir, "a"));
  await secrets.provider.set(grant, JSON.stringify({ accessToken: "t", about: { kind: "grant", remote: url } }));
  await secrets.provider.set(
    otherRemote,
    JSON.stringify({ accessToken: "t", about: { kind: "grant", remote: "https://other.example/mcp" } }),
  );
  // Saved before records carried labels: found by their keys.
  const target = new URL(url);
  const home = clientHomeKey("my-client", target);
  await secrets.provider.set(home, JSON.stringify({ issuer: "https://as.example" }));
  await secrets.provider.set(deferredLoginKey(target), JSON.stringify({ challenge: "Bearer x" }));
  await secrets.provider.set("github-token", "a user's secret");
  const record = remoteRecord(["--remote-auth-client-id", "my-client"]);
  const names = [grant, home, deferredLoginKey(target)].sort();
  expect(await line(record, secrets)).toBe(
    `the OAuth login of ${remoteOf(target)} stays in the secrets store for every workload and proxy of that remote (${names.join(", ")}); to forget it: ${names.map((name) => `mcpmgr secret delete ${name}`).join(" && ")}`,
  );
});

test("a registry entry's remote: its records are found by the entry's URL", async () => {
  const secrets = encrypted(join(dir, "registry"));
  await secrets.provider.set(grant, JSON.stringify({ about: { kind: "grant", remote: url } }));
  const registry = join(dir, "registry.json");
  writeFileSync(
    registry,
    JSON.stringify({
      servers: [
        {
          name: "wiki",
          description: "A remote",
          transport: "streamable-http",
          source: { remote: `${url}?tenant=1` },
          permissions: "network",
          tools: ["search"],
        },
      ],
    }),
  );
  const record = { ...remoteRecord(["--remote-auth"], "wiki"), source: { kind: "registry" as const, ref: "wiki" } };
  const kept = await keptLoginsLine(record, { env: { MCPMGR_REGISTRY: registry }, paths, secrets: () => secrets });
  expect(kept).toStartWith(`the OAuth login of ${url} stays in the secrets store`);
  expect(kept).toContain(`(${grant}); to forget it: mcpmgr secret delete ${grant}`);
});

test("nothing stored for the remote, no OAuth, or not a remote: nothing to say", async () => {
  const secrets = encrypted(join(dir, "b"));
  await secrets.provider.set(
    otherRemote,
    JSON.stringify({ about: { kind: "grant", remote: "https://other.example/mcp" } }),
  );
  expect(await line(remoteRecord(["--remote-auth"]), secrets)).toBeUndefined();
  await secrets.provider.set(grant, JSON.stringify({ about: { kind: "grant", remote: url } }));
  expect(await line(remoteRecord([]), secrets)).toBeUndefined();
  expect(await line({ ...remoteRecord(["--remote-auth"]), runtime: "process" }, secrets)).toBeUndefined();
});

test("a secrets store that cannot be read: said, with where to look", async () => {
  const broken = join(dir, "broken");
  const secrets = encrypted(broken);
  await secrets.provider.set("x", "y");
  writeFileSync(join(broken, SECRETS_FILE_NAME), "this is not a secrets file");
  expect(await line(remoteRecord(["--remote-auth"]), encrypted(broken))).toMatch(
    /^the OAuth login of https:\/\/remote\.example\/mcp may be kept in the secrets store, which could not be read \(.+\): 'mcpmgr secret list' describes its oauth- entries$/,
  );
});
