/**
 * --thv-ca-bundle covers every HTTPS request mcpmgr makes on its own behalf. The
 * authorization server (oidc-provider) is served over TLS with a private, self-signed
 * certificate: the protected remote fetches its discovery document and JWKS, the outgoing
 * proxy discovers it, registers (RFC 7591) and exchanges the code there, and token exchange
 * posts to its token endpoint — each trusting only what the bundle adds.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { rememberSubjectToken } from "../../src/auth/outgoing/subject-token.ts";
import { tokenExchangeSource } from "../../src/auth/outgoing/token-exchange.ts";
import { trustingFetch } from "../../src/auth/trusted-fetch.ts";
import {
  CALLBACK_PORTS,
  CLIENTS,
  completeLogin,
  JWT_RESOURCE,
  startAuthServer,
  type AuthServer,
} from "../support/auth-server.ts";
import { startConformanceServer, type RunningFixture } from "../support/conformance.ts";
import { CLI_ENTRY, REPO_ROOT, spawnUntil, startProxy } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const B_RESOURCE = "https://b.example.test/mcp";
let scratch: string;
let pemPath: string;
let pem: string;
let auth: AuthServer;
let fixture: RunningFixture;
let remote: Awaited<ReturnType<typeof startProxy>>;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "mcpmgr-ca-bundle-"));
  pemPath = join(scratch, "cert.pem");
  const made = Bun.spawnSync(
    [
      "openssl",
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
      "-keyout",
      join(scratch, "key.pem"),
      "-out",
      pemPath,
    ],
    { stderr: "pipe" },
  );
  expect(made.exitCode).toBe(0);
  pem = await readFile(pemPath, "utf8");
  auth = await startAuthServer({ tls: { cert: pem, key: await readFile(join(scratch, "key.pem"), "utf8") } });
  fixture = await startConformanceServer();
  // Incoming: discovery and JWKS over TLS need the bundle (and no --oidc-insecure-allow-http: it is https).
  remote = await startProxy(fixture.url, [
    "--oidc-issuer",
    auth.issuer,
    "--oidc-audience",
    JWT_RESOURCE,
    "--jwks-allow-private-ip",
    "--thv-ca-bundle",
    pemPath,
  ]);
}, 60_000);

afterAll(async () => {
  await remote?.stop();
  await fixture?.stop();
  await auth?.stop();
  await rm(scratch, { recursive: true, force: true });
});

async function listTools(url: string, headers: Record<string, string> = {}): Promise<string[]> {
  const client = new Client({ name: "ca-bundle-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  try {
    return (await client.listTools()).tools.map((t) => t.name);
  } finally {
    await client.close();
  }
}

test("outgoing OAuth over TLS: without the bundle discovery fails naming --thv-ca-bundle; with it, registration, login and tokens work", async () => {
  const home = await mkdtemp(join(scratch, "home-"));
  const args = [
    "proxy",
    "b",
    "--target-uri",
    remote.url,
    "--remote-auth",
    "--remote-auth-issuer",
    auth.issuer,
    "--remote-auth-resource",
    JWT_RESOURCE,
    "--remote-auth-callback-port",
    String(CALLBACK_PORTS[0]),
    "--remote-auth-skip-browser",
  ];
  const env = { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home };
  // Not spawnSync: the authorization server runs in this process and must keep answering.
  const refused = Bun.spawn([process.execPath, CLI_ENTRY, ...args], {
    cwd: REPO_ROOT,
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stderr] = await Promise.all([refused.exited, new Response(refused.stderr).text()]);
  expect(code).toBe(1);
  expect(stderr).toContain(`discovery of the authorization server ${auth.issuer}/ failed`);
  expect(stderr).toContain("--thv-ca-bundle");

  const trusted = await spawnUntil(
    [process.execPath, CLI_ENTRY, ...args, "--thv-ca-bundle", pemPath],
    /^(https:\/\/127\.0\.0\.1:\d+\/auth\?\S+)$/m,
    { env: { MCPMGR_HOME: home }, timeoutMs: 30_000 },
  );
  try {
    expect(trusted.output()).toContain("registered mcpmgr as OAuth client");
    expect(await completeLogin(trusted.match[1] as string, "alice", auth.fetch)).toBe(200);
    const deadline = Date.now() + 30_000;
    let url: string | undefined;
    while (url === undefined && Date.now() < deadline) {
      url = /^(http:\/\/127\.0\.0\.1:\d+\/mcp)$/m.exec(trusted.output())?.[1];
      await Bun.sleep(50);
    }
    expect(await listTools(url as string)).toContain("test_simple_text");
    expect(auth.grants.get("authorization_code") ?? 0).toBeGreaterThan(0);
  } finally {
    await trusted.stop();
  }
}, 90_000);

test("token exchange over TLS through mcpmgr proxy, with client credentials that need form-encoding", async () => {
  const secretFile = join(scratch, "exchanger-secret");
  await writeFile(secretFile, CLIENTS.exchangerEncoded.client_secret);
  const before = auth.grants.get(EXCHANGE) ?? 0;
  const proxy = await startProxy(remote.url, [
    "--oidc-issuer",
    auth.issuer,
    "--oidc-audience",
    B_RESOURCE,
    "--jwks-allow-private-ip",
    "--thv-ca-bundle",
    pemPath,
    "--token-exchange-url",
    `${auth.issuer}/token`,
    "--token-exchange-client-id",
    CLIENTS.exchangerEncoded.client_id,
    "--token-exchange-client-secret-file",
    secretFile,
    "--token-exchange-audience",
    JWT_RESOURCE,
  ]);
  try {
    const clientToken = await auth.token({ resource: B_RESOURCE });
    expect(await listTools(proxy.url, { authorization: `Bearer ${clientToken}` })).toContain("test_simple_text");
    expect(auth.grants.get(EXCHANGE) ?? 0).toBeGreaterThan(before);
    expect(proxy.output()).not.toContain("token exchange failed");
  } finally {
    await proxy.stop();
  }
}, 60_000);

test("token exchange without the bundle fails on the certificate; with it, the exchanged token is returned", async () => {
  const spec = {
    url: new URL(`${auth.issuer}/token`),
    audience: JWT_RESOURCE,
    clientId: CLIENTS.exchanger.client_id,
    clientSecret: CLIENTS.exchanger.client_secret,
    scopes: [],
    subjectTokenType: "access_token",
    headerName: "Authorization",
  } as const;
  const incoming = new Request("http://127.0.0.1/mcp");
  rememberSubjectToken(incoming, await auth.token({ resource: B_RESOURCE }));
  const errors: string[] = [];
  const untrusted = tokenExchangeSource(spec, {
    fetch: trustingFetch(undefined),
    onError: (text) => errors.push(text),
  });
  await expect(untrusted.authorization(incoming)).rejects.toThrow(/token exchange failed \(.*certificate/i);
  const trusted = tokenExchangeSource(spec, { fetch: trustingFetch(pem) });
  expect(await trusted.authorization(incoming)).toMatch(/^Bearer [\w-]+\.[\w-]+\.[\w-]+$/);
});
