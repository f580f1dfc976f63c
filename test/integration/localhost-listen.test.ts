/**
 * `--host localhost`: the workload listens on 127.0.0.1, and every URL mcpmgr writes or shows for it
 * (the AI client's entry, `run`'s output, `list`, `export`) names 127.0.0.1, not "localhost". A client
 * given "localhost" may try ::1 first, where another local user can listen on the same port and
 * receive its requests and tokens; and left to the resolver, the listener itself would be bound as
 * ::1 wherever /etc/hosts lists ::1 first.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { cliEnv, runCli, runCliOk } from "../support/cli-home.ts";
import { installClients } from "../support/client-home.ts";
import { startAuthServer } from "../support/auth-server.ts";
import { PROBE_FIXTURE } from "../support/gateway-group.ts";
import { CLI_ENTRY, freePort, spawnCollect, spawnUntil } from "../support/processes.ts";

setDefaultTimeout(60_000);

let home: string;
let env: Record<string, string>;
let probe: string;

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-localhost-listen-"));
  env = cliEnv(home);
  const packageDir = join(home, "pkg");
  Bun.spawnSync(["mkdir", "-p", packageDir]);
  writeFileSync(join(packageDir, "server.sh"), `#!/bin/sh\nexec ${process.execPath} ${PROBE_FIXTURE} "$@"\n`);
  writeFileSync(
    join(packageDir, "package.json"),
    JSON.stringify({ name: "localhost-fixture", version: "1.0.0", bin: { "localhost-fixture": "server.sh" } }),
  );
  probe = `npx://${packageDir}`;
});

afterAll(() => {
  runCli(env, ["rm", "lh"]);
  runCli(env, ["rm", "lh6"]);
  runCli(env, ["rm", "lh-v6-old"]);
  runCli(env, ["rm", "lh-aud"]);
  runCli(env, ["rm", "lh-old"]);
  rmSync(home, { recursive: true, force: true });
});

/** The local addresses listening on `port`, as `ss` prints them (127.0.0.1:PORT, [::1]:PORT). */
function listeners(port: number): string[] {
  const out = Bun.spawnSync(["ss", "-Hltn", `sport = :${port}`]).stdout.toString();
  return out
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => line.trim().split(/\s+/)[3] as string);
}

test("a workload on --host localhost: its listener, run's URL, the AI client's entry, list and export all say 127.0.0.1; a listener on [::1] at its port hears nothing", async () => {
  runCliOk(env, ["group", "create", "team"]);
  installClients(home, env, ["cursor"]);
  runCliOk(env, ["client", "register", "cursor", "--group", "team"]);
  const printed = runCliOk(env, [
    "run",
    probe,
    "--name",
    "lh",
    "--group",
    "team",
    "--host",
    "localhost",
    "--permission-profile",
    "none",
  ]).stdout.trim();
  const url = new URL(printed);
  expect(url.hostname).toBe("127.0.0.1");
  const port = Number(url.port);
  expect(listeners(port)).toEqual([`127.0.0.1:${port}`]);

  const cursor = JSON.parse(readFileSync(join(home, ".cursor", "mcp.json"), "utf8")).mcpServers;
  expect(cursor.lh).toEqual({ url: printed });
  const rows = JSON.parse(runCliOk(env, ["list", "--format", "json"]).stdout) as { name: string; url: string }[];
  expect(rows.find((row) => row.name === "lh")?.url).toBe(printed);
  const exported = join(home, "lh.json");
  runCliOk(env, ["export", "lh", exported]);
  expect(JSON.parse(readFileSync(exported, "utf8")).host).toBe("127.0.0.1");

  // Another local user's listener on the other loopback, same port: the client never reaches it.
  const heard: string[] = [];
  const impostor = Bun.serve({
    hostname: "::1",
    port,
    fetch(req) {
      heard.push(`${req.method} ${req.url}`);
      return new Response("impostor", { status: 502 });
    },
  });
  try {
    const client = new Client({ name: "localhost-listen", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(cursor.lh.url)));
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await client.close();
  } finally {
    await impostor.stop(true);
  }
  expect(heard).toEqual([]);

  // A file exported before (its "host" the name the options gave) still runs, at 127.0.0.1.
  const older = JSON.parse(readFileSync(exported, "utf8"));
  expect(older.runOptions).toContain("localhost");
  writeFileSync(exported, JSON.stringify({ ...older, host: "localhost" }));
  runCliOk(env, ["rm", "lh"]);
  expect(runCliOk(env, ["run", "--from-config", exported]).stdout.trim()).toBe(printed);
});

test("where /etc/hosts lists ::1 first for localhost, --host localhost still listens on 127.0.0.1, the address its URL names", async () => {
  // A private mount namespace sees its own /etc/hosts; the machine's is untouched.
  const hosts = join(home, "hosts");
  writeFileSync(hosts, "::1 localhost ip6-localhost\n127.0.0.1 localhost\n");
  const proxy = await spawnUntil(
    [
      "unshare",
      "--mount",
      "sh",
      "-c",
      `mount --bind ${hosts} /etc/hosts && exec ${process.execPath} ${CLI_ENTRY} proxy lh-proxy --target-uri http://127.0.0.1:9/mcp --host localhost`,
    ],
    /^(http:\/\/\S+):(\d+)\/mcp$/m,
    { env },
  );
  try {
    const port = Number(proxy.match[2]);
    expect(proxy.match[1]).toBe("http://127.0.0.1");
    expect(listeners(port)).toEqual([`127.0.0.1:${port}`]);
  } finally {
    await proxy.stop();
  }
});

test("every other name for loopback is bound as its address and named so: localhost's spellings and names below it on 127.0.0.1, ip6-localhost and ip6-loopback on [::1]", async () => {
  // Before, `localhost.` was refused as no host name, and the others went to the resolver: on this
  // machine's /etc/hosts (no ip6-* names) `cannot listen`, elsewhere whichever address it gave.
  const cases: [string, string][] = [
    ["localhost.", "127.0.0.1"],
    ["LOCALHOST", "127.0.0.1"],
    ["mcp.localhost", "127.0.0.1"],
    ["ip6-localhost", "[::1]"],
    ["ip6-loopback", "[::1]"],
  ];
  for (const [host, address] of cases) {
    const proxy = await spawnUntil(
      [process.execPath, CLI_ENTRY, "proxy", "lh-names", "--target-uri", "http://127.0.0.1:9/mcp", "--host", host],
      /^http:\/\/(\S+):(\d+)\/mcp$/m,
      { env },
    );
    try {
      const port = Number(proxy.match[2]);
      expect([host, proxy.match[1]]).toEqual([host, address]);
      expect([host, listeners(port)]).toEqual([host, [`${address}:${port}`]]);
    } finally {
      await proxy.stop();
    }
  }
});

test("a workload on --host ip6-localhost: its listener, the AI client's entry, list and export all say ::1, and an MCP client gets its tools there", async () => {
  runCliOk(env, ["group", "create", "v6"]);
  installClients(home, env, ["cursor"]);
  runCliOk(env, ["client", "register", "cursor", "--group", "v6"]);
  const printed = runCliOk(env, [
    "run",
    probe,
    "--name",
    "lh6",
    "--group",
    "v6",
    "--host",
    "ip6-localhost",
    "--permission-profile",
    "none",
  ]).stdout.trim();
  const url = new URL(printed);
  expect(url.hostname).toBe("[::1]");
  expect(listeners(Number(url.port))).toEqual([`[::1]:${url.port}`]);
  const cursor = JSON.parse(readFileSync(join(home, ".cursor", "mcp.json"), "utf8")).mcpServers;
  expect(cursor.lh6).toEqual({ url: printed });
  const rows = JSON.parse(runCliOk(env, ["list", "--format", "json"]).stdout) as { name: string; url: string }[];
  expect(rows.find((row) => row.name === "lh6")?.url).toBe(printed);
  const exported = join(home, "lh6.json");
  runCliOk(env, ["export", "lh6", exported]);
  expect(JSON.parse(readFileSync(exported, "utf8")).host).toBe("::1");
  const client = new Client({ name: "localhost-listen", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(url));
  expect((await client.listTools()).tools.length).toBeGreaterThan(0);
  await client.close();
});

test("an --oidc-audience naming localhost, where clients are given 127.0.0.1, is warned about at run and at each start, with the audience that fits", async () => {
  // MCP clients ask for a token for the URL they use (RFC 8707), which many authorization servers make
  // its audience: an audience written for http://localhost:PORT/mcp refuses every such token. A workload
  // recorded before `localhost` was named 127.0.0.1 keeps that audience, while its clients' entries change.
  const auth = await startAuthServer();
  // Spawned without blocking: the authorization server answers from this process.
  const cli = async (args: string[]) => {
    const result = await spawnCollect([process.execPath, CLI_ENTRY, ...args], env);
    if (result.code !== 0) throw new Error(`mcpmgr ${args.join(" ")} exited ${result.code}:\n${result.stderr}`);
    return result;
  };
  try {
    const port = await freePort();
    const audience = `http://localhost:${port}/mcp`;
    /** `run` of the probe on --host localhost at `port`, guarded by the issuer for `aud`. */
    const runWithAudience = (aud: string) =>
      cli([
        "run",
        probe,
        "--name",
        "lh-aud",
        "--host",
        "localhost",
        "--proxy-port",
        String(port),
        "--oidc-issuer",
        auth.issuer,
        "--oidc-audience",
        aud,
        "--oidc-insecure-allow-http",
        "--jwks-allow-private-ip",
        "--permission-profile",
        "none",
      ]);
    const run = await runWithAudience(audience);
    const warning = `--oidc-audience ${audience} names localhost, a name for loopback, but clients are given http://127.0.0.1:${port}/mcp`;
    expect(run.stdout.trim()).toBe(`http://127.0.0.1:${port}/mcp`);
    expect(run.stderr).toContain(warning);
    expect(run.stderr).toContain(`give --oidc-audience http://127.0.0.1:${port}/mcp`);
    expect((await cli(["restart", "lh-aud"])).stderr).toContain(warning);
    await cli(["rm", "lh-aud"]);

    // The audience the clients' URL gives: nothing to say.
    const fitting = await runWithAudience(`http://127.0.0.1:${port}/mcp`);
    expect(fitting.stderr).not.toContain("a name for loopback");
  } finally {
    await auth.stop();
  }
});

test('a workload recorded with host "localhost" (before it was recorded as 127.0.0.1) whose port another program took: start and list say so, also where /etc/hosts lists ::1 first', async () => {
  runCliOk(env, ["run", probe, "--name", "lh-old", "--host", "localhost", "--permission-profile", "none"]);
  runCliOk(env, ["stop", "lh-old"]);
  const file = join(home, ".mcpmgr", "state", "workloads", "lh-old", "workload.json");
  const record = JSON.parse(readFileSync(file, "utf8"));
  expect(record.host).toBe("127.0.0.1");
  writeFileSync(file, JSON.stringify({ ...record, host: "localhost" }));
  // The workload binds 127.0.0.1 (its options say localhost); the check that names the taker must look there too.
  const taker = Bun.serve({ hostname: "127.0.0.1", port: record.proxyPort, fetch: () => new Response("mine") });
  const hosts = join(home, "hosts-v6-first");
  writeFileSync(hosts, "::1 localhost ip6-localhost\n127.0.0.1 localhost\n");
  const underV6First = (args: string[]) =>
    spawnCollect(
      [
        "unshare",
        "--mount",
        "sh",
        "-c",
        `mount --bind ${hosts} /etc/hosts && exec ${process.execPath} ${CLI_ENTRY} ${args.join(" ")}`,
      ],
      env,
    );
  try {
    const start = await underV6First(["start", "lh-old"]);
    expect(start.code).not.toBe(0);
    expect(start.stderr).toContain(`another program listens there now ('lsof -i :${record.proxyPort}'`);
    const list = await underV6First(["list"]);
    expect(list.stdout + list.stderr).toContain(`another program listens there now ('lsof -i :${record.proxyPort}'`);
  } finally {
    await taker.stop(true);
  }
});

test('a supervisor an earlier mcpmgr started for host "localhost" on [::1]: list shows where it answers, and says in one line that a restart moves it', async () => {
  // That mcpmgr recorded "localhost" and left it to the resolver, which bound ::1 where /etc/hosts lists it
  // first; the record's URL now names 127.0.0.1, where nothing of the workload's listens. Made here as a
  // supervisor on ::1 whose record then says "localhost", as the earlier one's did.
  const printed = runCliOk(env, [
    "run",
    probe,
    "--name",
    "lh-v6-old",
    "--host",
    "::1",
    "--permission-profile",
    "none",
  ]).stdout.trim();
  const port = new URL(printed).port;
  const file = join(home, ".mcpmgr", "state", "workloads", "lh-v6-old", "workload.json");
  const record = JSON.parse(readFileSync(file, "utf8"));
  const runOptions = (record.runOptions as string[]).map((option) => (option === "::1" ? "localhost" : option));
  writeFileSync(file, JSON.stringify({ ...record, host: "localhost", runOptions }));
  const listed = runCliOk(env, ["list", "--format", "json"]);
  const rows = JSON.parse(listed.stdout) as { name: string; url: string; status: string }[];
  expect(rows.find((row) => row.name === "lh-v6-old")).toMatchObject({ status: "running", url: printed });
  expect(listed.stderr).toContain(
    `lh-v6-old's supervisor, started by an earlier mcpmgr, listens at http://[::1]:${port}/mcp, not at http://127.0.0.1:${port}/mcp where its clients' entries point (hint: 'mcpmgr restart lh-v6-old' moves it there)`,
  );
  // The workloads that answer where their URL says are not mentioned.
  expect(listed.stderr.split("\n").filter((line) => line.includes("started by an earlier mcpmgr"))).toHaveLength(1);

  // What the line says is the way out: restarted, it listens, and is listed, at 127.0.0.1.
  runCliOk(env, ["restart", "lh-v6-old"]);
  const after = runCliOk(env, ["list", "--format", "json"]);
  const moved = (JSON.parse(after.stdout) as { name: string; url: string }[]).find((row) => row.name === "lh-v6-old");
  expect(moved?.url).toBe(`http://127.0.0.1:${port}/mcp`);
  expect(listeners(Number(port))).toEqual([`127.0.0.1:${port}`]);
  expect(after.stderr).not.toContain("started by an earlier mcpmgr");
});
