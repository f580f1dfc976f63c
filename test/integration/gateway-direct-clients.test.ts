/**
 * A gateway with policies makes its members refuse everyone but itself, so AI clients registered
 * with the members directly (`client register CLIENT --group G` without `--gateway`) stop working
 * while it runs. At start it says so once, naming those clients and, for each, the command that
 * moves it to the gateway. Real `mcpmgr` processes with a temporary HOME (the clients' files)
 * and MCPMGR_HOME: the registrations are made by `client register`, and the command the warning
 * gives is run as written.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PROBE_FIXTURE, until } from "../support/gateway-group.ts";
import { CLI_ENTRY, type Running, spawnUntil } from "../support/processes.ts";
import { cliEnv, expectOneLineError, runCliOk } from "../support/cli-home.ts";
import { installClients } from "../support/client-home.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let home: string;
let packageDir: string;
const gateways: Running[] = [];

function env(): Record<string, string> {
  return cliEnv(home);
}

function mcpmgr(...args: string[]) {
  return runCliOk(env(), args);
}

/** A foreground `mcpmgr gateway`, once it serves; what it logged before that is in its output. */
async function gateway(...args: string[]): Promise<Running> {
  const running = await spawnUntil([process.execPath, CLI_ENTRY, "gateway", ...args], /^(http:\/\/\S+)$/m, {
    env: env(),
    timeoutMs: 30_000,
  });
  gateways.push(running);
  return running;
}

const warningIn = (output: string) =>
  output.split("\n").filter((line) => line.includes("registered with its workloads"));

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-direct-clients-"));
  packageDir = mkdtempSync(join(tmpdir(), "mcpmgr-direct-clients-pkg-"));
  await Bun.write(join(packageDir, "server.sh"), `#!/bin/sh\nexec ${process.execPath} ${PROBE_FIXTURE} "$@"\n`);
  await Bun.write(
    join(packageDir, "package.json"),
    JSON.stringify({ name: "probe-fixture", version: "1.0.0", bin: { "probe-fixture": "server.sh" } }),
  );
  installClients(home, env(), ["cursor", "zed", "claude-code", "goose", "gemini-cli", "lm-studio", "qwen-code"]);
  mcpmgr("group", "create", "team");
  mcpmgr("group", "create", "other");
  mcpmgr("run", `npx://${packageDir}`, "--name", "probe", "--group", "team", "--permission-profile", "none");
}, 120_000);

afterAll(async () => {
  await Promise.allSettled(gateways.map((g) => g.stop()));
  try {
    for (const row of JSON.parse(mcpmgr("list", "--format", "json").stdout) as { name: string }[])
      mcpmgr("rm", row.name);
  } finally {
    rmSync(home, { recursive: true, force: true });
    rmSync(packageDir, { recursive: true, force: true });
  }
});

test("a gateway with policies names the clients registered with its members directly, and how to switch them", async () => {
  // Cursor and Zed follow team per workload; Claude Code follows it through its background gateway; Goose another group.
  mcpmgr("gateway", "team", "--detach");
  mcpmgr("client", "register", "cursor", "--group", "team");
  mcpmgr("client", "register", "zed", "--group", "team");
  mcpmgr("client", "register", "claude-code", "--group", "team", "--gateway");
  mcpmgr("client", "register", "goose", "--group", "other");

  // Without policies the members stay open to those clients: nothing to say.
  const open = await gateway("team");
  expect(warningIn(open.output())).toEqual([]);
  await open.stop();

  const guarding = await gateway("team", "--tools", "probe_stats");
  const [warning, ...more] = warningIn(guarding.output());
  expect(more).toEqual([]);
  expect(warning).toContain("AI clients registered with its workloads directly (cursor, zed) are refused by them");
  expect(warning).toContain("'mcpmgr client register cursor --group team --gateway'");
  expect(warning).toContain("'mcpmgr client register zed --group team --gateway'");
  expect(warning).not.toContain("claude-code");
  expect(warning).not.toContain("goose");
  await guarding.stop();

  // The command, run as the warning gives it, moves Zed to the gateway: the next start names Cursor alone.
  const command = /'mcpmgr (client register zed [^']+)'/.exec(warning ?? "")?.[1] ?? "";
  mcpmgr(...command.split(" "));
  const again = await gateway("team", "--tools", "probe_stats");
  expect(warningIn(again.output())).toEqual([
    expect.stringContaining(
      "an AI client registered with its workloads directly (cursor) is refused by them while it runs",
    ),
  ]);
  expect(warningIn(again.output())[0]).not.toContain("zed");
});

test("a background gateway with policies names them in the terminal of 'gateway --detach', not only in its log", () => {
  // Cursor still follows team per workload (the test above moved Zed to the gateway).
  const detached = mcpmgr("gateway", "team", "--detach", "--name", "guarded", "--tools", "probe_stats");
  try {
    // A relay to a member is pointed at the gateway that guards it, not at gateway-team (no policies).
    const relay = Bun.spawnSync([process.execPath, CLI_ENTRY, "proxy", "stdio", "probe"], {
      env: env(),
      stdin: "ignore",
    });
    expect(relay.stderr.toString()).toContain("(hint: relay to the gateway instead: 'mcpmgr proxy stdio guarded';");
    expect(warningIn(detached.stderr)).toEqual([
      expect.stringContaining(
        // gateway-team (no policies) runs too: --gateway alone would be refused as ambiguous, and a client left
        // with gateway-team would reach the members past the policies.
        "[warn] gateway 'team': an AI client registered with its workloads directly (cursor) is refused by them while it runs; switch it to the gateway: stop the group's other background gateways ('mcpmgr stop gateway-team': a client gets one), then 'mcpmgr client register cursor --group team --gateway'",
      ),
    ]);
  } finally {
    mcpmgr("rm", "guarded");
  }
});

test("a client registered with the members while a gateway with policies runs is told at once, not left refused", async () => {
  // The gateway warned as it started; a registration made after that is the user's next chance to hear it.
  await gateway("team", "--tools", "probe_stats");
  try {
    const registered = mcpmgr("client", "register", "gemini-cli", "--group", "team");
    expect(registered.stderr).toContain(
      // The guarding gateway runs in the foreground, which no registration follows: --gateway alone would give
      // Gemini CLI gateway-team, which has no policies.
      "[warn] a gateway with policies serves group team: its workloads refuse Gemini CLI while that gateway runs; register it through the gateway instead: run the gateway with policies in the background ('mcpmgr gateway team --detach' with its options; a foreground one gets no client entry), stop the group's other background gateways ('mcpmgr stop gateway-team': a client gets one), then 'mcpmgr client register gemini-cli --group team --gateway'",
    );
    // Claude Desktop's relay to a member would have every request refused as an unreachable remote: one line instead.
    const relay = Bun.spawnSync([process.execPath, CLI_ENTRY, "proxy", "stdio", "probe"], {
      env: env(),
      stdin: "ignore",
    });
    const line = expectOneLineError(
      { code: relay.exitCode, stdout: relay.stdout.toString(), stderr: relay.stderr.toString() },
      1,
    );
    // The guarding gateway runs in the foreground; gateway-team, in the background, has no policies: relayed
    // to, it would serve the members past the policies, so the hint does not name it.
    expect(line).toBe(
      "[error] workload probe answers only its group's gateway while a gateway with policies serves group team (hint: relay to the gateway instead: 'mcpmgr proxy stdio URL' with the gateway's URL (a foreground gateway's is in its terminal); for Claude Desktop: run the gateway with policies in the background ('mcpmgr gateway team --detach' with its options; a foreground one gets no client entry), stop the group's other background gateways ('mcpmgr stop gateway-team': a client gets one), then 'mcpmgr client register claude-desktop --group team --gateway')",
    );
    // Given the member's URL instead of its name (however written: localhost, a trailing slash, below), the same line,
    // not a relay whose every request comes back "refused (HTTP 403)".
    const probeUrl = new URL(
      (JSON.parse(mcpmgr("list", "--format", "json").stdout) as { name: string; url: string }[]).find(
        (row) => row.name === "probe",
      )?.url ?? "",
    );
    // 0.0.0.0 and the IPv4-mapped loopback are connected to the same listener (Linux): they were relayed.
    for (const url of [
      probeUrl.href,
      `http://localhost:${probeUrl.port}${probeUrl.pathname}/`,
      `http://0.0.0.0:${probeUrl.port}${probeUrl.pathname}`,
      `http://[::ffff:127.0.0.1]:${probeUrl.port}${probeUrl.pathname}`,
    ]) {
      const byUrl = Bun.spawnSync([process.execPath, CLI_ENTRY, "proxy", "stdio", url], {
        env: env(),
        stdin: "ignore",
      });
      const refused = expectOneLineError(
        { code: byUrl.exitCode, stdout: byUrl.stdout.toString(), stderr: byUrl.stderr.toString() },
        1,
      );
      expect(refused).toBe(line);
    }
    // A member that starts meanwhile gets its entries in those clients, and the run says they are refused.
    try {
      const started = mcpmgr(
        "run",
        `npx://${packageDir}`,
        "--name",
        "probe2",
        "--group",
        "team",
        "--permission-profile",
        "none",
      );
      expect(started.stderr).toContain(
        "[warn] probe2 refuses these clients while a gateway with policies serves group team; switch each to the gateway: " +
          ["cursor", "gemini-cli"]
            .map(
              (client) =>
                `run the gateway with policies in the background ('mcpmgr gateway team --detach' with its options; a foreground one gets no client entry), stop the group's other background gateways ('mcpmgr stop gateway-team': a client gets one), then 'mcpmgr client register ${client} --group team --gateway'`,
            )
            .join(", "),
      );
    } finally {
      mcpmgr("rm", "probe2");
    }
    // Another group, and the gateway's own registration, have nothing to be told.
    expect(mcpmgr("client", "register", "lm-studio", "--group", "other").stderr).not.toContain("policies");
    expect(mcpmgr("client", "register", "qwen-code", "--group", "team", "--gateway").stderr).not.toContain("policies");
  } finally {
    // This one and those the tests above left running (the one that named Cursor alone).
    await Promise.all(gateways.map((running) => running.stop()));
  }
  // Once no gateway with policies runs, the members answer direct callers again: nothing to warn about.
  expect(mcpmgr("client", "register", "gemini-cli", "--group", "team").stderr).not.toContain("policies");
});

/** A foreground `mcpmgr run` of the probe fixture in group team, once it serves. */
function foregroundRun(name: string): Promise<Running & { match: RegExpExecArray }> {
  return spawnUntil(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      `npx://${packageDir}`,
      "--foreground",
      "--name",
      name,
      "--group",
      "team",
      "--permission-profile",
      "none",
    ],
    /^(http:\/\/\S+)$/m,
    { env: env(), timeoutMs: 30_000 },
  );
}

/** Whether a real SDK client gets the tools of the endpoint; what refused it, if something did. */
async function listsTools(url: string): Promise<true | string> {
  const client = new Client({ name: "direct", version: "1" });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    await client.listTools();
    return true;
  } catch (err) {
    return String(err);
  } finally {
    await client.close().catch(() => {});
  }
}

test("a foreground run stays out of a group a gateway with policies guards: no gateway serves it, and it never answers past the policies", async () => {
  const foreground = await foregroundRun("fg");
  const url = foreground.match[1] as string;
  let guarding: Running | undefined;
  try {
    expect(await listsTools(url)).toBe(true);
    // A gateway with policies starts for the group: the run keeps refusing direct callers (the clients'
    // entries included), and says so once, with the way out.
    guarding = await gateway("team", "--tools", "probe_stats");
    const said = () =>
      foreground
        .output()
        .split("\n")
        .filter((line) => line.includes("fg answers nobody now"));
    expect(await until(() => said().length === 1)).toBe(true);
    expect(said()[0]).toBe(
      "[warn] fg answers nobody now: a gateway with policies serves group team, and fg refuses every caller but that gateway, which serves no foreground run (its entries in cursor, gemini-cli are refused too); stop it (Ctrl-C) and run it in the background so the gateway serves it (the same command without --foreground), or put it in another group (--group NAME)",
    );
    // Refused within the second a member may keep its last look at the guard (as every member does).
    const last: { answer: true | string } = { answer: true };
    expect(await until(async () => (last.answer = await listsTools(url)) !== true)).toBe(true);
    expect(last.answer).toContain("fg is a foreground run in group 'team'");
    expect(last.answer).toContain("run it in the background so the gateway serves it");
    expect(said()).toHaveLength(1);

    // Claude Desktop's entry for it (`proxy stdio fg`) is refused at start in one line, as for a member,
    // rather than relaying requests that all come back 403.
    const relay = Bun.spawnSync([process.execPath, CLI_ENTRY, "proxy", "stdio", "fg"], { env: env(), stdin: "ignore" });
    expect(
      expectOneLineError({ code: relay.exitCode, stdout: relay.stdout.toString(), stderr: relay.stderr.toString() }, 1),
    ).toBe(
      "[error] the foreground run fg refuses every caller while a gateway with policies serves group team, and no gateway serves a foreground run (hint: stop it (Ctrl-C in its terminal) and run it in the background so the gateway serves it (the same command without --foreground), then relay to the gateway; or put it in another group (--group NAME))",
    );
    // Given its URL instead of its name (a run has no record, only its claim): the same line, not a relay of 403s.
    const port = new URL(url).port;
    for (const byUrl of [url, `http://localhost:${port}/mcp/`]) {
      const relayed = Bun.spawnSync([process.execPath, CLI_ENTRY, "proxy", "stdio", byUrl], {
        env: env(),
        stdin: "ignore",
      });
      expect(
        expectOneLineError(
          { code: relayed.exitCode, stdout: relayed.stdout.toString(), stderr: relayed.stderr.toString() },
          1,
        ),
      ).toContain("[error] the foreground run fg refuses every caller while a gateway with policies serves group team");
    }

    // Another foreground run there is refused before anything starts: one line, with the way out.
    const second = Bun.spawnSync(
      [
        process.execPath,
        CLI_ENTRY,
        "run",
        `npx://${packageDir}`,
        "--foreground",
        "--name",
        "fg2",
        "--group",
        "team",
        "--permission-profile",
        "none",
      ],
      { env: env(), stdin: "ignore" },
    );
    const line = expectOneLineError(
      { code: second.exitCode, stdout: second.stdout.toString(), stderr: second.stderr.toString() },
      1,
    );
    expect(line).toBe(
      "[error] a gateway with policies serves group team, and it serves no foreground run: fg2 would refuse every caller but that gateway (hint: run it in the background so the gateway serves it (the same command without --foreground), or put it in another group (--group NAME))",
    );

    // Once that gateway is gone, the run answers its callers again.
    await guarding.stop();
    expect(await until(() => foreground.output().includes("fg answers its callers again"))).toBe(true);
    expect(await listsTools(url)).toBe(true);
  } finally {
    await guarding?.stop();
    await foreground.stop();
  }
});
