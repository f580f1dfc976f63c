/**
 * The CLI as users meet it: bad input exits 2 with one line on stderr naming the
 * option and saying what to do (a hint), no stack trace and nothing on stdout.
 */
import { describe, expect, test, setDefaultTimeout } from "bun:test";
import { resolve } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { expectOneLineError } from "../support/cli-home.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const REPO_ROOT = resolve(import.meta.dir, "../..");
const TARGET = ["--target-uri", "http://127.0.0.1:9/mcp"];

interface CliResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

function mcpmgr(...args: string[]): CliResult {
  const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: "1" };
  delete env.FORCE_COLOR;
  const result = Bun.spawnSync([process.execPath, "src/main.ts", ...args], {
    cwd: REPO_ROOT,
    env,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    timeout: 20_000,
  });
  return { exitCode: result.exitCode ?? -1, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

function nonEmptyLines(text: string): string[] {
  return text.split("\n").filter((line) => line.trim().length > 0);
}

/** Exit 2, nothing on stdout, one stderr line with a hint and no stack; returns that line. */
const expectUsageError = (result: CliResult): string => expectOneLineError(result, 2);

describe("usage errors exit 2 with one line naming the problem", () => {
  const cases: ReadonlyArray<readonly [label: string, args: readonly string[], mentions: readonly string[]]> = [
    ["port out of range", ["proxy", "x", ...TARGET, "--port", "70000"], ["--port", "70000"]],
    ["unknown --proxy-mode", ["run", "srv", "--proxy-mode", "foo"], ["--proxy-mode", "foo"]],
    ["-e without =", ["run", "srv", "-e", "NOVALUE"], ["--env", "NOVALUE"]],
    ["-v without container path", ["run", "srv", "-v", "bad"], ["--volume", "bad"]],
    ["bad duration", ["run", "srv", "--remote-auth-timeout", "30x"], ["--remote-auth-timeout", "30x"]],
    ["sampling rate above 1", ["run", "srv", "--otel-sampling-rate", "1.5"], ["--otel-sampling-rate", "1.5"]],
    [
      "issuer together with authorize URL",
      ["run", "srv", "--remote-auth-issuer", "https://a.example", "--remote-auth-authorize-url", "https://b.example"],
      ["--remote-auth-issuer", "--remote-auth-authorize-url"],
    ],
    ["--host not an address (gateway)", ["gateway", "default", "--host", "256.1.1.1"], ["--host", "256.1.1.1"]],
    ["--host not an address (proxy)", ["proxy", "x", ...TARGET, "--host", "256.1.1.1"], ["--host", "256.1.1.1"]],
    ["--host not an address (run)", ["run", "srv", "--host", "256.1.1.1"], ["--host", "256.1.1.1"]],
    ["unknown flag on run", ["run", "srv", "--bogus"], ["--bogus"]],
    ["unknown flag on proxy", ["proxy", "x", ...TARGET, "--bogus"], ["--bogus"]],
    ["unknown short flag", ["run", "srv", "-z"], ["-z"]],
    ["proxy without --target-uri", ["proxy", "x"], ["--target-uri"]],
    ["proxy without SERVER_NAME", ["proxy", ...TARGET], ["SERVER_NAME"]],
    ["--target-uri not a URL", ["proxy", "x", "--target-uri", "notaurl"], ["--target-uri", "notaurl"]],
    ["option without its value", ["run", "srv", "--name"], ["--name"]],
    ["non-repeatable option twice", ["run", "srv", "--group", "a", "--group", "b"], ["--group"]],
    ["boolean with a non-boolean value", ["run", "srv", "--foreground=yes"], ["--foreground"]],
    ["run without a server", ["run", "--group", "g"], ["run"]],
    ["run of a local path", ["run", "./server.py"], ["./server.py", "is a local path", "npx://./dir"]],
    [
      "a mistyped built-in permission profile",
      ["run", "npx://x", "--foreground", "--permission-profile", "netwrok"],
      ['--permission-profile "netwrok": not a built-in profile (none, network), nor a file', "did you mean network?"],
    ],
    ["proxy with server arguments", ["proxy", "x", ...TARGET, "--", "--help"], ["--"]],
    [
      "--env-file that does not exist",
      ["run", "npx://x", "--foreground", "--env-file", "/nonexistent/env"],
      ["--env-file"],
    ],
  ];

  test.each(cases)("%s", (_label, args, mentions) => {
    const line = expectUsageError(mcpmgr(...args));
    for (const text of mentions) expect(line).toContain(text);
  });
});

test("a --host that is no address of this machine is one line with a hint, without a port nobody chose", () => {
  const result = mcpmgr("proxy", "x", ...TARGET, "--host", "nosuchhost.invalid");
  expect(result.stderr).not.toContain("    at ");
  const lines = nonEmptyLines(result.stderr);
  expect(lines).toHaveLength(1);
  expect(lines[0]).toContain("cannot listen on nosuchhost.invalid: no such local address");
  expect(lines[0]).toContain("hint: use an address of this machine");
  expect(result.exitCode).toBe(1);
});

describe("help rows say what they do", () => {
  const rows = (help: string, option: string) =>
    help.split("\n").filter((line) => new RegExp(`(^|\\s)${option}(=|\\s|$)`).test(line));

  test.each(["run", "gateway"])("%s --help: every --no-* row has a description", (command) => {
    const help = mcpmgr(command, "--help").stdout;
    const negations = help.split("\n").filter((line) => /^\s+--no-[\w-]+/.test(line));
    expect(negations.length).toBeGreaterThan(0);
    for (const line of negations) expect(line).toMatch(/^\s+--no-([\w-]+)\s+Turn off --\1\s*$/);
  });

  test("run --group says the group must exist", () => {
    expect(rows(mcpmgr("run", "--help").stdout, "--group").join("\n")).toContain("it must exist");
  });

  test("gateway --tool-search-embeddings-model says --tool-search-embeddings needs it", () => {
    const help = mcpmgr("gateway", "--help").stdout;
    expect(rows(help, "--tool-search-embeddings-model").join("\n")).toContain("required with --tool-search-embeddings");
  });

  test("client list-registered-clients does not claim to be per group", () => {
    const help = mcpmgr("client", "--help").stdout;
    const line = rows(help, "list-registered-clients").join("\n");
    expect(line).not.toContain("for a group");
    expect(line).toContain("with the groups each follows");
  });
});

test("a mistyped AI-client name gets the nearest one, like a mistyped command", () => {
  const line = expectUsageError(mcpmgr("client", "register", "cursr"));
  expect(line).toContain('"cursr" is not a client mcpmgr knows (hint: did you mean cursor?');
});

test("what people call a client gets that client, not the nearest spelling", () => {
  // VS Code's own command is `code`, nearest by spelling to codex.
  expect(expectUsageError(mcpmgr("client", "register", "code"))).toContain("(hint: did you mean vscode?");
  expect(expectUsageError(mcpmgr("client", "remove", "claude"))).toContain(
    "(hint: did you mean claude-code or claude-desktop?",
  );
  // Names of the table's prototype are no client's nickname: they failed as an unexpected error.
  for (const name of ["constructor", "__proto__"])
    expect(expectUsageError(mcpmgr("client", "register", name))).toContain(`"${name}" is not a client mcpmgr knows`);
});

test("registry info --help marks its NAME required, and its absence keeps the command's own words", () => {
  const help = mcpmgr("registry", "info", "--help").stdout;
  expect(help).toContain("USAGE mcpmgr registry info [OPTIONS] <NAME>");
  expect(help).toMatch(/NAME +Server name .*\(Required\)/);
  const line = expectUsageError(mcpmgr("registry", "info"));
  expect(line).toContain("'mcpmgr registry info' needs a server name (hint: run 'mcpmgr registry list'");
});

describe("a missing argument is named with what it is and the command's usage line", () => {
  // citty's own words ("Missing required positional argument: NAME (hint: see --help)") named
  // neither the command nor what goes there.
  const cases: ReadonlyArray<readonly [args: readonly string[], line: string]> = [
    [
      ["secret", "set"],
      "missing NAME: secret name (letters, digits, '_', '.', '-') (hint: usage: mcpmgr secret set NAME; 'mcpmgr secret set --help' shows its options)",
    ],
    [
      ["group", "create"],
      "missing NAME: group name (lowercase letters, digits and '-') (hint: usage: mcpmgr group create NAME;",
    ],
    [["export", "fetch"], "missing PATH: file to write (- for stdout) (hint: usage: mcpmgr export NAME PATH;"],
    [["logs"], "missing NAME: workload name (hint: usage: mcpmgr logs NAME; 'mcpmgr logs --help' shows its options)"],
    [
      ["gateway"],
      "missing GROUP: the group whose running workloads the gateway serves (hint: usage: mcpmgr gateway GROUP;",
    ],
    [["client", "register"], "missing CLIENT: AI client: claude-code, "],
    [["completion"], "missing SHELL: the shell: bash, zsh, fish, powershell (hint: usage: mcpmgr completion SHELL;"],
    [
      ["proxy", ...TARGET],
      "missing SERVER_NAME: a name for this proxy (used in logs) (hint: usage: mcpmgr proxy SERVER_NAME --target-uri URL,",
    ],
  ];

  test.each(cases)("%p", (args, line) => {
    const shown = expectUsageError(mcpmgr(...args));
    expect(shown).toContain(line);
    expect(shown).not.toContain("Missing required positional argument");
  });
});

describe("options that are not supported yet exit 2", () => {
  test("proxy tunnel", () => {
    const line = expectUsageError(mcpmgr("proxy", "tunnel"));
    expect(line).toContain("proxy tunnel");
    expect(line).toContain("not supported yet");
  });

  test("proxy tunnel --help says it is not implemented, instead of printing proxy's help", () => {
    const result = mcpmgr("proxy", "tunnel", "--help");
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain("USAGE mcpmgr proxy tunnel");
    expect(result.stdout).toContain("Not implemented in this version");
    expect(result.stdout).not.toContain("SERVER_NAME>");
  });

  test("every option of run and proxy is supported: help marks none", () => {
    for (const command of ["run", "proxy"]) {
      const result = mcpmgr(command, "--help");
      expect(result.exitCode).toBe(0);
      expect(result.stdout + result.stderr).toContain("--oidc-issuer");
      expect(result.stdout + result.stderr).not.toContain("not supported yet");
    }
  });

  test("--help after -- belongs to the server, not to mcpmgr", () => {
    // Not help output: mcpmgr went on to look the server up (and did not find it).
    const line = expectUsageError(mcpmgr("run", "no-such-server", "--", "--help"));
    expect(line).toContain("no-such-server");
  });
});

describe("root command", () => {
  test("--version prints the package.json version and exits 0", () => {
    const result = mcpmgr("--version");
    expect(result.exitCode).toBe(0);
    expect(result.stdout.trim()).toBe(pkg.version);
    expect(result.stderr).toBe("");
  });

  test("--help lists run and proxy and exits 0", () => {
    const result = mcpmgr("--help");
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/^\s+run\s/m);
    expect(result.stdout).toMatch(/^\s+proxy\s/m);
    expect(result.stderr).toBe("");
  });

  test("an unknown command exits 2", () => {
    const line = expectUsageError(mcpmgr("bogus"));
    expect(line).toContain("bogus");
  });

  test("a name every object inherits is no command (citty would run nothing and exit 0)", () => {
    for (const name of ["toString", "constructor"]) expect(expectUsageError(mcpmgr(name))).toContain(name);
    // Below a command that only routes too: named as the unknown command it is.
    expect(expectUsageError(mcpmgr("registry", "toString"))).toContain("unknown command 'registry toString'");
    expect(expectUsageError(mcpmgr("group", "constructor"))).toContain("unknown command 'group constructor'");
  });

  test("a stray word after list is refused, with the option it may have meant", () => {
    const line = expectUsageError(mcpmgr("list", "work"));
    expect(line).toContain("'mcpmgr list' takes no arguments");
    expect(line).toContain("mcpmgr list --group work");
  });

  test("--debug is accepted before the command", () => {
    const line = expectUsageError(mcpmgr("--debug", "bogus"));
    expect(line).toContain("bogus");
  });
});

describe("an option written before its command is refused, not dropped", () => {
  const afterTheCommand = "a command's options go after the command, e.g. 'mcpmgr list --format json'";
  const cases: ReadonlyArray<readonly [args: readonly string[], message: string]> = [
    [["--frobnicate", "list"], "unknown option --frobnicate"],
    [["registry", "--frob", "list"], "unknown option --frob of 'mcpmgr registry'"],
    [["secret", "--frob", "list"], "unknown option --frob of 'mcpmgr secret'"],
    // citty took "json" for the command: "unknown command 'json'".
    [["--format", "json", "list"], "unknown option --format"],
    [["-x", "list"], "unknown option -x"],
  ];

  test.each(cases)("%p", (args, message) => {
    const line = expectUsageError(mcpmgr(...args));
    expect(line).toContain(`${message} (hint: ${afterTheCommand})`);
  });

  test("one close to an option of that level gets it as the hint", () => {
    expect(expectUsageError(mcpmgr("--debgu", "list"))).toContain(
      "unknown option --debgu (hint: did you mean --debug?)",
    );
    expect(expectUsageError(mcpmgr("registry", "--hlep", "list"))).toContain("did you mean --help?");
  });

  test("--debug before the command, --help, -h and --version at each level still work", () => {
    const debugList = mcpmgr("--debug", "registry", "list", "--format", "json");
    expect(debugList.exitCode).toBe(0);
    expect(JSON.parse(debugList.stdout)).toHaveProperty("servers");
    for (const args of [
      ["--help"],
      ["-h"],
      ["registry", "--help"],
      ["secret", "-h", "list"],
      ["registry", "list", "-h"],
    ]) {
      const result = mcpmgr(...args);
      expect(result.exitCode).toBe(0);
      expect(result.stdout).toContain("USAGE");
    }
    for (const args of [["--version"], ["--debug", "--version"], ["--version", "list"]]) {
      const result = mcpmgr(...args);
      expect(result.exitCode).toBe(0);
      expect(result.stdout.trim()).toBe(pkg.version);
    }
  });
});

describe("a mistyped command, option or value gets the nearest one as its hint", () => {
  const cases: ReadonlyArray<readonly [label: string, args: readonly string[], suggestion: string]> = [
    ["a command", ["lsit"], "did you mean 'mcpmgr list'?"],
    ["a subcommand", ["group", "lsit"], "did you mean 'mcpmgr group list'?"],
    ["a command asked for its help", ["lsit", "--help"], "did you mean 'mcpmgr list'?"],
    ["a subcommand asked for its help", ["client", "regster", "-h"], "did you mean 'mcpmgr client register'?"],
    ["two commands as near", ["rn"], "did you mean 'mcpmgr rm' or 'mcpmgr run'?"],
    ["an option of run", ["run", "fetch", "--proxy-prot", "8080"], "did you mean --proxy-port?"],
    ["an option of list", ["list", "--formt", "json"], "did you mean --format?"],
    ["the negation of a flag", ["run", "fetch", "--no-foregroud"], "did you mean --no-foreground?"],
    ["an option of mcpmgr itself", ["--verison"], "did you mean --version?"],
    ["a value among choices", ["list", "--format", "jsno"], "did you mean --format json?"],
    ["Docker's word for list", ["ps"], "'mcpmgr list' lists the workloads"],
    ["another tool's word for rm", ["delete", "fetch"], "did you mean 'mcpmgr rm'?"],
    ["npm's word for search", ["search", "github"], "did you mean 'mcpmgr registry search WORDS'?"],
    ["a self-update", ["upgrade"], "mcpmgr does not update itself: upgrade it the way you installed it"],
    // Below the top level each group names the same act differently; only "--help" was said.
    ["ls under a group", ["secret", "ls"], "did you mean 'mcpmgr secret list'?"],
    ["rm where it is delete", ["secret", "rm", "tok"], "did you mean 'mcpmgr secret delete'?"],
    ["delete where it is rm", ["group", "delete", "team"], "did you mean 'mcpmgr group rm'?"],
    ["add where it is register", ["client", "add", "cursor"], "did you mean 'mcpmgr client register'?"],
  ];

  test.each(cases)("%s", (_label, args, suggestion) => {
    const line = expectUsageError(mcpmgr(...args));
    expect(line).toContain(suggestion);
  });

  test("nothing is suggested when nothing is close", () => {
    for (const args of [["xyzzy"], ["run", "fetch", "--zzzzzz"], ["--bogus"], ["list", "--format", "yaml"]]) {
      const line = expectUsageError(mcpmgr(...args));
      expect(line).not.toContain("did you mean");
    }
  });
});

// Parse-error messages must name the option the user wrote and give advice that works.
describe("parse-error messages", () => {
  // node's "argument is ambiguous" (a value starting with '-') is reported as
  // "--otel-sampling-rate does not take a value", although it needs one.
  test("a value starting with '-' is not reported as 'does not take a value'", () => {
    const line = expectUsageError(mcpmgr("run", "srv", "--otel-sampling-rate", "-0.5"));
    expect(line).toContain("--otel-sampling-rate");
    expect(line).not.toContain("does not take a value");
  });

  // The flag is cut out of "Option '-e, --env <value>' argument missing", giving "-e, needs a value".
  test("a short option without its value is named cleanly", () => {
    const line = expectUsageError(mcpmgr("run", "srv", "-e"));
    expect(line).toMatch(/(^|\s)(-e|--env) needs a value/);
  });

  // node reports `-f=1` as the unknown option '='; the regex then picks "--" from the rest of the message.
  test("-f=1 names -f, not --", () => {
    const line = expectUsageError(mcpmgr("run", "srv", "-f=1"));
    expect(line).toContain("-f");
    expect(line).not.toContain("unknown option --");
  });

  // The unknown-option hint is the same for every command: on proxy it says "to pass it to
  // the MCP server, put it after --", but proxy rejects any argument after -- (INVALID_ARGUMENT).
  test("proxy's unknown-option hint does not suggest passing the option after --", () => {
    const line = expectUsageError(mcpmgr("proxy", "x", ...TARGET, "--bogus"));
    expect(line).not.toContain("put it after --");
  });
});
