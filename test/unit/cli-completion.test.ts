/**
 * Shell completion, in the real shells: the bash script completes in bash (COMP_WORDS, _mcpmgr,
 * COMPREPLY), the fish script in fish (`complete -C`), the zsh script in an interactive zsh under a
 * pseudo-terminal (compinit, a real tab press; compadd is wrapped only to record what it is given).
 * Workload and group names come from a real store through `mcpmgr __complete`. Every command and
 * every option of the option tables is offered where it belongs; PowerShell (not packaged by
 * Debian) is checked by content.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { completionScript, shells } from "../../src/cli/completion.ts";
import { rootCommand } from "../../src/cli/root.ts";
import { completionTree } from "../../src/cli/completion-tree.ts";
import { allCommands, BUILTIN_PROFILES, keyOf } from "../../src/completion/model.ts";
import { builtinProfileNames } from "../../src/config/permission-profile.ts";
import {
  clientRegisterOptions,
  clientRemoveOptions,
  formatOptions,
  groupRmOptions,
  listOptions,
  logsOptions,
  registrySearchOptions,
  restartOptions,
  rmOptions,
  secretDeleteOptions,
  startOptions,
  stopOptions,
} from "../../src/config/command-options.ts";
import { gatewayOptions } from "../../src/config/gateway-options.ts";
import type { OptionTable } from "../../src/config/option-spec.ts";
import { proxyOptions } from "../../src/config/proxy-options.ts";
import { proxyStdioOptions } from "../../src/config/proxy-stdio-options.ts";
import { runOptions } from "../../src/config/run-options.ts";
import { CLIENT_IDS } from "../../src/clients/types.ts";
import { GroupStore } from "../../src/state/groups.ts";
import { resolvePaths } from "../../src/state/paths.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";
import { REPO_ROOT } from "../support/processes.ts";
import { recordPackageWorkloads } from "../support/workload-records.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

/** Each command's option table, listed here independently of the completion code. */
const tables: Readonly<Record<string, OptionTable>> = {
  run: runOptions,
  proxy: proxyOptions,
  "proxy stdio": proxyStdioOptions,
  gateway: gatewayOptions,
  list: listOptions,
  stop: stopOptions,
  start: startOptions,
  restart: restartOptions,
  rm: rmOptions,
  logs: logsOptions,
  export: {},
  "secret set": {},
  "secret get": {},
  "secret list": formatOptions,
  "secret delete": secretDeleteOptions,
  "registry list": formatOptions,
  "registry search": registrySearchOptions,
  "registry info": formatOptions,
  "group create": {},
  "group list": formatOptions,
  "group rm": groupRmOptions,
  "client status": formatOptions,
  "client register": clientRegisterOptions,
  "client remove": clientRemoveOptions,
  "client list-registered-clients": formatOptions,
  "client setup": {},
  completion: {},
  version: formatOptions,
};

/** The commands that have subcommands, and those subcommands. */
const parents: Readonly<Record<string, readonly string[]>> = {
  "": [
    "run",
    "proxy",
    "gateway",
    "list",
    "stop",
    "start",
    "restart",
    "rm",
    "logs",
    "export",
    "secret",
    "registry",
    "group",
    "client",
    "completion",
    "version",
  ],
  proxy: ["stdio"],
  secret: ["set", "get", "list", "delete"],
  registry: ["list", "search", "info"],
  group: ["create", "list", "rm"],
  client: ["status", "register", "remove", "list-registered-clients", "setup"],
};

function optionWords(table: OptionTable): string[] {
  const words = ["--help", "-h"];
  for (const [name, spec] of Object.entries(table)) {
    if (spec.hidden) continue;
    words.push(`--${name}`);
    if (spec.short) words.push(`-${spec.short}`);
    if (spec.kind === "boolean" && spec.default) words.push(`--no-${name}`);
  }
  return words;
}

let dir: string;
let home: string;
let env: Record<string, string | undefined>;
let supervisor: ReturnType<typeof Bun.spawn> | undefined;
const scripts: Record<string, string> = {};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-completion-"));
  home = join(dir, "home");
  // The scripts ask `mcpmgr __complete`: this mcpmgr, from source, on PATH.
  await mkdir(join(dir, "bin"));
  await writeFile(
    join(dir, "bin/mcpmgr"),
    `#!/bin/sh\nexec "${process.execPath}" "${join(REPO_ROOT, "src/main.ts")}" "$@"\n`,
  );
  await chmod(join(dir, "bin/mcpmgr"), 0o755);
  env = {
    ...process.env,
    MCPMGR_HOME: home,
    PATH: `${join(dir, "bin")}:${process.env.PATH}`,
    NO_COLOR: "1",
    MCPMGR_SECRETS_PROVIDER: "encrypted",
    MCPMGR_SECRETS_PASSWORD: "completion-test-password",
  };
  const paths = resolvePaths({ MCPMGR_HOME: home });
  const store = new WorkloadStore(paths);
  await recordPackageWorkloads(store, [
    ["alpha-one", 41_101],
    ["beta-two", 41_102],
  ]);
  // alpha-one runs (a live process with a supervisor's command line); beta-two's status says running,
  // but its supervisor is gone, so it reads as failed: `stop` applies to the one, `start` to the other.
  supervisor = Bun.spawn([process.execPath, "-e", "setInterval(() => {}, 60_000)", "__supervise", "alpha-one"]);
  const gone = Bun.spawnSync(["true"]).pid;
  await store.writeStatus("alpha-one", { state: "running", pid: supervisor.pid });
  await store.writeStatus("beta-two", { state: "running", pid: gone });
  await new GroupStore(paths).create("team");
  // Two stored secrets; their values must never be offered.
  for (const name of ["gh-token", "gl-token"]) {
    const stored = Bun.spawnSync([join(dir, "bin/mcpmgr"), "secret", "set", name], {
      env,
      stdin: Buffer.from(`value-of-${name}`),
    });
    expect(stored.exitCode).toBe(0);
  }
  await writeFile(join(dir, "exported.json"), "{}");
  // A profile file beside a folder of env files, for the path-valued options.
  await mkdir(join(dir, "prof", "envs"), { recursive: true });
  await writeFile(join(dir, "prof", "strict.json"), "{}");
  for (const shell of shells) {
    scripts[shell] = await completionScript(shell);
    await writeFile(join(dir, `mcpmgr.${shell}`), scripts[shell] as string);
  }
});

afterAll(async () => {
  supervisor?.kill();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function run(cmd: string[]): { exitCode: number; stdout: string; stderr: string } {
  const result = Bun.spawnSync(cmd, { cwd: dir, env, stdout: "pipe", stderr: "pipe", timeout: 120_000 });
  return { exitCode: result.exitCode ?? -1, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

/** Command lines (the word under the cursor last) and what completing that word must offer. */
type Line = readonly [words: readonly string[], offered: readonly string[]];

const cases = (): readonly Line[] => [
  [["mcpmgr", "li"], ["list"]],
  // Only the workloads each applies to: stop the running, start the stopped or failed; restart any.
  [["mcpmgr", "stop", ""], ["alpha-one"]],
  [["mcpmgr", "start", ""], ["beta-two"]],
  // They take several names: each word past the first is completed as the first, but for the names
  // already on the line (an option's value is not one).
  [["mcpmgr", "stop", "alpha-one", ""], []],
  [["mcpmgr", "start", "x", ""], ["beta-two"]],
  [["mcpmgr", "start", "beta-two", "x", ""], []],
  [["mcpmgr", "restart", "alpha-one", ""], ["beta-two"]],
  [["mcpmgr", "rm", "beta-two", "--group", "alpha-one", ""], ["alpha-one"]],
  [
    ["mcpmgr", "rm", "x", ""],
    ["alpha-one", "beta-two"],
  ],
  [
    ["mcpmgr", "rm", "alpha-one", "--group", ""],
    ["default", "team"],
  ],
  [
    ["mcpmgr", "restart", ""],
    ["alpha-one", "beta-two"],
  ],
  [["mcpmgr", "logs", "be"], ["beta-two"]],
  [
    ["mcpmgr", "gateway", ""],
    ["default", "team"],
  ],
  [["mcpmgr", "client", "register", "--group", "t"], ["team"]],
  // default cannot be removed.
  [["mcpmgr", "group", "rm", ""], ["team"]],
  [
    ["mcpmgr", "secret", "get", "g"],
    ["gh-token", "gl-token"],
  ],
  [["mcpmgr", "secret", "delete", "gl"], ["gl-token"]],
  [["mcpmgr", "run", "fetch", "--secret", "gh"], ["gh-token,target="]],
  [["mcpmgr", "client", "register", "cl"], CLIENT_IDS.filter((id) => id.startsWith("cl"))],
  [
    ["mcpmgr", "list", "--format", ""],
    ["json", "text"],
  ],
  [
    ["mcpmgr", "run", "--transport", "s"],
    ["sse", "stdio", "streamable-http"],
  ],
  [["mcpmgr", "run", "--name", "x", "fet"], ["fetch"]],
  [["mcpmgr", "logs", "alpha-one", "--f"], ["--follow"]],
  [["mcpmgr", "export", "alpha-one", join(dir, "expo")], [join(dir, "exported.json")]],
  [["mcpmgr", "run", "fetch", "--", join(dir, "expo")], [join(dir, "exported.json")]],
  [["mcpmgr", "proxy", ""], ["stdio"]],
  [
    ["mcpmgr", "completion", ""],
    ["bash", "fish", "powershell", "zsh"],
  ],
];

/** Every command's options (the word under the cursor "-") and every parent's subcommands. */
function coverage(): Line[] {
  return [
    ...Object.entries(tables).map(
      ([path, table]) => [["mcpmgr", ...path.split(" "), "-"], optionWords(table)] as const,
    ),
    ...Object.entries(parents).map(
      ([path, subs]) => [["mcpmgr", ...path.split(" ").filter(Boolean), ""], [...subs]] as const,
    ),
  ].map(([words, offered]) => [words, offered] as const);
}

const sorted = (words: readonly string[]) => [...new Set(words)].sort();

test("the tree completion works from is every command, with its table's options", async () => {
  const tree = await completionTree(rootCommand);
  const commands = allCommands(tree);
  expect(sorted(commands.map(keyOf))).toEqual(sorted([...Object.keys(tables), ...Object.keys(parents)]));
  for (const command of commands) {
    const table = tables[keyOf(command)];
    if (table === undefined) continue;
    const words = command.options.flatMap((option) => [option.long, ...(option.short ? [option.short] : [])]);
    expect(sorted(words)).toEqual(sorted(optionWords(table)));
  }
});

test("mcpmgr completion prints the script; a wrong shell is a usage error with a suggestion", () => {
  const printed = run(["mcpmgr", "completion", "bash"]);
  expect(printed.exitCode).toBe(0);
  expect(printed.stdout.trim()).toBe((scripts.bash as string).trim());
  const wrong = run(["mcpmgr", "completion", "bsah"]);
  expect(wrong.exitCode).toBe(2);
  expect(wrong.stdout).toBe("");
  expect(wrong.stderr).toContain("did you mean bash?");
});

test("the built-in permission profiles completion offers are the ones mcpmgr accepts", () => {
  expect(BUILTIN_PROFILES).toEqual([...builtinProfileNames]);
});

/**
 * The values of --permission-profile (a built-in name, or a file), --env-file-dir (folders) and -v (a host
 * path) as one shell's `complete` offers them, in the test's `prof` folder; `asFolder` is how that shell
 * writes a folder.
 */
function expectPathValues(complete: (lines: readonly Line[]) => string[][], asFolder: (path: string) => string): void {
  const prof = join(dir, "prof");
  const [names, profileFile, folders, volume] = complete([
    [["mcpmgr", "run", "fetch", "--permission-profile", "n"], []],
    [["mcpmgr", "run", "fetch", "--permission-profile", join(prof, "s")], []],
    [["mcpmgr", "run", "fetch", "--env-file-dir", `${prof}/`], []],
    [["mcpmgr", "run", "fetch", "-v", join(prof, "s")], []],
  ]);
  expect(sorted(names ?? [])).toEqual(["network", "none"]);
  expect(profileFile).toEqual([join(prof, "strict.json")]);
  expect(folders).toEqual([asFolder(join(prof, "envs"))]);
  expect(volume).toEqual([join(prof, "strict.json")]);
}

describe("bash", () => {
  function complete(lines: readonly Line[]): string[][] {
    const calls = lines.map(([words]) => `c ${words.map((word) => `'${word}'`).join(" ")}`);
    const program = `source '${join(dir, "mcpmgr.bash")}'
c() { COMP_WORDS=("$@"); COMP_CWORD=$(( \${#COMP_WORDS[@]} - 1 )); COMPREPLY=(); _mcpmgr; printf '%s\\n' "\${COMPREPLY[*]}"; }
${calls.join("\n")}
`;
    const result = run(["bash", "--norc", "--noprofile", "-c", program]);
    expect(result.stderr).toBe("");
    expect(result.exitCode).toBe(0);
    return result.stdout
      .split("\n")
      .slice(0, lines.length)
      .map((line) => line.split(" ").filter(Boolean));
  }

  test("the script registers _mcpmgr for mcpmgr", () => {
    const result = run([
      "bash",
      "--norc",
      "--noprofile",
      "-c",
      `source '${join(dir, "mcpmgr.bash")}'; complete -p mcpmgr`,
    ]);
    expect(result.stdout.trim()).toBe("complete -F _mcpmgr mcpmgr");
  });

  test("commands, options, their values, names from the store, files", () => {
    const lines = cases();
    complete(lines).forEach((offered, i) => {
      expect([lines[i]?.[0].join(" "), sorted(offered)]).toEqual([
        lines[i]?.[0].join(" "),
        sorted(lines[i]?.[1] ?? []),
      ]);
    });
  });

  test("path values as the shell completes them: a profile's name or file, a folder of env files, -v's host path", () => {
    // Folders only: the file beside it is not offered.
    expectPathValues(complete, (folder) => folder);
  });

  test("--opt=value, whether or not = breaks words", () => {
    const [split, whole] = complete([
      [["mcpmgr", "list", "--format", "=", "j"], []],
      [["mcpmgr", "list", "--format=j"], []],
    ]);
    expect(split).toEqual(["json"]);
    expect(whole).toEqual(["--format=json"]);
  });

  test("every command and every option of the tables", () => {
    const lines = coverage();
    complete(lines).forEach((offered, i) => {
      expect([lines[i]?.[0].join(" "), sorted(offered)]).toEqual([
        lines[i]?.[0].join(" "),
        sorted(lines[i]?.[1] ?? []),
      ]);
    });
  });
});

describe("fish", () => {
  function complete(lines: readonly Line[]): string[][] {
    const quote = (text: string) => `'${text.replace(/[\\']/g, "\\$&")}'`;
    const calls = lines.map(
      ([words]) =>
        `printf '%s\\n' (complete -C ${quote(words.join(" "))} | string replace -r '\\t.*' '' | string join ' ')`,
    );
    const result = run(["fish", "--no-config", "-c", `source '${join(dir, "mcpmgr.fish")}'\n${calls.join("\n")}`]);
    expect(result.stderr).toBe("");
    expect(result.exitCode).toBe(0);
    // One line per call (an empty one when nothing matches).
    return result.stdout
      .split("\n")
      .slice(0, lines.length)
      .map((line) => line.split(" ").filter(Boolean));
  }

  test("the script is valid fish", () => {
    expect(run(["fish", "--no-config", "-n", join(dir, "mcpmgr.fish")]).exitCode).toBe(0);
  });

  test("path values as the shell completes them: a profile's name or file, a folder of env files, -v's host path", () => {
    // Folders only (fish writes them with their slash): the file beside it is not offered.
    expectPathValues(complete, (folder) => `${folder}/`);
  });

  test("commands, options, their values, names from the store, files", () => {
    const lines: Line[] = [...cases(), [["mcpmgr", "list", "--format=j"], ["--format=json"]]];
    complete(lines).forEach((offered, i) => {
      expect([lines[i]?.[0].join(" "), sorted(offered)]).toEqual([
        lines[i]?.[0].join(" "),
        sorted(lines[i]?.[1] ?? []),
      ]);
    });
  });

  test("every command and every option of the tables", () => {
    const lines = coverage();
    complete(lines).forEach((offered, i) => {
      expect([lines[i]?.[0].join(" "), sorted(offered)]).toEqual([
        lines[i]?.[0].join(" "),
        sorted(lines[i]?.[1] ?? []),
      ]);
    });
    // 34 completions, each testing the conditions of the script's ~300 `complete` rules: seconds under load.
  }, 60_000);
});

describe("zsh", () => {
  test("the script is valid zsh and registers _mcpmgr after compinit", () => {
    expect(run(["zsh", "-n", join(dir, "mcpmgr.zsh")]).exitCode).toBe(0);
    const loaded = run([
      "zsh",
      "-f",
      "-c",
      `autoload -Uz compinit; compinit -u -D; source '${join(dir, "mcpmgr.zsh")}'; print -r -- $_comps[mcpmgr]`,
    ]);
    expect(loaded.stderr).toBe("");
    expect(loaded.stdout.trim()).toBe("_mcpmgr");
  });

  test("every command and every option of the tables", () => {
    const lines = coverage();
    const calls = lines.map(([words]) => {
      const cmd = words.slice(1, -1).join(" ");
      return words.at(-1) === "-"
        ? `_mcpmgr_options '${cmd}'; print -r -- \${(j: :)\${reply%%:*}}`
        : `_mcpmgr_subcommands '${cmd}'; print -r -- \${(j: :)\${reply%%:*}}`;
    });
    const result = run(["zsh", "-f", "-c", `source '${join(dir, "mcpmgr.zsh")}' 2>/dev/null\n${calls.join("\n")}`]);
    const printed = result.stdout.split("\n");
    lines.forEach(([words, offered], i) => {
      const got = (printed[i] ?? "").split(" ").filter(Boolean);
      expect([words.join(" "), sorted(got)]).toEqual([words.join(" "), sorted(offered)]);
    });
  });

  test("a tab press in an interactive zsh: commands, values, names from the store, files", async () => {
    const lines: (readonly [string, string[]])[] = [
      ["mcpmgr li", ["list"]],
      ["mcpmgr group ", ["create", "list", "rm"]],
      ["mcpmgr stop ", ["alpha-one"]],
      ["mcpmgr start ", ["beta-two"]],
      ["mcpmgr restart alpha-one ", ["beta-two"]],
      ["mcpmgr rm beta-two alpha-one ", []],
      ["mcpmgr list --format=j", ["json"]],
      ["mcpmgr run --transport s", ["sse", "stdio", "streamable-http"]],
      [`mcpmgr export alpha-one ${join(dir, "expo")}`, ["exported.json"]],
      ["mcpmgr run fetch --permission-profile no", ["none"]],
      [`mcpmgr run fetch --env-file-dir ${join(dir, "prof")}/`, ["envs"]],
      [`mcpmgr run fetch -v ${join(dir, "prof")}/st`, ["strict.json"]],
    ];
    const out = join(dir, "zsh-hits");
    await mkdir(out);
    // compadd is wrapped to write down what it is given, then does its real work. Each step waits for a
    // file the shell writes: the prompt is ready, the tab press completed something, the line is done
    // (zsh skips completing while more input is pending, so nothing is typed ahead).
    const driver = `zmodload zsh/zpty
integer n=0
await() { for i in {1..600}; do [[ -e $1 ]] && return 0; zpty -r -t z junk 2>/dev/null; sleep 0.05; done; return 1 }
for line in ${lines.map(([line]) => `'${line}'`).join(" ")}; do
  (( n++ ))
  zpty z zsh -f -i
  zpty -w z "PROMPT=''; LISTMAX=10000; autoload -Uz compinit; compinit -u -D; source '${join(dir, "mcpmgr.zsh")}'"
  zpty -w z 'compadd () { local -a __hits; builtin compadd -O __hits "$@"; print -rl -- $__hits >> ${out}/'$n'.hits; builtin compadd "$@" }'
  zpty -w z "print > ${out}/$n.ready"
  await ${out}/$n.ready
  zpty -w -n z "$line"$'\\t'
  await ${out}/$n.hits
  zpty -w -n z $'\\x15'
  zpty -w z "print > ${out}/$n.done"
  await ${out}/$n.done
  zpty -d z
done
`;
    const result = run(["zsh", "-f", "-c", driver]);
    expect(result.exitCode).toBe(0);
    for (const [i, [line, offered]] of lines.entries()) {
      expect(await Bun.file(join(out, `${i + 1}.done`)).exists()).toBe(true);
      const hits = (await readFile(join(out, `${i + 1}.hits`), "utf8").catch(() => "")).split("\n").filter(Boolean);
      // _files completes a path segment by segment: the file is among what it offers.
      if (line.startsWith("mcpmgr export") || line.includes(" -v ") || line.includes("--permission-profile"))
        expect(hits).toContain(offered[0] as string);
      // Folders only: the profile file beside the folder is not offered.
      else if (line.includes("--env-file-dir"))
        expect([hits.includes("envs"), hits.includes("strict.json")]).toEqual([true, false]);
      else expect([line, sorted(hits)]).toEqual([line, sorted(offered)]);
    }
    // Six interactive zsh sessions, each loading compinit and asking mcpmgr (from source) for names:
    // about a second each on an idle machine, several under load; `run` gives the driver 120 s.
  }, 120_000);
});

describe("PowerShell (no pwsh on Debian: the script's content)", () => {
  test("a native completer for mcpmgr holding every command and every option of the tables", () => {
    const script = scripts.powershell as string;
    expect(script).toContain("Register-ArgumentCompleter -Native -CommandName mcpmgr");
    for (const [path, table] of Object.entries(tables)) {
      const start = script.indexOf(`    '${path}' = @{`);
      expect(start).toBeGreaterThan(-1);
      const entry = script.slice(start, script.indexOf("\n    }", start));
      for (const word of optionWords(table)) expect(entry).toContain(`'${word}' = `);
    }
    for (const [path, subs] of Object.entries(parents)) {
      const start = script.indexOf(`    '${path}' = @{`);
      const entry = script.slice(start, script.indexOf("\n    }", start));
      for (const sub of subs) expect(entry).toContain(`'${sub}' = `);
    }
    expect(script).toContain("__complete $completes");
    // The commands that take several names complete each one past the first like it (index 0),
    // leaving out the names given there already.
    for (const path of ["stop", "start", "restart", "rm"]) {
      const start = script.indexOf(`    '${path}' = @{`);
      expect(script.slice(start, script.indexOf("\n    }", start))).toContain("Last = 0");
    }
    expect(script).toContain("$given += $word");
    expect(script).toContain("Where-Object { $_ -notin $already }");
  });
});

test("mcpmgr __complete prints names, and nothing (exit 0) for what it does not know", () => {
  expect(run(["mcpmgr", "__complete", "workloads"]).stdout).toBe("alpha-one\nbeta-two\n");
  expect(run(["mcpmgr", "__complete", "groups"]).stdout).toBe("default\nteam\n");
  expect(run(["mcpmgr", "__complete", "servers"]).stdout).toContain("fetch\n");
  expect(run(["mcpmgr", "__complete", "removable-groups"]).stdout).toBe("team\n");
  expect(run(["mcpmgr", "__complete", "secrets"]).stdout).toBe("gh-token\ngl-token\n");
  expect(run(["mcpmgr", "__complete", "secret-references"]).stdout).toBe("gh-token,target=\ngl-token,target=\n");
  for (const kind of ["constructor", ""]) {
    const result = run(["mcpmgr", "__complete", kind]);
    expect([kind, result.exitCode, result.stdout, result.stderr]).toEqual([kind, 0, "", ""]);
  }
});

test("secret names are offered only where listing them asks for nothing; never a value", () => {
  // Without MCPMGR_SECRETS_PASSWORD the password would come from the keychain, which may show a dialog: no names.
  const { MCPMGR_SECRETS_PASSWORD: _password, ...withoutPassword } = env;
  for (const kind of ["secrets", "secret-references"]) {
    const result = Bun.spawnSync(["mcpmgr", "__complete", kind], { cwd: dir, env: withoutPassword });
    expect([kind, result.exitCode, result.stdout.toString(), result.stderr.toString()]).toEqual([kind, 0, "", ""]);
  }
  // The environment provider lists the names of its variables.
  const fromEnvironment = Bun.spawnSync(["mcpmgr", "__complete", "secrets"], {
    cwd: dir,
    env: { ...withoutPassword, MCPMGR_SECRETS_PROVIDER: "environment", MCPMGR_SECRET_FROM_ENV: "env-value" },
  });
  expect(fromEnvironment.stdout.toString()).toContain("FROM_ENV");
  expect(fromEnvironment.stdout.toString()).not.toContain("env-value");
  for (const kind of ["secrets", "secret-references"])
    expect(run(["mcpmgr", "__complete", kind]).stdout).not.toContain("value-of-");
});
