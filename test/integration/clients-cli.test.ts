/**
 * `mcpmgr group` and `mcpmgr client` as a user drives them, in subprocesses with a temporary
 * HOME (where the AI clients' files live) and MCPMGR_HOME: groups, client registration with a
 * real running workload (a remote workload in front of a real MCP server), Claude Desktop's
 * stdio entry started as Claude Desktop would start it, and `group rm --with-workloads`.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CLIENT_IDS } from "../../src/clients/types.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";
import { cliEnv, expectOneLineError, runCli } from "../support/cli-home.ts";
import { installClients } from "../support/client-home.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

let home: string;
let mcpmgrHome: string;

function env(): Record<string, string> {
  return cliEnv(home, mcpmgrHome);
}

function mcpmgr(...args: string[]) {
  return runCli(env(), args);
}

const failure = expectOneLineError;

const json = <T>(text: string): T => JSON.parse(text) as T;

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-clients-cli-"));
  mcpmgrHome = join(home, ".mcpmgr");
});
afterAll(() => {
  mcpmgr("group", "rm", "team", "--with-workloads");
  rmSync(home, { recursive: true, force: true });
});

describe("mcpmgr group", () => {
  test("create, list (text and JSON) and rm", () => {
    expect(mcpmgr("group", "create", "scratch").code).toBe(0);
    const text = mcpmgr("group", "list");
    expect(text.code).toBe(0);
    expect(text.stdout).toBe("NAME     WORKLOADS  CLIENTS\ndefault  0          -\nscratch  0          -\n");
    const rows = json<{ name: string; workloads: string[]; clients: string[]; createdAt?: string }[]>(
      mcpmgr("group", "list", "--format", "json").stdout,
    );
    expect(rows.map((row) => row.name)).toEqual(["default", "scratch"]);
    expect(rows[1]?.createdAt).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(mcpmgr("group", "rm", "scratch").code).toBe(0);
    expect(json<unknown[]>(mcpmgr("group", "list", "--format", "json").stdout)).toHaveLength(1);
  });

  test("bad requests are one line with a hint", () => {
    expect(failure(mcpmgr("group", "create", "Bad Name"), 2)).toContain("is not a valid group name");
    mcpmgr("group", "create", "twice");
    expect(failure(mcpmgr("group", "create", "twice"), 1)).toContain("already exists");
    const undeletable = failure(mcpmgr("group", "rm", "default"), 2);
    expect(undeletable).toContain("the default group cannot be removed");
    // The one command that empties it (rm takes --group), not one rm per workload.
    expect(undeletable).toContain("'mcpmgr rm --group default'");
    expect(failure(mcpmgr("group", "rm", "ghost"), 1)).toContain("no group named ghost");
    expect(failure(mcpmgr("group", "create"), 2)).toContain("missing NAME: group name");
    expect(failure(mcpmgr("group"), 2)).toContain("no group command given");
    expect(failure(mcpmgr("group", "list", "--format", "yaml"), 2)).toContain("--format");
  });
});

describe("mcpmgr client without workloads", () => {
  test("status shows every client, installed or not, with its file", () => {
    mkdirSync(join(home, ".cursor"), { recursive: true });
    const rows = json<{ id: string; installed: boolean; configPath: string; groups: string[] }[]>(
      mcpmgr("client", "status", "--format", "json").stdout,
    );
    expect(rows.map((row) => row.id)).toEqual([...CLIENT_IDS]);
    expect(rows.filter((row) => row.installed).map((row) => row.id)).toEqual(["cursor"]);
    expect(rows.find((row) => row.id === "codex")?.configPath).toBe(join(home, ".codex", "config.toml"));
    expect(mcpmgr("client", "status").stdout).toMatch(/^CLIENT\s+INSTALLED\s+GROUPS\s+CONFIG\n/);
  });

  test("register, list-registered-clients and remove", () => {
    const registered = mcpmgr("client", "register", "cursor");
    expect(registered.code).toBe(0);
    expect(registered.stderr).toContain("Cursor follows group default");
    expect(mcpmgr("client", "list-registered-clients").stdout).toBe("CLIENT  GROUPS\ncursor  default\n");
    expect(json(mcpmgr("client", "list-registered-clients", "--format", "json").stdout)).toEqual([
      { client: "cursor", groups: ["default"], viaGateway: [] },
    ]);
    // A group the client does not follow is a mistake, refused with nothing changed.
    expect(failure(mcpmgr("client", "remove", "cursor", "--group", "nosuch"), 2)).toContain(
      "Cursor does not follow group nosuch",
    );
    expect(json(mcpmgr("client", "list-registered-clients", "--format", "json").stdout)).toHaveLength(1);
    const removed = mcpmgr("client", "remove", "cursor");
    expect(removed.code).toBe(0);
    expect(removed.stderr).toContain("Cursor no longer follows group default");
    expect(json(mcpmgr("client", "list-registered-clients", "--format", "json").stdout)).toEqual([]);
    // Without --group, a client that follows nothing is left as it is: one line, no success claimed.
    const again = mcpmgr("client", "remove", "cursor");
    expect(again.code).toBe(0);
    expect(again.stderr.trim().split("\n")).toEqual([
      expect.stringContaining("Cursor follows no group; nothing changed"),
    ]);
  });

  test("a client that is not installed is refused in one line, and its folder is not made", () => {
    const refused = failure(mcpmgr("client", "register", "windsurf"), 2);
    expect(refused).toBe(
      `[error] Windsurf does not look installed here: ${join(home, ".codeium", "windsurf")} does not exist (hint: install Windsurf and start it once (it makes its folder), then register it again; to write its file anyway, make ${join(home, ".codeium", "windsurf")} yourself first; 'mcpmgr client status' shows which clients look installed)`,
    );
    expect(existsSync(join(home, ".codeium"))).toBe(false);
    expect(json(mcpmgr("client", "list-registered-clients", "--format", "json").stdout)).toEqual([]);
    const status = json<{ id: string; installed: boolean }[]>(mcpmgr("client", "status", "--format", "json").stdout);
    expect(status.find((row) => row.id === "windsurf")?.installed).toBe(false);
    // Its folder made (by installing it, or by hand), it is registered.
    mkdirSync(join(home, ".codeium", "windsurf"), { recursive: true });
    expect(mcpmgr("client", "register", "windsurf").code).toBe(0);
    expect(mcpmgr("client", "remove", "windsurf").code).toBe(0);
    rmSync(join(home, ".codeium"), { recursive: true, force: true });
    // setup, where no client is installed, has none to offer: one line too, before any question.
    const bare = mkdtempSync(join(tmpdir(), "mcpmgr-clients-bare-"));
    try {
      expect(
        failure(runCli({ ...env(), HOME: bare, MCPMGR_HOME: join(bare, ".mcpmgr") }, ["client", "setup"]), 2),
      ).toBe(
        "[error] no supported AI client looks installed here (hint: install one and start it once (it makes its folder), then run 'mcpmgr client setup' again; 'mcpmgr client status' lists the clients mcpmgr knows)",
      );
    } finally {
      rmSync(bare, { recursive: true, force: true });
    }
  });

  test("unknown clients and groups are refused; setup without a terminal says which command to use", () => {
    expect(failure(mcpmgr("client", "register", "notepad"), 2)).toContain('"notepad" is not a client mcpmgr knows');
    expect(failure(mcpmgr("client", "register", "cursor", "--group", "nope"), 1)).toContain("no group named nope");
    // A name no group can have is refused as such, never offered back as 'mcpmgr group create Bad Name'.
    const badName = failure(mcpmgr("client", "register", "cursor", "--group", "Bad Name"), 2);
    expect(badName).toContain('"Bad Name" is not a valid group name');
    expect(badName).not.toContain("group create");
    const setup = failure(mcpmgr("client", "setup"), 2);
    expect(setup).toContain("mcpmgr client register CLIENT [--group GROUP]");
    expect(setup).toContain("installed here: cursor");
  });
});

test("setup on a terminal asks which installed clients should follow which group, and registers them", async () => {
  const own = mkdtempSync(join(tmpdir(), "mcpmgr-clients-setup-"));
  const ownEnv = { ...env(), HOME: own, MCPMGR_HOME: join(own, ".mcpmgr"), TERM: "xterm" };
  try {
    mkdirSync(join(own, ".cursor"));
    mkdirSync(join(own, ".codex"));
    const created = Bun.spawnSync([process.execPath, CLI_ENTRY, "group", "create", "team-x"], { env: ownEnv });
    expect(created.exitCode).toBe(0);
    // script(1) gives the command a terminal; the keys are typed into it.
    const command = `stty cols 120 rows 40; ${process.execPath} ${CLI_ENTRY} client setup`;
    const proc = Bun.spawn(["script", "-qfec", command, "/dev/null"], {
      cwd: REPO_ROOT,
      env: ownEnv,
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    });
    let screen = "";
    void (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of proc.stdout) screen += decoder.decode(chunk);
    })();
    const shown = async (text: string) => {
      const deadline = Date.now() + 20_000;
      while (!screen.includes(text) && Date.now() < deadline) await Bun.sleep(50);
      expect(screen).toContain(text);
    };
    // A key that changes the choice: typed, then waited for until the prompt has drawn the change.
    const press = async (key: string) => {
      const drawn = screen.length;
      proc.stdin.write(key);
      const deadline = Date.now() + 20_000;
      while (screen.length === drawn && Date.now() < deadline) await Bun.sleep(20);
      expect(screen.length).toBeGreaterThan(drawn);
    };
    await shown("Which AI clients should follow a group?");
    // Only the installed clients are offered, Cursor first: space selects it, Enter confirms.
    expect(screen).toContain("Cursor");
    expect(screen).toContain("Codex CLI");
    expect(screen).not.toContain("Windsurf");
    await press(" ");
    proc.stdin.write("\r");
    await shown("Which group should they follow?");
    await press("\x1b[B"); // down to team-x
    proc.stdin.write("\r");
    expect(await proc.exited).toBe(0);
    expect(screen).toContain("Cursor follows group team-x");
    const listed = Bun.spawnSync(
      [process.execPath, CLI_ENTRY, "client", "list-registered-clients", "--format", "json"],
      {
        env: ownEnv,
      },
    );
    expect(json(listed.stdout.toString())).toEqual([{ client: "cursor", groups: ["team-x"], viaGateway: [] }]);
  } finally {
    rmSync(own, { recursive: true, force: true });
  }
}, 60_000);

test("Ctrl-C at setup's first question changes nothing and exits 130, as at any prompt", async () => {
  const own = mkdtempSync(join(tmpdir(), "mcpmgr-clients-setup-cancel-"));
  const ownEnv = { ...env(), HOME: own, MCPMGR_HOME: join(own, ".mcpmgr"), TERM: "xterm" };
  try {
    mkdirSync(join(own, ".cursor"));
    const command = `stty cols 120 rows 40; ${process.execPath} ${CLI_ENTRY} client setup`;
    const proc = Bun.spawn(["script", "-qfec", command, "/dev/null"], {
      cwd: REPO_ROOT,
      env: ownEnv,
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    });
    let screen = "";
    void (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of proc.stdout) screen += decoder.decode(chunk);
    })();
    const deadline = Date.now() + 20_000;
    while (!screen.includes("Which AI clients should follow a group?") && Date.now() < deadline) await Bun.sleep(50);
    proc.stdin.write("\x03");
    expect(await proc.exited).toBe(130);
    expect(screen).toContain("setup cancelled; nothing changed");
    const listed = Bun.spawnSync(
      [process.execPath, CLI_ENTRY, "client", "list-registered-clients", "--format", "json"],
      {
        env: ownEnv,
      },
    );
    expect(json(listed.stdout.toString())).toEqual([]);
  } finally {
    rmSync(own, { recursive: true, force: true });
  }
}, 60_000);

describe("mcpmgr client with a running workload", () => {
  let fixture: { url: string; stop(): Promise<unknown> };
  let url: string;

  beforeAll(async () => {
    const { startConformanceServer } = await import("../support/conformance.ts");
    fixture = await startConformanceServer();
    expect(mcpmgr("group", "create", "team").code).toBe(0);
    const started = mcpmgr("run", fixture.url, "--name", "remote-tools", "--group", "team");
    expect(started.code).toBe(0);
    url = started.stdout.trim();
  }, 120_000);
  afterAll(async () => {
    await fixture?.stop();
  });

  test("registering a client for the group writes the running workload into its file at once", () => {
    const result = mcpmgr("client", "register", "cursor", "--group", "team");
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(`added remote-tools in Cursor (${join(home, ".cursor", "mcp.json")})`);
    expect(json(readFileSync(join(home, ".cursor", "mcp.json"), "utf8"))).toEqual({
      mcpServers: { "remote-tools": { url } },
    });
    expect(mcpmgr("group", "list").stdout).toContain("team     1          cursor");
  });

  test("a client whose file cannot take the running workload is told so, never that none runs", () => {
    const path = join(home, ".codeium", "windsurf", "mcp_config.json");
    mkdirSync(join(home, ".codeium", "windsurf"), { recursive: true });
    writeFileSync(path, "[]\n");
    const result = mcpmgr("client", "register", "windsurf", "--group", "team");
    expect(result.code).toBe(0);
    expect(result.stderr).toContain("the top level is not an object; mcpmgr left it unchanged");
    expect(result.stderr).toContain(
      "Windsurf follows group team (1 running workload(s) not written, see the warning above)",
    );
    expect(result.stderr).not.toContain("no workload of it runs yet");
    expect(readFileSync(path, "utf8")).toBe("[]\n");
    expect(mcpmgr("client", "remove", "windsurf").code).toBe(0);
  });

  test("a client file that cannot be parsed is warned about once, not at every step or command (walk 3, polish41)", () => {
    const path = join(home, ".lmstudio", "mcp.json");
    mkdirSync(join(home, ".lmstudio"), { recursive: true });
    expect(mcpmgr("client", "register", "lm-studio", "--group", "team").code).toBe(0);
    writeFileSync(path, "{ broken\n");
    const warnings = (stderr: string) => stderr.split("\n").filter((line) => line.includes(`LM Studio (${path})`));
    // The entry's record stays (the file could not be read): the start prunes it, then writes the new one.
    expect(warnings(mcpmgr("stop", "remote-tools").stderr)).toHaveLength(1);
    // The same broken file at the next command: said already (clients-broken-file-cli.test.ts); client status says it.
    const started = mcpmgr("start", "remote-tools");
    expect(started.code).toBe(0);
    expect(warnings(started.stderr)).toEqual([]);
    expect(warnings(mcpmgr("client", "status").stderr)).toEqual([
      expect.stringContaining("it is not valid JSON (line 1, column 3"),
    ]);
    expect(readFileSync(path, "utf8")).toBe("{ broken\n");
    expect(mcpmgr("client", "remove", "lm-studio").code).toBe(0);
  });

  test("Claude Desktop's entry runs this mcpmgr's proxy stdio, and answers MCP like the workload", async () => {
    installClients(home, env(), ["claude-desktop"]);
    expect(mcpmgr("client", "register", "claude-desktop", "--group", "team").code).toBe(0);
    const config = json<{
      mcpServers: Record<string, { command: string; args: string[]; env: Record<string, string> }>;
    }>(readFileSync(join(home, ".config", "Claude", "claude_desktop_config.json"), "utf8"));
    const entry = config.mcpServers["remote-tools"];
    expect(entry).toEqual({
      command: process.execPath,
      args: [CLI_ENTRY, "proxy", "stdio", "remote-tools"],
      env: { MCPMGR_HOME: mcpmgrHome },
    });
    // Started the way Claude Desktop starts it: the command, its arguments, the entry's environment.
    const client = new Client({ name: "claude-desktop-like", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: entry?.command as string,
        args: entry?.args,
        env: { PATH: process.env.PATH ?? "", HOME: home, ...entry?.env },
        stderr: "ignore",
      }),
    );
    try {
      expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    } finally {
      await client.close();
    }
  }, 60_000);

  test("with XDG base directories instead of MCPMGR_HOME, Claude Desktop's entry carries them, so its relay finds the workload", async () => {
    // Another user's setup: XDG_* set in the shell profile, which a desktop app (macOS always) does not see.
    const xdgHome = mkdtempSync(join(tmpdir(), "mcpmgr-clients-xdg-"));
    const { MCPMGR_HOME: _unused, ...base } = cliEnv(xdgHome);
    const xdg = {
      ...base,
      XDG_CONFIG_HOME: join(xdgHome, "xdg", "config"),
      XDG_DATA_HOME: join(xdgHome, "xdg", "data"),
      XDG_STATE_HOME: join(xdgHome, "xdg", "state"),
    };
    const cli = (...args: string[]) => runCli(xdg, args);
    try {
      expect(cli("run", fixture.url, "--name", "xdg-tools").code).toBe(0);
      installClients(xdgHome, xdg, ["claude-desktop"]);
      expect(cli("client", "register", "claude-desktop").code).toBe(0);
      const entry = json<{
        mcpServers: Record<string, { command: string; args: string[]; env?: Record<string, string> }>;
      }>(readFileSync(join(xdg.XDG_CONFIG_HOME, "Claude", "claude_desktop_config.json"), "utf8")).mcpServers[
        "xdg-tools"
      ];
      expect(entry?.env).toEqual({
        XDG_CONFIG_HOME: xdg.XDG_CONFIG_HOME,
        XDG_DATA_HOME: xdg.XDG_DATA_HOME,
        XDG_STATE_HOME: xdg.XDG_STATE_HOME,
      });
      const client = new Client({ name: "claude-desktop-like", version: "1.0.0" });
      await client.connect(
        new StdioClientTransport({
          command: entry?.command as string,
          args: entry?.args,
          env: { PATH: process.env.PATH ?? "", HOME: xdgHome, ...entry?.env },
          stderr: "ignore",
        }),
      );
      try {
        expect((await client.listTools()).tools.length).toBeGreaterThan(0);
      } finally {
        await client.close();
      }
    } finally {
      cli("rm", "xdg-tools");
      rmSync(xdgHome, { recursive: true, force: true });
    }
  }, 60_000);

  test("the Cline CLI's file under CLINE_DIR gets the workload in the form `cline mcp add` writes, and is given back on remove", async () => {
    // What Cline CLI 3.0.65 wrote for `cline mcp add filesystem --yes -- npx …` and `… remote-docs --transport http URL`.
    const clineDir = join(home, "cline-config");
    const path = join(clineDir, "data", "settings", "cline_mcp_settings.json");
    mkdirSync(join(clineDir, "data", "settings"), { recursive: true });
    const seed = readFileSync(join(REPO_ROOT, "test/fixtures/clients/seed/cline-cli.json"), "utf8");
    writeFileSync(path, seed);
    const withCline = { ...env(), CLINE_DIR: clineDir };
    const status = json<{ id: string; installed: boolean; configPath: string }[]>(
      runCli(withCline, ["client", "status", "--format", "json"]).stdout,
    ).find((row) => row.id === "cline-cli");
    expect(status).toEqual(expect.objectContaining({ installed: true, configPath: path }));
    const registered = runCli(withCline, ["client", "register", "cline-cli", "--group", "team"]);
    expect(registered.code).toBe(0);
    expect(registered.stderr).toContain(`added remote-tools in Cline CLI (${path})`);
    const servers = json<{ mcpServers: Record<string, { transport: { type: string; url: string } }> }>(
      readFileSync(path, "utf8"),
    ).mcpServers;
    expect(Object.keys(servers)).toEqual(["filesystem", "remote-docs", "remote-tools"]);
    expect(servers["remote-tools"]).toEqual({ transport: { type: "streamableHttp", url } });
    // The entry's URL answers MCP.
    const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
    const client = new Client({ name: "cline-cli-entry", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(servers["remote-tools"]?.transport.url as string)));
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await client.close();
    expect(runCli(withCline, ["client", "remove", "cline-cli"]).code).toBe(0);
    expect(readFileSync(path, "utf8")).toBe(seed);
    // Without CLINE_DIR the CLI's default folder is meant, which does not exist here.
    expect(existsSync(join(home, ".cline"))).toBe(false);
  }, 60_000);

  test("group rm refuses a group with workloads; --with-workloads removes them and their client entries", () => {
    expect(failure(mcpmgr("group", "rm", "team"), 1)).toContain("still has 1 workload(s): remote-tools");
    const removed = mcpmgr("group", "rm", "team", "--with-workloads");
    expect(removed.code).toBe(0);
    expect(removed.stderr).toContain("removed workload remote-tools");
    // The clients that followed it are told they follow it no more, as 'client remove' tells them.
    expect(removed.stderr).toContain("[info] Cursor no longer follows group team, which is gone");
    expect(json<unknown[]>(mcpmgr("list", "--format", "json").stdout)).toEqual([]);
    // mcpmgr made the file's mcpServers: it went with the last entry.
    expect(json(readFileSync(join(home, ".cursor", "mcp.json"), "utf8"))).toEqual({});
    expect(json(mcpmgr("client", "list-registered-clients", "--format", "json").stdout)).toEqual([]);
    // mcpmgr created Cursor's file: there was nothing of the user's to back up.
    expect(existsSync(join(mcpmgrHome, "data", "client-backups", "cursor", "mcp.json"))).toBe(false);
    expect(existsSync(join(mcpmgrHome, "data", "client-backups", "cursor", "mcp.json.created"))).toBe(true);
  }, 60_000);
});
