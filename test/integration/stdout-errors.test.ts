/**
 * A command's output that cannot be written: on a full device (ENOSPC) every command that prints a
 * result says so in one line on stderr and exits 1, instead of exiting 0 having written nothing; a
 * reader that goes away (EPIPE, `| head -1`) is no error: the command stops writing and exits 0 quietly.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { resolvePaths } from "../../src/state/paths.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";
import { cliEnv, expectOneLineError } from "../support/cli-home.ts";
import { CLI_ENTRY, REPO_ROOT, freePort } from "../support/processes.ts";

// The CLI as a process, several times over.
setDefaultTimeout(60_000);

let home: string;
let env: Record<string, string>;

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "mcpmgr-stdout-errors-"));
  env = cliEnv(home);
  const store = new WorkloadStore(resolvePaths(env));
  await store.create({
    name: "remote-one",
    source: { kind: "remote", ref: "https://x.example/mcp" },
    transport: "streamable-http",
    proxyPort: 9,
    runtime: "remote",
  });
  // A proxy log far larger than a pipe holds: its reader's going away is met in the middle of it.
  const { path } = store.logFiles("remote-one", "proxy");
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${"a line of the proxy's log\n".repeat(80_000)}`);
});
afterAll(() => {
  rmSync(home, { recursive: true, force: true });
});

const commands: readonly (readonly string[])[] = [
  ["registry", "list"],
  ["registry", "info", "fetch"],
  ["list"],
  ["list", "--format", "json"],
  ["logs", "remote-one", "--proxy"],
  ["export", "remote-one", "-"],
  ["version"],
  ["--version"],
  ["--help"],
  ["completion", "bash"],
];

describe("stdout on a full device: one line on stderr and exit 1", () => {
  for (const args of commands) {
    test(`mcpmgr ${args.join(" ")} > /dev/full`, () => {
      const full = openSync("/dev/full", "w");
      try {
        const result = Bun.spawnSync([process.execPath, CLI_ENTRY, ...args], {
          cwd: REPO_ROOT,
          env,
          stdin: "ignore",
          stdout: full,
          stderr: "pipe",
        });
        const line = expectOneLineError({ exitCode: result.exitCode, stdout: "", stderr: result.stderr.toString() }, 1);
        expect(line).toContain("stdout");
        expect(line).toContain("ENOSPC");
      } finally {
        closeSync(full);
      }
    });
  }
});

describe("a reader that goes away (EPIPE) is no error: quiet, exit 0", () => {
  for (const args of [
    ["logs", "remote-one", "--proxy"],
    ["registry", "list"],
    ["completion", "bash"],
  ]) {
    test(`mcpmgr ${args.join(" ")} | true`, () => {
      // `true` reads nothing and exits: every write after it is EPIPE (the log's first one is, being larger
      // than the pipe holds). The shell reports mcpmgr's own exit code and stderr.
      const command = `"$0" "$@" 2>"$ERR_FILE" | true; echo "\${PIPESTATUS[0]}"`;
      const errFile = join(home, `err-${args.join("-")}`);
      const result = Bun.spawnSync(["bash", "-c", command, process.execPath, CLI_ENTRY, ...args], {
        cwd: REPO_ROOT,
        env: { ...env, ERR_FILE: errFile },
        stdin: "ignore",
      });
      expect(result.stdout.toString().trim()).toBe("0");
      expect(Bun.file(errFile).size).toBe(0);
    });
  }
});

describe("proxy stdio: the client's stdout", () => {
  const initialize = `${JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
  })}\n`;

  test("on a full device the relay fails saying so (exit 1), instead of relaying into nothing", async () => {
    const full = openSync("/dev/full", "w");
    try {
      const proc = Bun.spawn(
        [process.execPath, CLI_ENTRY, "proxy", "stdio", `http://127.0.0.1:${await freePort()}/mcp`],
        {
          cwd: REPO_ROOT,
          env,
          stdin: new TextEncoder().encode(initialize),
          stdout: full,
          stderr: "pipe",
        },
      );
      const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
      expect(code).toBe(1);
      expect(stderr).not.toContain("    at ");
      const errors = stderr.split("\n").filter((line) => line.startsWith("[error]"));
      expect(errors).toHaveLength(1);
      expect(errors[0]).toContain("ENOSPC");
    } finally {
      closeSync(full);
    }
  });

  test("a client gone (EPIPE) ends the relay at once, quietly, with its input still open", async () => {
    // The input stays open for 40 s; the relay's first answer meets a closed pipe (`true` read nothing).
    const command = `"$0" "$@" 2>"$ERR_FILE" < <(printf '%s' "$INIT"; sleep 40) | true; echo "\${PIPESTATUS[0]}"`;
    const errFile = join(home, "err-proxy-stdio");
    const started = performance.now();
    const result = Bun.spawnSync(
      ["bash", "-c", command, process.execPath, CLI_ENTRY, "proxy", "stdio", "http://127.0.0.1:9/mcp"],
      { cwd: REPO_ROOT, env: { ...env, ERR_FILE: errFile, INIT: initialize }, stdin: "ignore" },
    );
    expect(result.stdout.toString().trim()).toBe("0");
    expect(performance.now() - started).toBeLessThan(30_000);
    expect(await Bun.file(errFile).text()).not.toContain("[error]");
  });
});
