/**
 * `mcpmgr run --foreground` with the process runtime: real stdio servers launched by
 * npx under the bwrap sandbox, behind the stdio bridge, used by the SDK client.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { expectOneLineError, runCli } from "../support/cli-home.ts";
import { CLI_ENTRY, REPO_ROOT, freePort, spawnUntil } from "../support/processes.ts";
import { eventually } from "../support/raw-http.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const PROBE = "npx://./test/fixtures/sandbox-probe";

/** One mcpmgr command to its end, in this test process's environment (its MCPMGR_HOME). */
const cli = (...args: string[]) => runCli({ ...process.env, NO_COLOR: "1" } as Record<string, string>, args);

async function runForeground(args: string[], env: Record<string, string> = {}) {
  const running = await spawnUntil([process.execPath, CLI_ENTRY, "run", "--foreground", ...args], /^(http:\/\/\S+)$/m, {
    env,
    timeoutMs: 30_000,
  });
  const client = new Client({ name: "run-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(running.match[1] as string)));
  const call = async (name: string, args: Record<string, unknown>) => {
    const result = (await client.callTool({ name, arguments: args })) as { content: { text: string }[] };
    return result.content[0]?.text;
  };
  return { ...running, client, call };
}

test("server-everything from npx:// answers the SDK client; Ctrl-C stops cleanly", async () => {
  const run = await runForeground(["npx://@modelcontextprotocol/server-everything"]);
  try {
    const { tools } = await run.client.listTools();
    expect(tools.map((t) => t.name)).toContain("echo");
    expect(await run.call("echo", { message: "bridged" })).toContain("bridged");
    await run.client.close();
  } finally {
    expect(await run.stop("SIGINT")).toBe(0);
  }
  expect(run.output()).toContain("SIGINT");
}, 60_000);

describe("the sandbox enforces the permission profile", () => {
  let loopback: Bun.TCPSocketListener<undefined>;
  let scratch: string;
  let homeFile: string;

  beforeAll(async () => {
    loopback = Bun.listen({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        data() {},
        open(socket) {
          socket.end();
        },
      },
    });
    scratch = await mkdtemp(join(tmpdir(), "mcpmgr-sandbox-"));
    homeFile = join(homedir(), `.mcpmgr-sandbox-probe-${process.pid}`);
    await writeFile(homeFile, "private");
  });

  afterAll(async () => {
    loopback.stop(true);
    await rm(scratch, { recursive: true, force: true });
    await rm(homeFile, { force: true });
  });

  test("profile none: no network, home hidden, host read-only, volumes as asked", async () => {
    const roDir = await mkdtemp(join(scratch, "ro-"));
    const run = await runForeground(
      [
        PROBE,
        "--permission-profile",
        "none",
        "-v",
        `${scratch}:${scratch}`,
        "-v",
        `${roDir}:${roDir}:ro`,
        "-e",
        "PROBE_SETTING=on",
      ],
      { HOST_ONLY_SECRET: "leak" },
    );
    try {
      expect(await run.call("tcp_connect", { host: "127.0.0.1", port: loopback.port })).not.toBe("connected");
      expect(await run.call("read_file", { path: homeFile })).toBe("ENOENT");
      expect(await run.call("write_file", { path: join(REPO_ROOT, "sandbox-escape.txt") })).toBe("EROFS");
      expect(await run.call("write_file", { path: join(scratch, "allowed.txt"), text: "ok" })).toBe("written");
      expect(await Bun.file(join(scratch, "allowed.txt")).text()).toBe("ok");
      expect(await run.call("write_file", { path: join(roDir, "denied.txt") })).toBe("EROFS");
      expect(await run.call("env", { name: "PROBE_SETTING" })).toBe("on");
      expect(await run.call("env", { name: "HOST_ONLY_SECRET" })).toBe("(unset)");
      await run.client.close();
    } finally {
      await run.stop();
    }
  }, 60_000);

  test("profile network: outbound connections work", async () => {
    const run = await runForeground([PROBE, "--permission-profile", "network"]);
    try {
      expect(await run.call("tcp_connect", { host: "127.0.0.1", port: loopback.port })).toBe("connected");
      await run.client.close();
    } finally {
      await run.stop();
    }
  }, 60_000);
});

test("arguments after -- reach the server; non-JSON stdout lines are skipped and logged", async () => {
  const run = await runForeground([PROBE, "--", "--noise"]);
  try {
    expect(await run.call("env", { name: "PATH" })).not.toBe("(unset)");
    // Logged on stderr, a pipe of its own: it may be read after the answer.
    await eventually(() => run.output().includes("skipped a non-JSON line"), 10_000, "the skipped-line log");
    await run.client.close();
  } finally {
    await run.stop();
  }
}, 60_000);

test("a server that dies at start-up is reported with the tail of its output", () => {
  const result = Bun.spawnSync(
    [process.execPath, CLI_ENTRY, "run", "--foreground", "npx://./test/fixtures/exits-early"],
    { cwd: REPO_ROOT, env: { ...process.env, NO_COLOR: "1" } },
  );
  expect(result.exitCode).toBe(1);
  const stderr = result.stderr.toString();
  expect(stderr).toMatch(/exited with code 3 \(hint: [^\n]*\)\n {2}fatal: MY_API_KEY is not set$/m);
  expect(stderr).not.toContain("--debug");
  expect(stderr).not.toContain("    at ");
}, 30_000);

test("environment: --env-file-dir < --env-file < -e, plus secrets from the secrets manager", async () => {
  const dir = await mkdtemp(join(tmpdir(), "mcpmgr-env-"));
  try {
    await Bun.write(join(dir, "envdir/a.env"), "FROM_DIR=dir\nOVERRIDDEN=dir\n");
    await Bun.write(join(dir, "file.env"), '# comment\nFROM_FILE="quoted value"\nOVERRIDDEN=file\n');
    const run = await runForeground(
      [
        PROBE,
        "--env-file-dir",
        join(dir, "envdir"),
        "--env-file",
        join(dir, "file.env"),
        "-e",
        "OVERRIDDEN=flag",
        "--secret",
        "api-token,target=API_TOKEN",
      ],
      { MCPMGR_SECRETS_PROVIDER: "environment", MCPMGR_SECRET_API_TOKEN: "s3cret-value" },
    );
    try {
      expect(await run.call("env", { name: "FROM_DIR" })).toBe("dir");
      expect(await run.call("env", { name: "FROM_FILE" })).toBe("quoted value");
      expect(await run.call("env", { name: "OVERRIDDEN" })).toBe("flag");
      expect(await run.call("env", { name: "API_TOKEN" })).toBe("s3cret-value");
      expect(run.output()).not.toContain("s3cret-value");
      await run.client.close();
    } finally {
      await run.stop();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}, 60_000);

test("a missing secret stops the run before the server starts", () => {
  const result = Bun.spawnSync(
    [process.execPath, CLI_ENTRY, "run", "--foreground", PROBE, "--secret", "nope,target=NOPE"],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, NO_COLOR: "1", MCPMGR_SECRETS_PROVIDER: "environment" },
    },
  );
  expect(result.exitCode).not.toBe(0);
  expect(result.stderr.toString()).toContain("nope");
  expect(result.stderr.toString().trim().split("\n")).toHaveLength(1);
});

test("a remote URL runs behind the transparent forwarder", async () => {
  const { startConformanceServer } = await import("../support/conformance.ts");
  const fixture = await startConformanceServer();
  try {
    const run = await runForeground([fixture.url, "--name", "remote-demo"]);
    try {
      const { tools } = await run.client.listTools();
      expect(tools.map((t) => t.name)).toContain("test_simple_text");
      await run.client.close();
    } finally {
      await run.stop();
    }
    expect(run.output()).toContain("remote-demo");
    expect(run.output()).not.toContain("does not resolve");
  } finally {
    await fixture.stop();
  }
}, 60_000);

test("a remote whose host does not resolve runs, with a one-line warning saying so, in the background and the foreground", async () => {
  // `.invalid` never resolves (RFC 2606); no network is needed.
  const remote = "http://does-not-exist.invalid/mcp";
  const warning =
    /^\[warn\] (dns-bad|dns-bad-fg): the remote's host does-not-exist\.invalid does not resolve \((ENOTFOUND|EAI_AGAIN)\); it runs, but every request to it fails until it does \(hint: check the URL, your network and DNS\)$/m;
  const background = cli("run", remote, "--name", "dns-bad");
  try {
    expect(background.code).toBe(0);
    expect(background.stderr).toMatch(warning);
    expect(background.stderr.match(/does not resolve/g)).toHaveLength(1);
  } finally {
    expect(cli("rm", "dns-bad").code).toBe(0);
  }
  const foreground = await spawnUntil(
    [process.execPath, CLI_ENTRY, "run", "--foreground", remote, "--name", "dns-bad-fg"],
    /^(http:\/\/\S+)$/m,
    { timeoutMs: 30_000 },
  );
  try {
    expect(foreground.output()).toMatch(warning);
  } finally {
    expect(await foreground.stop("SIGINT")).toBe(0);
  }
}, 60_000);

test("--remote-auth with a host that does not resolve fails in one line, without promising that it runs or naming --target-uri", async () => {
  const remote = "https://does-not-exist.invalid/mcp";
  for (const args of [
    ["run", remote, "--name", "dns-auth", "--remote-auth"],
    ["run", "--foreground", remote, "--name", "dns-auth-fg", "--remote-auth"],
  ]) {
    const result = cli(...args);
    expectOneLineError(result, 1);
    expect(result.stderr).toMatch(
      /^\[error\] the remote's host does-not-exist\.invalid does not resolve \((ENOTFOUND|EAI_AGAIN)\); --remote-auth asks the remote at start whether it needs a login \(hint: check the URL, your network and DNS, or name its authorization server with --remote-auth-issuer\)$/m,
    );
    expect(result.stderr).not.toContain("it runs");
    expect(result.stderr).not.toContain("--target-uri");
  }
  expect(cli("list", "--format", "json").stdout).not.toContain("dns-auth");
}, 60_000);

describe("servers that speak HTTP themselves (--transport sse|streamable-http)", () => {
  for (const [transport, mode, Transport] of [
    ["streamable-http", "streamableHttp", StreamableHTTPClientTransport],
    ["sse", "sse", SSEClientTransport],
  ] as const) {
    test(`${transport}: started with MCP_TRANSPORT/MCP_PORT and forwarded to`, async () => {
      const port = await freePort();
      const running = await spawnUntil(
        [
          process.execPath,
          CLI_ENTRY,
          "run",
          "--foreground",
          "npx://@modelcontextprotocol/server-everything",
          "--transport",
          transport,
          "--target-port",
          String(port),
          "-e",
          `PORT=${port}`,
          "--",
          mode,
        ],
        /^(http:\/\/\S+)$/m,
        { timeoutMs: 60_000 },
      );
      try {
        const url = running.match[1] as string;
        expect(new URL(url).pathname).toBe(transport === "sse" ? "/sse" : "/mcp");
        const client = new Client({ name: "http-transport-test", version: "1.0.0" });
        await client.connect(new Transport(new URL(url)));
        const result = (await client.callTool({ name: "echo", arguments: { message: `via ${transport}` } })) as {
          content: { text: string }[];
        };
        expect(result.content[0]?.text).toContain(`via ${transport}`);
        await client.close();
      } finally {
        expect(await running.stop()).toBe(0);
      }
    }, 90_000);
  }
});

test("without bubblewrap the run is refused, unless --insecure-allow-unsandboxed accepts it", async () => {
  // A PATH with the toolchain but no bwrap, as on a machine without bubblewrap.
  const bin = await mkdtemp(join(tmpdir(), "mcpmgr-nobwrap-"));
  try {
    for (const tool of ["node", "npx"]) {
      const real = Bun.which(tool);
      if (real === null) throw new Error(`${tool} is required for this test`);
      await Bun.$`ln -s ${real} ${join(bin, tool)}`;
    }
    const env = { ...process.env, NO_COLOR: "1", PATH: bin };
    const refused = Bun.spawnSync([process.execPath, CLI_ENTRY, "run", "--foreground", PROBE], { cwd: REPO_ROOT, env });
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr.toString()).toContain("cannot enforce the permission profile");
    expect(refused.stderr.toString()).toContain("--insecure-allow-unsandboxed");

    const accepted = await spawnUntil(
      [process.execPath, CLI_ENTRY, "run", "--foreground", PROBE, "--insecure-allow-unsandboxed"],
      /^(http:\/\/\S+)$/m,
      { env: { PATH: bin } },
    );
    try {
      // A warning on stderr; the URL that spawnUntil waited for came on stdout, maybe first.
      await eventually(() => accepted.output().includes("WITHOUT a sandbox"), 10_000, "the no-sandbox warning");
    } finally {
      await accepted.stop();
    }
  } finally {
    await rm(bin, { recursive: true, force: true });
  }
}, 60_000);

test("go:// runs a local Go module (go run, offline, in the sandbox) with its arguments", async () => {
  const running = await spawnUntil(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      "--foreground",
      "go://./test/fixtures/go-echo",
      "--permission-profile",
      "none",
      "--",
      "hello",
      "gophers",
    ],
    /^(http:\/\/\S+)$/m,
    { timeoutMs: 90_000 },
  );
  try {
    const client = new Client({ name: "go-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(running.match[1] as string)));
    const result = (await client.callTool({ name: "greet", arguments: {} })) as { content: { text: string }[] };
    expect(result.content[0]?.text).toBe("go says: hello gophers");
    await client.close();
  } finally {
    await running.stop();
  }
}, 120_000);

test("a busy --proxy-port is a clear error and leaves no server behind", async () => {
  const busy = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("taken") });
  try {
    // The server gets a variable no other process has, so other runs of the probe on the
    // machine (another test, another checkout) do not count as this run's leftovers.
    const mark = `MCPMGR_TEST_MARK=${crypto.randomUUID()}`;
    const result = Bun.spawnSync(
      [process.execPath, CLI_ENTRY, "run", "--foreground", PROBE, "--proxy-port", String(busy.port), "-e", mark],
      { cwd: REPO_ROOT, env: { ...process.env, NO_COLOR: "1" } },
    );
    expect(result.exitCode).toBe(1);
    expect(result.stderr.toString()).toContain("already in use");
    const marked = () => processesWithVariable(mark);
    const deadline = Date.now() + 5_000;
    while (marked().length > 0 && Date.now() < deadline) await Bun.sleep(50);
    expect(marked()).toEqual([]);
  } finally {
    busy.stop(true);
  }
}, 30_000);

test("host sockets under /run (session bus, agents, engine sockets) are out of reach", async () => {
  const dir = await mkdtemp("/run/mcpmgr-test-");
  const path = join(dir, "bus.sock");
  const hostSocket = Bun.listen({
    unix: path,
    socket: {
      data() {},
      open(socket) {
        socket.end();
      },
    },
  });
  try {
    const run = await runForeground([PROBE, "--permission-profile", "network"]);
    try {
      expect(await run.call("unix_connect", { path })).not.toBe("connected");
      await run.client.close();
    } finally {
      await run.stop();
    }
  } finally {
    hostSocket.stop(true);
    await rm(dir, { recursive: true, force: true });
  }
}, 60_000);

test("ignore overlays apply in the bubblewrap sandbox too: .mcpmgrignore hides files and directories of a mount", async () => {
  const dir = await mkdtemp(join(tmpdir(), "mcpmgr-ignore-"));
  try {
    await Bun.write(join(dir, ".mcpmgrignore"), "secrets/\n*.pem\n");
    await Bun.write(join(dir, "secrets/token.txt"), "TOKEN");
    await Bun.write(join(dir, "cert.pem"), "PEM");
    await Bun.write(join(dir, "readme.txt"), "visible");
    const run = await runForeground([PROBE, "-v", `${dir}:/tmp/work`, "--print-resolved-overlays"]);
    try {
      expect(run.output()).toContain("/tmp/work/secrets (dir) hidden by secrets/");
      expect(await run.call("read_file", { path: "/tmp/work/readme.txt" })).toBe("visible");
      expect(await run.call("read_file", { path: "/tmp/work/cert.pem" })).toBe("");
      expect(await run.call("read_file", { path: "/tmp/work/secrets/token.txt" })).toBe("ENOENT");
      expect(await run.call("write_file", { path: "/tmp/work/.mcpmgrignore", text: "" })).toBe("EROFS");
      await run.client.close();
    } finally {
      await run.stop();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}, 60_000);

test("a foreground run's name is taken while it runs, and a recorded name is taken for a foreground run", async () => {
  const run = await runForeground([PROBE, "--name", "fg-taken", "--permission-profile", "none"]);
  try {
    // In the background, and in the foreground again: refused before anything starts, naming the run.
    for (const again of [
      ["run", PROBE],
      ["run", "--foreground", PROBE],
    ]) {
      const refused = expectOneLineError(cli(...again, "--name", "fg-taken", "--permission-profile", "none"), 1);
      expect(refused).toContain(`a foreground run named fg-taken is running (pid ${run.proc.pid})`);
      expect(refused).toContain("stop it (Ctrl-C where it runs), or choose another --name");
    }
    const listed = JSON.parse(cli("list", "--format", "json").stdout) as { name: string }[];
    expect(listed.map((workload) => workload.name)).not.toContain("fg-taken");
    // Commands for recorded workloads say what it is and where to stop it, not that it does not exist.
    for (const command of [["stop"], ["logs"], ["restart"]]) {
      const line = expectOneLineError(cli(...command, "fg-taken"), 1);
      expect(line).toContain(`fg-taken is a foreground run (pid ${run.proc.pid}), not a recorded workload`);
      expect(line).toContain("Ctrl-C");
    }
    expect(await run.call("env", { name: "HOME" })).toBeDefined();
    await run.client.close();
  } finally {
    expect(await run.stop("SIGINT")).toBe(0);
  }
  // Free once it ended; then the recorded workload has it, and a foreground run is refused.
  expect(cli("run", PROBE, "--name", "fg-taken", "--permission-profile", "none").code).toBe(0);
  try {
    const refused = expectOneLineError(cli("run", "--foreground", PROBE, "--name", "fg-taken"), 1);
    expect(refused).toContain("a workload named fg-taken already exists");
    expect(refused).toContain("mcpmgr start fg-taken' if it is stopped");
  } finally {
    expect(cli("rm", "fg-taken").code).toBe(0);
  }
}, 90_000);

/** Process ids whose environment holds `variable` (NAME=value), from /proc. */
function processesWithVariable(variable: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, "latin1").split("\0").includes(variable)) found.push(Number(entry));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}
