/**
 * The grant stores of one remote over a secrets store that does not work: a real encrypted file
 * that cannot be read (broken on disk), and the real read-only environment provider. One start
 * warns once about an unreadable store, whatever the number of records it reads, and a failed save
 * says what was not saved.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type RecordLabel, remoteOf } from "../../src/auth/outgoing/grant-labels.ts";
import { clientHomeKey, deferredLoginKey, grantKey, secretsGrantStores } from "../../src/auth/outgoing/grant-store.ts";
import { SECRETS_FILE_NAME } from "../../src/secrets/encrypted-file.ts";
import { createSecretManager } from "../../src/secrets/manager.ts";

const dir = mkdtempSync(join(tmpdir(), "mcpmgr-grant-store-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const target = new URL("https://remote.example/mcp");
const remote = remoteOf(target);
const records: [string, RecordLabel][] = [
  [
    grantKey({ issuer: "https://as.example/", clientId: undefined, resource: target.href, target, callbackPort: 8666 }),
    { kind: "grant", remote, issuer: "https://as.example/" },
  ],
  [clientHomeKey("my-client", target), { kind: "client-home", remote, clientId: "my-client" }],
  [deferredLoginKey(target), { kind: "challenge", remote }],
];

function recordingLog() {
  const warnings: string[] = [];
  return { warnings, log: { info: () => {}, warn: (text: string) => warnings.push(text) } };
}

test("an unreadable secrets store is warned about once per start, not once per record or read", async () => {
  writeFileSync(join(dir, SECRETS_FILE_NAME), "this is not a secrets file");
  const secrets = createSecretManager({
    provider: "encrypted",
    dir,
    env: { MCPMGR_SECRETS_PASSWORD: "a password" },
    keychain: null,
  });
  const { warnings, log } = recordingLog();
  const storeFor = secretsGrantStores(() => secrets, log);
  for (const [key, about] of records) {
    const store = storeFor(key, about);
    expect(await store.load()).toEqual({});
    expect(await store.load()).toEqual({});
  }
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toContain("stored OAuth tokens could not be read");
});

test("a failed save says what was not saved, once per kind of record", async () => {
  // The environment provider is read-only: every save fails.
  const secrets = createSecretManager({ provider: "environment", dir, env: {} });
  const { warnings, log } = recordingLog();
  const storeFor = secretsGrantStores(() => secrets, log);
  const [grant, home, deferred] = records.map(([key, about]) => storeFor(key, about));
  for (let round = 0; round < 2; round++) {
    await home?.save({ issuer: "https://as.example/" });
    await deferred?.save({ challenge: 'Bearer resource_metadata="https://remote.example/.well-known/x"' });
    await grant?.save({ accessToken: "token" });
  }
  expect(warnings).toHaveLength(3);
  const [homeWarning, deferredWarning, grantWarning] = warnings;
  expect(homeWarning).toContain("the authorization server the --remote-auth-client-id was first used with");
  expect(homeWarning).not.toContain("OAuth tokens are kept in memory only");
  expect(deferredWarning).toContain("the login the remote server asked for is not remembered");
  expect(deferredWarning).not.toContain("OAuth tokens are kept in memory only");
  expect(grantWarning).toContain("OAuth tokens are kept in memory only");
  // What could not be saved is still there for this run.
  expect(await home?.load()).toMatchObject({ issuer: "https://as.example/" });
  expect(await grant?.load()).toMatchObject({ accessToken: "token" });
});
