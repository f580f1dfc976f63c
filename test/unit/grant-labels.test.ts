/**
 * The labels of mcpmgr's oauth- records in a real encrypted secrets file: each record saved through
 * the grant stores says what it is for, which `secret list` and `rm` read back; a description never
 * holds a token, a client secret or the remote's challenge; records saved before labels are
 * described by their shape, and secrets that are not mcpmgr's records are left alone.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeRecord, labelOf, oauthRecords, remoteOf } from "../../src/auth/outgoing/grant-labels.ts";
import { clientHomeKey, deferredLoginKey, grantKey, secretsGrantStores } from "../../src/auth/outgoing/grant-store.ts";
import { createSecretManager } from "../../src/secrets/manager.ts";

const dir = mkdtempSync(join(tmpdir(), "mcpmgr-grant-labels-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const secrets = createSecretManager({
  provider: "encrypted",
  dir,
  env: { MCPMGR_SECRETS_PASSWORD: "a password" },
  keychain: null,
  kdf: { N: 1024, r: 8, p: 1 },
});
const warnings: string[] = [];
const log = { info: () => {}, warn: (text: string) => warnings.push(text) };
const target = new URL("https://remote.example/mcp?key=kept-out");
const remote = remoteOf(target);
const issuer = "https://as.example";
const challenge = 'Bearer resource_metadata="https://remote.example/.well-known/oauth-protected-resource/mcp"';
const grantName = grantKey({ issuer, clientId: undefined, resource: remote, target, callbackPort: 8666 });
const homeName = clientHomeKey("my-client", target);
const deferredName = deferredLoginKey(target);

test("a record names its remote by origin and path, without the query (it may carry a key)", () => {
  expect(remote).toBe("https://remote.example/mcp");
});

test("each record saved through the grant stores is described: kind, remote, authorization server; no secret", async () => {
  const storeFor = secretsGrantStores(() => secrets, log);
  await storeFor(grantName, { kind: "grant", remote, issuer }).save({
    clientId: "registered-1",
    clientSecret: "client-secret-value",
    accessToken: "access-token-value",
    refreshToken: "refresh-token-value",
    expiresAt: 1,
  });
  await storeFor(homeName, { kind: "client-home", remote, clientId: "my-client" }).save({ issuer });
  // The remembered challenge names the server it was found to lead to (when discovery got that far).
  await storeFor(deferredName, { kind: "challenge", remote }).save({
    challenge,
    about: { kind: "challenge", remote, issuer },
  });
  expect(warnings).toEqual([]);
  const labels = await oauthRecords(secrets.provider);
  const described = Object.fromEntries([...labels].map(([name, label]) => [name, describeRecord(label)]));
  expect(described).toEqual({
    [grantName]: `OAuth login grant: remote ${remote}, authorization server ${issuer}`,
    [homeName]: `first authorization server of the client 'my-client': remote ${remote}, authorization server ${issuer}`,
    [deferredName]: `remembered login challenge: remote ${remote}, authorization server ${issuer}`,
  });
  const text = JSON.stringify(described);
  for (const secret of ["client-secret-value", "access-token-value", "refresh-token-value", "resource_metadata"])
    expect(text).not.toContain(secret);
});

test("a record saved before labels is described by its shape; other secrets named oauth-… are left out", async () => {
  const older = {
    "oauth-0123456789abcdef0123456789abcdef": JSON.stringify({ accessToken: "t", refreshToken: "r" }),
    "oauth-11111111111111111111111111111111": JSON.stringify({ issuer }),
    "oauth-22222222222222222222222222222222": JSON.stringify({ challenge }),
  };
  const notOurs = {
    // A user's own secrets: a name that is not a hash, a value that is not a record.
    "oauth-github": JSON.stringify({ accessToken: "t" }),
    "oauth-33333333333333333333333333333333": "a plain token",
    "oauth-44444444444444444444444444444444": JSON.stringify(["not", "a", "record"]),
  };
  for (const [name, value] of Object.entries({ ...older, ...notOurs })) await secrets.provider.set(name, value);
  const labels = await oauthRecords(secrets.provider, Object.keys({ ...older, ...notOurs }));
  expect([...labels.keys()].sort()).toEqual(Object.keys(older).sort());
  const unknown = "remote not recorded (saved by an earlier mcpmgr; named at its next save)";
  expect(labels.get("oauth-0123456789abcdef0123456789abcdef")).toEqual({ kind: "grant" });
  expect(describeRecord({ kind: "grant" })).toBe(`OAuth login grant: ${unknown}`);
  expect(describeRecord(labels.get("oauth-11111111111111111111111111111111") ?? { kind: "grant" })).toBe(
    `first authorization server of a --remote-auth-client-id: ${unknown}, authorization server ${issuer}`,
  );
  expect(describeRecord(labels.get("oauth-22222222222222222222222222222222") ?? { kind: "grant" })).toBe(
    `remembered login challenge: ${unknown}, authorization server not found yet`,
  );
});

test("a label's text cannot act on a terminal, and a label that is not one is not believed", () => {
  const label = labelOf(JSON.stringify({ about: { kind: "grant", remote: "https://r.example/\u001b]0;x\u0007mcp" } }));
  expect(describeRecord(label ?? { kind: "challenge" })).toBe(
    "OAuth login grant: remote https://r.example/\\x1b]0;x\\x07mcp",
  );
  expect(labelOf(JSON.stringify({ about: { kind: "tokens", remote: "x" }, accessToken: "t" }))).toEqual({
    kind: "grant",
  });
  expect(labelOf(JSON.stringify({ about: { kind: "grant", remote: 7 } }))).toEqual({
    kind: "grant",
    remote: undefined,
    issuer: undefined,
    clientId: undefined,
  });
});

test("a store of many records is read once to describe them all, not once per record", async () => {
  const bigDir = mkdtempSync(join(dir, "big-"));
  const big = createSecretManager({
    provider: "encrypted",
    dir: bigDir,
    env: { MCPMGR_SECRETS_PASSWORD: "a password" },
    keychain: null,
    kdf: { N: 1024, r: 8, p: 1 },
  }).provider;
  const count = 120;
  for (let i = 0; i < count; i++) {
    const about = { kind: "grant", remote: `https://r${i}.example/mcp`, issuer };
    await big.set(`oauth-${i.toString(16).padStart(32, "0")}`, JSON.stringify({ accessToken: "at", about }));
  }
  await big.set("github-token", "not a record");
  // The real store, with its reads counted: each get or getMany decrypts and parses the whole file.
  let reads = 0;
  const counted = {
    ...big,
    kind: big.kind,
    writable: big.writable,
    list: () => big.list(),
    set: (name: string, value: string) => big.set(name, value),
    delete: (name: string) => big.delete(name),
    get: (name: string) => {
      reads += 1;
      return big.get(name);
    },
    getMany: (names: readonly string[]) => {
      reads += 1;
      return big.getMany(names);
    },
  };
  const labels = await oauthRecords(counted);
  expect(labels.size).toBe(count);
  expect(labels.get(`oauth-${(7).toString(16).padStart(32, "0")}`)?.remote).toBe("https://r7.example/mcp");
  expect(reads).toBe(1);
  // What the one read returns is what get returns, name by name; a name not stored is absent.
  const some = await big.getMany(["github-token", "oauth-missing"]);
  expect([...some.keys()]).toEqual(["github-token"]);
  expect(some.get("github-token")?.reveal()).toBe((await big.get("github-token"))?.reveal());
});
