/**
 * A background workload's record (and `mcpmgr export`) holds no credential given on the command
 * line (docs/security.md S8), for `run` and `gateway --detach` alike: the introspection client's
 * secret comes from `--oidc-client-secret-file`, read by the supervisor at each start, and works
 * against a real oidc-provider.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AuthServer, CLIENTS, OPAQUE_RESOURCE, startAuthServer } from "../support/auth-server.ts";
import { cliEnv, expectOneLineError, runCli, runCliOk } from "../support/cli-home.ts";
import { emptyResultUpstream } from "../support/json-rpc-upstream.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";

setDefaultTimeout(60_000);

let auth: AuthServer;
let upstream: ReturnType<typeof Bun.serve>;
let home: string;
let env: Record<string, string>;

beforeAll(async () => {
  auth = await startAuthServer();
  // The workload only has to be reachable through its proxy.
  upstream = emptyResultUpstream();
  home = await mkdtemp(join(tmpdir(), "mcpmgr-recorded-"));
  env = cliEnv(home);
});

afterAll(async () => {
  runCli(env, ["rm", "introspected"]);
  runCli(env, ["rm", "collected"]);
  await auth?.stop();
  await upstream?.stop(true);
  await rm(home, { recursive: true, force: true });
});

const ping = (url: string, token: string) =>
  fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${token}`,
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "ping" }),
  });

test("--oidc-client-secret is refused by run and gateway --detach; nothing is recorded", () => {
  const secret = CLIENTS.introspector.client_secret;
  const run = runCli(env, [
    "run",
    `http://127.0.0.1:${upstream.port}/mcp`,
    "--name",
    "literal",
    ...auth.introspectionArgs(),
    "--oidc-client-secret",
    secret,
  ]);
  expect(expectOneLineError(run, 2)).toContain("--oidc-client-secret-file");
  runCliOk(env, ["group", "create", "guarded"]);
  const gateway = runCli(env, [
    "gateway",
    "guarded",
    "--detach",
    ...auth.introspectionArgs(),
    "--oidc-client-secret",
    secret,
  ]);
  const line = expectOneLineError(gateway, 2);
  expect(line).toContain("--oidc-client-secret-file");
  expect(line).not.toContain(secret);
  // A gateway has no --foreground: its foreground form is the command without --detach.
  expect(line).toContain("without --detach");
  expect(line).not.toContain("--foreground");
  // So for a collector's key, whose only other way is the foreground.
  const collector = runCli(env, [
    "gateway",
    "guarded",
    "--detach",
    "--otel-endpoint",
    "https://collector.example/v1?api-key=collector-key-5e1d",
  ]);
  const refused = expectOneLineError(collector, 2);
  expect(refused).toContain("--otel-endpoint …?api-key=…");
  expect(refused).toContain("run it without --detach");
  expect(refused).not.toContain("--foreground");
  expect(refused).not.toContain("collector-key-5e1d");
  // A collector hosted as an Azure Function takes its key as `?code=`, which is an OAuth code's name too.
  const functionKey = runCli(env, [
    "gateway",
    "guarded",
    "--detach",
    "--otel-endpoint",
    "https://collector.example/api/otlp?code=function-key-8c3a",
  ]);
  const keyRefused = expectOneLineError(functionKey, 2);
  expect(keyRefused).toContain("--otel-endpoint …?code=…");
  expect(keyRefused).not.toContain("function-key-8c3a");
  expect(JSON.parse(runCliOk(env, ["list", "--format", "json"]).stdout)).toEqual([]);
});

test("with --oidc-client-secret-file a background workload introspects tokens; the secret is in neither record nor export", async () => {
  const secretFile = join(home, "introspector.secret");
  await writeFile(secretFile, `${CLIENTS.introspector.client_secret}\n`, { mode: 0o600 });
  // Spawned, not run synchronously: the authorization server lives in this process and must answer meanwhile.
  const child = Bun.spawn(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      `http://127.0.0.1:${upstream.port}/mcp`,
      "--name",
      "introspected",
      ...auth.introspectionArgs(),
      "--oidc-client-secret-file",
      secretFile,
    ],
    { cwd: REPO_ROOT, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" },
  );
  const [stdout, stderr] = [await new Response(child.stdout).text(), await new Response(child.stderr).text()];
  expect({ code: await child.exited, stderr }).toEqual({ code: 0, stderr: expect.any(String) });
  const url = /^(http:\/\/\S+)$/m.exec(stdout)?.[1] as string;
  const opaque = await auth.token({ resource: OPAQUE_RESOURCE });
  expect(opaque.split(".")).toHaveLength(1);
  // Only a supervisor that authenticated to the introspection endpoint with the file's secret says 200.
  expect((await ping(url, opaque)).status).toBe(200);
  expect((await ping(url, "0pAqUe-but-unknown-token-value")).status).toBe(401);
  const record = await readFile(join(home, ".mcpmgr", "state", "workloads", "introspected", "workload.json"), "utf8");
  expect(record).not.toContain(CLIENTS.introspector.client_secret);
  expect(runCliOk(env, ["export", "introspected", "-"]).stdout).not.toContain(CLIENTS.introspector.client_secret);
});

test("--oidc-client-secret and its file form together are refused", () => {
  const both = runCli(env, [
    "run",
    "--foreground",
    `http://127.0.0.1:${upstream.port}/mcp`,
    ...auth.introspectionArgs(),
    "--oidc-client-secret",
    "x",
    "--oidc-client-secret-file",
    join(home, "introspector.secret"),
  ]);
  expect(expectOneLineError(both, 2)).toContain("cannot be used together");
});

test("a record an earlier version made with a collector's key in --otel-endpoint starts with the warning once on start's and restart's stderr, the key unquoted", () => {
  // Recorded as an earlier version did (it accepted the key in the query), then started by this one.
  const endpoint = "http://127.0.0.1:9/v1/traces";
  runCliOk(env, [
    "run",
    "npx://./test/fixtures/sandbox-probe",
    "--name",
    "collected",
    "--otel-endpoint",
    endpoint,
    "--otel-insecure",
  ]);
  runCliOk(env, ["stop", "collected"]);
  const file = join(home, ".mcpmgr", "state", "workloads", "collected", "workload.json");
  const record = JSON.parse(readFileSync(file, "utf8")) as { runOptions: string[] };
  const runOptions = record.runOptions.map((word) =>
    word === endpoint ? `${endpoint}?api-key=collector-key-9a7c` : word,
  );
  writeFileSync(file, JSON.stringify({ ...record, runOptions }));
  const warning = "collected's recorded options hold a credential in plain text";
  for (const verb of ["start", "restart"]) {
    const result = runCliOk(env, [verb, "collected"]);
    expect({ verb, said: result.stderr.split(warning).length - 1 }).toEqual({ verb, said: 1 });
    expect(result.stderr).not.toContain("collector-key-9a7c");
    expect(result.stdout.trim()).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
  }
  runCliOk(env, ["stop", "collected"]);
});
