/**
 * The EXAMPLES of every command's help are command lines that work: each one is routed to the
 * command it names and parsed with that command's own parser (the strict option parser over its
 * table, then run's, proxy's and gateway's own checks), and its arguments are names those
 * commands accept. Help shows them.
 */
import { describe, expect, test, setDefaultTimeout } from "bun:test";
import type { ArgsDef, CommandDef } from "citty";
import { isClientId } from "../../src/clients/catalog.ts";
import { argsSourceOf, type Example, examplesOf, helpSubCommandsOf } from "../../src/cli/citty-args.ts";
import { rootCommand } from "../../src/cli/root.ts";
import { parseArgv } from "../../src/config/argv.ts";
import { buildGatewaySpec } from "../../src/config/gateway-spec.ts";
import { buildProxySpec } from "../../src/config/proxy-spec.ts";
import { parseRunArgv } from "../../src/config/run-argv.ts";
import { checkOutgoingAuthRules } from "../../src/config/rules.ts";
import { embeddedEntries } from "../../src/registry/loader.ts";
import { validateSecretName } from "../../src/secrets/provider.ts";
import { assertGroupName } from "../../src/state/groups.ts";
import { isValidWorkloadName } from "../../src/state/workload-name.ts";
import { REPO_ROOT } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

type AnyCommand = CommandDef<any>;

async function resolve<T>(value: T | (() => T | Promise<T>) | Promise<T>): Promise<T> {
  return typeof value === "function" ? await (value as () => T | Promise<T>)() : await value;
}

async function subcommandsOf(command: AnyCommand): Promise<Record<string, AnyCommand>> {
  const subs: Record<string, AnyCommand> = {};
  for (const [name, sub] of [
    ...Object.entries((await resolve(command.subCommands)) ?? {}),
    ...Object.entries(helpSubCommandsOf(command) ?? {}),
  ])
    subs[name] = (await resolve(sub)) as AnyCommand;
  return subs;
}

/** Every visible command with its path: [] for mcpmgr itself. */
async function visibleCommands(command: AnyCommand, path: string[] = []): Promise<[string[], AnyCommand][]> {
  const found: [string[], AnyCommand][] = [[path, command]];
  for (const [name, sub] of Object.entries(await subcommandsOf(command))) {
    if ((await resolve(sub.meta))?.hidden) continue;
    found.push(...(await visibleCommands(sub, [...path, name])));
  }
  return found;
}

/** Shell words of a command line (the examples use plain words and '...' quoting only). */
function shellWords(line: string): string[] {
  const words: string[] = [];
  for (const match of line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)) words.push(match[1] ?? match[2] ?? match[3] ?? "");
  return words;
}

const servers = new Set(embeddedEntries().map((entry) => entry.name));

/** A positional is a name the command accepts, as far as it can be told without running it. */
function checkPositional(path: string, args: ArgsDef, index: number, value: string): void {
  if (path.startsWith("secret ")) {
    validateSecretName(value);
    return;
  }
  const source = argsSourceOf(args);
  const name = Object.entries(args).filter(([, arg]) => arg.type === "positional")[index]?.[0];
  const completes = name === undefined ? undefined : source?.positionals[name]?.completes;
  // (proxy stdio takes a URL or a workload's name)
  const url = path === "proxy stdio" && /^https?:\/\//.test(value);
  if (completes === "workloads" || completes === "live-workloads" || completes === "stopped-workloads")
    expect(url || isValidWorkloadName(value)).toBe(true);
  else if (completes === "groups") assertGroupName(value);
  else if (completes === "servers") expect(value.includes("://") || servers.has(value)).toBe(true);
  else if (Array.isArray(completes)) expect(completes).toContain(value);
  if (path === "group create") assertGroupName(value);
  if (path.startsWith("client ")) expect(isClientId(value)).toBe(true);
}

/** Routes an example to its command and parses it as that command would; returns the command's path. */
async function parseExample(example: Example): Promise<string> {
  const [program, ...words] = shellWords(example.command);
  expect(program).toBe("mcpmgr");
  let command: AnyCommand = rootCommand;
  const path: string[] = [];
  for (let next = (await subcommandsOf(command))[words[0] ?? ""]; next !== undefined; ) {
    path.push(words.shift() as string);
    command = next;
    next = (await subcommandsOf(command))[words[0] ?? ""];
  }
  const key = path.join(" ");
  const args: ArgsDef = (await resolve(command.args)) ?? {};
  if (key === "") {
    // mcpmgr itself takes only its own flags.
    for (const word of words) expect(Object.keys(args).map((name) => `--${name}`)).toContain(word);
    return key;
  }
  const source = argsSourceOf(args);
  expect(source, `'mcpmgr ${key}' has its arguments from an option table`).toBeDefined();
  const positionals = Object.values(source?.positionals ?? {});
  const parsed = parseArgv(words, source?.table ?? {}, key, key === "run");
  const given = path[0] === "secret" ? [...parsed.positionals, ...parsed.passthrough] : parsed.positionals;
  expect(given.length).toBeGreaterThanOrEqual(positionals.filter((positional) => positional.required).length);
  // A variadic last positional (`registry search WORDS`) takes any number of words.
  if (!positionals.at(-1)?.variadic) expect(given.length).toBeLessThanOrEqual(positionals.length);
  for (const [index, value] of given.entries()) checkPositional(key, args, index, value);
  if (key === "run") parseRunArgv(words);
  if (key === "proxy") buildProxySpec(words);
  if (key === "proxy stdio") checkOutgoingAuthRules(parsed.given);
  if (key === "gateway") buildGatewaySpec(words);
  return key;
}

const commands = await visibleCommands(rootCommand);

describe("every command's help has two or three examples that parse", () => {
  test.each(commands.map(([path, command]) => [path.join(" ") || "(mcpmgr)", command] as const))(
    "%s",
    async (_name, command) => {
      const examples = examplesOf(command) ?? [];
      expect(examples.length).toBeGreaterThanOrEqual(2);
      expect(examples.length).toBeLessThanOrEqual(3);
      for (const example of examples) {
        expect(example.description.length).toBeGreaterThan(0);
        await parseExample(example);
      }
    },
  );
});

test("the check refuses a wrong example: an unknown option, a missing argument, a bad value, a bad name", async () => {
  const wrong = [
    "mcpmgr run fetch --proxy-prot 8080",
    "mcpmgr export fetch",
    "mcpmgr list --format yaml",
    "mcpmgr stop Not_A_Name",
    "mcpmgr run no-such-server",
    "mcpmgr proxy local",
    "mcpmgr --verbose",
  ];
  for (const command of wrong) {
    const outcome = await parseExample({ description: "wrong", command }).then(
      () => "accepted",
      () => "refused",
    );
    expect(`${command}: ${outcome}`).toBe(`${command}: refused`);
  }
});

test("help prints the examples under EXAMPLES, after the options", () => {
  const run = Bun.spawnSync([process.execPath, "src/main.ts", "logs", "--help"], {
    cwd: REPO_ROOT,
    env: { ...process.env, NO_COLOR: "1" },
    stdout: "pipe",
  });
  expect(run.exitCode).toBe(0);
  const help = run.stdout.toString();
  const logs = commands.find(([path]) => path.join(" ") === "logs")?.[1] as AnyCommand;
  expect(help.indexOf("EXAMPLES")).toBeGreaterThan(help.indexOf("OPTIONS"));
  for (const { description, command } of examplesOf(logs) ?? []) {
    expect(help).toContain(`  # ${description}\n  ${command}\n`);
  }
});
