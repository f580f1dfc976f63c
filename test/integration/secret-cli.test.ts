/**
 * `mcpmgr secret` as a user meets it, in a subprocess with a temporary MCPMGR_HOME and
 * MCPMGR_SECRETS_PASSWORD (so the OS keychain is never touched).
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { expectOneLineError } from "../support/cli-home.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const REPO_ROOT = resolve(import.meta.dir, "../..");
const ENTRY = join(REPO_ROOT, "src/main.ts");
const PASSWORD = "integration-test-password";

let home: string;
beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), "mcpmgr-secret-cli-"));
});
afterAll(async () => {
  await rm(home, { recursive: true, force: true });
});

interface CliResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

function baseEnv(extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = {};
  for (const [key, value] of Object.entries(process.env))
    if (!key.startsWith("MCPMGR_") && key !== "FORCE_COLOR") env[key] = value;
  return { ...env, NO_COLOR: "1", MCPMGR_HOME: home, MCPMGR_SECRETS_PASSWORD: PASSWORD, ...extra };
}

function secret(
  args: readonly string[],
  options: { stdin?: string; env?: Record<string, string | undefined> } = {},
): CliResult {
  const result = Bun.spawnSync([process.execPath, ENTRY, "secret", ...args], {
    cwd: REPO_ROOT,
    env: baseEnv(options.env),
    stdin: options.stdin === undefined ? "ignore" : Buffer.from(options.stdin),
    stdout: "pipe",
    stderr: "pipe",
    timeout: 20_000,
  });
  return { exitCode: result.exitCode ?? -1, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

describe("mcpmgr secret", () => {
  const VALUE = "ghp_integration_VALUE_0123456789";

  test("set reads the value from stdin and prints nothing on stdout", () => {
    const result = secret(["set", "github-token"], { stdin: `${VALUE}\n` });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe("");
    expect(result.stderr).not.toContain(VALUE);
    expect(result.stderr).toContain("github-token");
  });

  test("get prints the value (the trailing newline from the pipe was dropped)", () => {
    const result = secret(["get", "github-token"]);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe(`${VALUE}\n`);
    expect(result.stderr).toBe("");
  });

  test("the file is encrypted, 0600, under MCPMGR_HOME/data", async () => {
    const file = join(home, "data", "secrets.enc.json");
    const text = await readFile(file, "utf8");
    expect(text).not.toContain(VALUE);
    expect(JSON.parse(text)).toMatchObject({ version: 1, cipher: "aes-256-gcm", kdf: { name: "scrypt" } });
    if (process.platform !== "win32") expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  test("list prints names only, as text or JSON", () => {
    expect(secret(["set", "db.password"], { stdin: "pg-secret-value" }).exitCode).toBe(0);
    const text = secret(["list"]);
    expect(text.exitCode).toBe(0);
    expect(text.stdout).toBe("db.password\ngithub-token\n");
    const json = secret(["list", "--format", "json"]);
    expect(json.exitCode).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(["db.password", "github-token"]);
    expect(json.stdout + json.stderr).not.toContain(VALUE);
    expect(json.stdout + json.stderr).not.toContain("pg-secret-value");
  });

  test("delete removes it; a second delete and a get then fail with one line", () => {
    const deleted = secret(["delete", "db.password"]);
    expect(deleted.exitCode).toBe(0);
    expect(deleted.stdout).toBe("");
    expect(secret(["list"]).stdout).toBe("github-token\n");
    expect(expectOneLineError(secret(["delete", "db.password"]), 1)).toContain("db.password");
    expect(expectOneLineError(secret(["get", "db.password"]), 1)).toContain("db.password");
  });

  test("get of a missing secret exits non-zero with one line naming it", () => {
    const line = expectOneLineError(secret(["get", "never-stored"]), 1);
    expect(line).toContain("never-stored");
    expect(line).toContain("not found");
  });

  test("a wrong password fails with one line, without any value", () => {
    const result = secret(["get", "github-token"], { env: { MCPMGR_SECRETS_PASSWORD: "not the password" } });
    const line = expectOneLineError(result, 1);
    expect(line).toContain("wrong password");
    expect(line).not.toContain(VALUE);
  });

  test("a value on the command line is refused and not echoed", () => {
    const line = expectOneLineError(secret(["set", "api-key", "sk-should-not-echo"], { stdin: "" }), 2);
    expect(line).toContain("stdin");
    expect(line).not.toContain("sk-should-not-echo");
    expect(secret(["list"]).stdout).not.toContain("api-key");
  });

  test("an empty stdin is a usage error", () => {
    expect(expectOneLineError(secret(["set", "api-key"]), 2)).toContain("api-key");
    expect(expectOneLineError(secret(["set", "api-key"], { stdin: "\n" }), 2)).toContain("api-key");
  });

  describe("usage errors exit 2 with one line", () => {
    const cases: ReadonlyArray<readonly [string, readonly string[], string]> = [
      ["unknown flag", ["list", "--bogus"], "--bogus"],
      ["unknown flag on get", ["get", "x", "--verbose"], "--verbose"],
      ["bad --format", ["list", "--format", "yaml"], "--format"],
      ["invalid name", ["get", "not/valid"], "not/valid"],
      ["missing name", ["get"], "NAME"],
      ["two names", ["get", "a", "b"], "one NAME"],
      ["list with an argument", ["list", "x"], "no arguments"],
      ["unknown subcommand", ["rotate"], "rotate"],
      ["no subcommand", [], "no secret command"],
      ["an option of no subcommand", ["--bogus"], "unknown option --bogus"],
    ];
    test.each(cases)("%s", (_label, args, mention) => {
      expect(expectOneLineError(secret(args), 2)).toContain(mention);
    });
  });

  test("a name starting with '-' works after --", () => {
    expect(secret(["set", "--", "-dash"], { stdin: "dash-value" }).exitCode).toBe(0);
    expect(secret(["get", "--", "-dash"]).stdout).toBe("dash-value\n");
    expect(secret(["delete", "--", "-dash"]).exitCode).toBe(0);
  });

  describe("MCPMGR_SECRETS_PROVIDER=environment", () => {
    const env = { MCPMGR_SECRETS_PROVIDER: "environment", MCPMGR_SECRET_API_KEY: "env-api-value" };

    test("get and list read MCPMGR_SECRET_*", () => {
      expect(secret(["get", "api-key"], { env }).stdout).toBe("env-api-value\n");
      expect(secret(["list"], { env }).stdout).toBe("API_KEY\n");
    });

    test("set is refused before reading stdin", () => {
      const line = expectOneLineError(secret(["set", "api-key"], { env, stdin: "x-value" }), 2);
      expect(line).toContain("read-only");
      expect(line).toContain("MCPMGR_SECRET_API_KEY");
    });
  });

  // Bun colours what console.error writes red when stderr is a terminal: mcpmgr's [info] and
  // [success] lines looked like errors there (and nowhere else: pipes, and NO_COLOR, get plain text).
  test("in a terminal, mcpmgr's log lines are plain text, not coloured as errors", async () => {
    const command = [process.execPath, ENTRY, "list", "--group", "nope"].map((word) => `'${word}'`).join(" ");
    const env = baseEnv();
    delete env.NO_COLOR;
    const proc = Bun.spawn(["script", "-qec", command, "/dev/null"], {
      cwd: REPO_ROOT,
      env,
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    });
    const output = await new Response(proc.stdout).text();
    expect(await proc.exited).toBe(0);
    expect(output).toContain("[info] no group named nope");
    expect(output).not.toContain("\u001b[");
  });

  // A real terminal through util-linux script(1) (Debian's bsdutils, always installed):
  // the prompt must not echo what is typed.
  test("in a terminal, set prompts without echo", async () => {
    const TYPED = "typed-in-terminal-4321";
    const { exitCode, output } = await typeIntoPrompt("typed", `${TYPED}\r`);
    expect(output).toContain("input hidden");
    expect(exitCode).toBe(0);
    expect(output).not.toContain(TYPED);
    expect(secret(["get", "typed"]).stdout).toBe(`${TYPED}\n`);
  });

  /** `secret set NAME` under script(1), the keys written in one write as a terminal sends a paste; its exit code and output. */
  async function typeIntoPrompt(
    name: string,
    keys: string | readonly string[],
  ): Promise<{ exitCode: number; output: string }> {
    const command = [process.execPath, ENTRY, "secret", "set", name].map((word) => `'${word}'`).join(" ");
    const proc = Bun.spawn(["script", "-qec", command, "/dev/null"], {
      cwd: REPO_ROOT,
      env: baseEnv(),
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    });
    let output = "";
    const decoder = new TextDecoder();
    const reading = (async () => {
      for await (const chunk of proc.stdout) output += decoder.decode(chunk, { stream: true });
    })();
    const deadline = Date.now() + 15_000;
    while (!output.includes("input hidden") && Date.now() < deadline) await Bun.sleep(20);
    for (const [index, write] of (typeof keys === "string" ? [keys] : keys).entries()) {
      // Separate writes reach the prompt as separate reads only with time between them; the prompt echoes
      // nothing that could be polled for, so this one pause stands for a terminal's split delivery.
      if (index > 0) await Bun.sleep(300);
      proc.stdin.write(write);
      await proc.stdin.flush();
    }
    const exitCode = await Promise.race([proc.exited, Bun.sleep(15_000).then(() => -1)]);
    if (exitCode === -1) proc.kill("SIGKILL");
    await reading;
    proc.stdin.end();
    return { exitCode, output };
  }

  // A PEM key pasted into the prompt: its first line alone was saved, reported as a success.
  test("in a terminal, a pasted value of several lines is kept whole (bracketed paste)", async () => {
    const pem = ["-----BEGIN PRIVATE KEY-----", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "-----END PRIVATE KEY-----"];
    // The terminal sends a paste between ESC[200~ and ESC[201~, its line breaks as Enter (CR), and
    // here the copied text's own last line break too; then the user presses Enter.
    const { exitCode, output } = await typeIntoPrompt("pasted-pem", `\u001b[200~${pem.join("\r")}\r\u001b[201~\r`);
    expect(exitCode).toBe(0);
    expect(output).toContain("\u001b[?2004h");
    expect(output).not.toContain("MIIEvQ");
    expect(secret(["get", "pasted-pem"]).stdout).toBe(`${pem.join("\n")}\n`);
  });

  // An arrow key's sequence cut between two reads: its end ("1;5D") was typed into the value.
  test("in a terminal, an arrow key split across reads puts nothing into the value", async () => {
    const { exitCode } = await typeIntoPrompt("split-arrow", ["tok\u001b[1;5", "Den\u001b", "OD\r"]);
    expect(exitCode).toBe(0);
    expect(secret(["get", "split-arrow"]).stdout).toBe("token\n");
  });

  test("in a terminal without bracketed paste, a pasted value of several lines is refused, not cut", async () => {
    const { exitCode, output } = await typeIntoPrompt("unbracketed-pem", "line-one-value\rline-two-value\r");
    expect(exitCode).toBe(2);
    expect(output).toContain("the value pasted has several lines");
    expect(output).not.toContain("line-one-value");
    expect(secret(["get", "unbracketed-pem"]).exitCode).toBe(1);
  });
});

// Killed at the prompt (SIGTERM, or SIGHUP from a closed ssh session): the terminal was left in
// bracketed paste, and every later paste into sh or a program's prompt came wrapped in ESC[200~ … ESC[201~.
test("secret set killed at its prompt turns bracketed paste off again", async () => {
  const dir = await mkdtemp(join(tmpdir(), "mcpmgr-secret-prompt-"));
  const pidFile = join(dir, "pid");
  // The shell writes its pid, then becomes mcpmgr (exec): that pid is the one to signal.
  const words = [process.execPath, ENTRY, "secret", "set", "killed"].map((word) => `'${word}'`).join(" ");
  const proc = Bun.spawn(["script", "-qec", `echo $$ > '${pidFile}'; exec ${words}`, "/dev/null"], {
    cwd: REPO_ROOT,
    env: baseEnv(),
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  });
  let output = "";
  const decoder = new TextDecoder();
  const reading = (async () => {
    for await (const chunk of proc.stdout) output += decoder.decode(chunk, { stream: true });
  })();
  try {
    const deadline = Date.now() + 15_000;
    while (!output.includes("input hidden") && Date.now() < deadline) await Bun.sleep(20);
    expect(output).toContain("\u001b[?2004h");
    process.kill(Number((await readFile(pidFile, "utf8")).trim()), "SIGTERM");
    const exitCode = await Promise.race([proc.exited, Bun.sleep(15_000).then(() => -1)]);
    if (exitCode === -1) proc.kill("SIGKILL");
    await reading;
    expect(exitCode).toBe(143);
    expect(output.slice(output.indexOf("input hidden"))).toContain("\u001b[?2004l");
    expect(secret(["get", "killed"]).exitCode).toBe(1);
  } finally {
    proc.stdin.end();
    await rm(dir, { recursive: true, force: true });
  }
});
