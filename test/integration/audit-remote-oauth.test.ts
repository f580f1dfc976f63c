/**
 * The OAuth tokens of `--remote-auth` in a remote's audit data: a remote that echoes its request
 * headers puts mcpmgr's access token into the answer, and that token changes at each refresh. The
 * audit redactor learns each one as the grant gives it, and keeps the replaced ones for a while.
 * Real parts: oidc-provider with 2 s access tokens (a refresh every second), the authorization-code
 * login played from the printed URL, a remote that echoes, the SDK client. The tokens of token
 * exchange (RFC 8693) likewise: one per client, exchanged at oidc-provider.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CALLBACK_PORTS, CLIENTS, completeLogin, JWT_RESOURCE, startAuthServer } from "../support/auth-server.ts";
import { CLI_ENTRY, spawnUntil } from "../support/processes.ts";
import { LOCAL_DEV, until } from "../support/protected-remote.ts";
import { startEchoingRemote } from "../support/echoing-remote.ts";

setDefaultTimeout(60_000);

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-audit-oauth-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

test("the access and refresh tokens of --remote-auth, renewed while it runs, are scrubbed from audit data, the replaced ones too", async () => {
  const auth = await startAuthServer({ accessTokenTtl: 2 });
  /** Every Authorization header the remote was sent, in order. */
  const sent: string[] = [];
  const refreshTokens = () =>
    auth.seen.flatMap((s) => {
      const token =
        s.answer === undefined ? undefined : (JSON.parse(s.answer) as { refresh_token?: string }).refresh_token;
      return token ? [token] : [];
    });
  // A remote that answers a tool call with every Authorization header it was sent so far (a debugging
  // server, a log page), and, standing for any other echo, the refresh tokens the server issued.
  const echoing = startEchoingRemote(
    () => JSON.stringify({ sent, refresh: refreshTokens() }),
    (req) => {
      const authorization = req.headers.get("authorization");
      if (authorization && sent.at(-1) !== authorization) sent.push(authorization);
    },
  );
  const logFile = join(dir, "audit.jsonl");
  const config = join(dir, "audit.json");
  await writeFile(config, JSON.stringify({ includeResponseData: true, maxDataSize: 16384, logFile }));
  try {
    const run = await spawnUntil(
      [
        process.execPath,
        CLI_ENTRY,
        "run",
        "--foreground",
        `http://127.0.0.1:${echoing.port}/mcp`,
        "--name",
        "oauth-echo",
        "--remote-auth",
        "--remote-auth-issuer",
        auth.issuer,
        "--remote-auth-client-id",
        CLIENTS.mcpmgrPublic.client_id,
        "--remote-auth-resource",
        JWT_RESOURCE,
        "--remote-auth-callback-port",
        String(CALLBACK_PORTS[2]),
        "--remote-auth-skip-browser",
        "--audit-config",
        config,
      ],
      /^(http:\/\/127\.0\.0\.1:\d+\/auth\?\S+)$/m,
      { timeoutMs: 60_000, env: { MCPMGR_HOME: join(dir, "home") } },
    );
    try {
      expect(await completeLogin(run.match[1] as string)).toBe(200);
      const url = await until(() => /^(http:\/\/127\.0\.0\.1:\d+\/mcp)$/m.exec(run.output())?.[1], "the client URL");
      const client = new Client({ name: "audit-oauth-test", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(url)));
      // Calls until the remote has been sent three access tokens (two refreshes): the last answer quotes them all.
      let answer = "";
      const deadline = Date.now() + 30_000;
      while (sent.length < 3 && Date.now() < deadline) {
        answer = JSON.stringify(await client.callTool({ name: "headers", arguments: {} }));
        await Bun.sleep(100);
      }
      answer = JSON.stringify(await client.callTool({ name: "headers", arguments: {} }));
      expect(sent.length).toBeGreaterThanOrEqual(3);
      expect(answer).toContain(sent[0]?.split(" ")[1] as string);
      await client.close();
    } finally {
      await run.stop();
    }
  } finally {
    await echoing.stop(true);
    await auth.stop();
  }
  const text = await readFile(logFile, "utf8");
  expect(text).toContain("Bearer ***");
  const tokens = [...sent.map((header) => header.split(" ")[1] as string), ...refreshTokens()];
  expect(tokens.length).toBeGreaterThanOrEqual(4);
  for (const token of tokens) expect(text).not.toContain(token);
}, 120_000);

test("the tokens of token exchange, one per client, are scrubbed from audit data when the remote echoes them", async () => {
  const auth = await startAuthServer();
  /** Every Authorization header the remote was sent, each once. */
  const sent: string[] = [];
  const echoing = startEchoingRemote(
    () => JSON.stringify({ sent }),
    (req) => {
      const authorization = req.headers.get("authorization");
      if (authorization && !sent.includes(authorization)) sent.push(authorization);
    },
  );
  const logFile = join(dir, "audit-exchange.jsonl");
  const config = join(dir, "audit-exchange.json");
  await writeFile(config, JSON.stringify({ includeResponseData: true, maxDataSize: 16384, logFile }));
  const B_RESOURCE = "https://b.example.test/mcp";
  await writeFile(join(dir, "exchanger-secret"), CLIENTS.exchanger.client_secret);
  try {
    const run = await spawnUntil(
      [
        process.execPath,
        CLI_ENTRY,
        "run",
        "--foreground",
        `http://127.0.0.1:${echoing.port}/mcp`,
        "--name",
        "exchange-echo",
        "--oidc-issuer",
        auth.issuer,
        "--oidc-audience",
        B_RESOURCE,
        ...LOCAL_DEV,
        "--token-exchange-url",
        `${auth.issuer}/token`,
        "--token-exchange-client-id",
        CLIENTS.exchanger.client_id,
        "--token-exchange-client-secret-file",
        join(dir, "exchanger-secret"),
        "--token-exchange-audience",
        JWT_RESOURCE,
        "--audit-config",
        config,
      ],
      /^(http:\/\/127\.0\.0\.1:\d+\/mcp)$/m,
      { timeoutMs: 60_000, env: { MCPMGR_HOME: join(dir, "home-exchange") } },
    );
    try {
      // Two clients, each with its own token: two exchanged tokens, both in use; each client is answered
      // with every token the remote was sent so far (another client's too, as a log page would).
      let answer = "";
      for (const [i, caller] of (["service", "otherService"] as const).entries()) {
        const clientToken = await auth.token({ resource: B_RESOURCE, client: caller });
        const client = new Client({ name: `exchange-audit-${i}`, version: "1.0.0" });
        await client.connect(
          new StreamableHTTPClientTransport(new URL(run.match[1] as string), {
            requestInit: { headers: { authorization: `Bearer ${clientToken}` } },
          }),
        );
        answer = JSON.stringify(await client.callTool({ name: "headers", arguments: {} }));
        await client.close();
      }
      expect(sent.length).toBe(2);
      for (const header of sent) expect(answer).toContain(header.split(" ")[1] as string);
    } finally {
      await run.stop();
    }
    expect(auth.grants.get("urn:ietf:params:oauth:grant-type:token-exchange") ?? 0).toBe(2);
  } finally {
    await echoing.stop(true);
    await auth.stop();
  }
  const text = await readFile(logFile, "utf8");
  expect(text).toContain("Bearer ***");
  for (const header of sent) expect(text).not.toContain(header.split(" ")[1] as string);
}, 120_000);
