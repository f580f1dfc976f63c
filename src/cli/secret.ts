/**
 * `mcpmgr secret set|get|list|delete`. A value never comes from argv (it would end up
 * in shell history and `ps`): `set` reads it from stdin, a pipe or a prompt that does
 * not echo. Only `get` prints a value, on stdout; everything else goes to stderr.
 */
import { resolvePaths } from "../state/paths.ts";
import { defineCommand } from "citty";
import { parseArgv } from "../config/argv.ts";
import { formatOptions as listOptions, noOptions, secretDeleteOptions } from "../config/command-options.ts";
import type { OptionTable } from "../config/option-spec.ts";
import { McpmgrError } from "../errors.ts";
import { environmentVariableFor, readOnlyError } from "../secrets/environment.ts";
import { createSecretManager, type SecretManager } from "../secrets/manager.ts";
import { readSecretText } from "../secrets/piped-value.ts";
import { validateSecretName } from "../secrets/provider.ts";
import { routingCommand, toCittyArgs, withExamples } from "./citty-args.ts";
import { promptHidden } from "./hidden-prompt.ts";
import { log, printResult } from "./output.ts";

const nameArg = { NAME: { description: "Secret name (letters, digits, '_', '.', '-')", required: true } };
const storedNameArg = { NAME: { ...nameArg.NAME, completes: "secrets" } } as const;

const set = withExamples(
  defineCommand({
    meta: {
      name: "set",
      description: "Store a secret; the value is read from stdin (a pipe, or typed without echo in a terminal)",
    },
    args: toCittyArgs(noOptions, nameArg),
    async run({ rawArgs }) {
      const name = nameFrom(rawArgs, "secret set", noOptions);
      const manager = openManager();
      if (!manager.provider.writable) throw readOnlyError(name);
      const value = await readSecretValue(name);
      const before = (await manager.provider.get(name))?.reveal();
      await manager.provider.set(name, value);
      log.success(`secret '${name}' saved`);
      // A workload looks its secrets up when it starts: one running now goes on with the old value.
      if (before === undefined || before === value) return;
      const { runningUsers } = await import("../workload/secret-references.ts");
      const running = await runningUsers(resolvePaths(process.env), name);
      if (running.length > 0)
        // One command for all of them: `restart` takes several names.
        log.warn(
          `${running.join(", ")} ${running.length === 1 ? "runs" : "run"} with the old value until restarted: 'mcpmgr restart ${running.join(" ")}'`,
        );
    },
  }),
  [
    { description: "Type a token without it being shown (or pipe it in)", command: "mcpmgr secret set github-token" },
    {
      description: "Give it to the github server as its GITHUB_PERSONAL_ACCESS_TOKEN",
      command: "mcpmgr run github --secret github-token,target=GITHUB_PERSONAL_ACCESS_TOKEN",
    },
  ],
);

const get = withExamples(
  defineCommand({
    meta: { name: "get", description: "Print a secret's value on stdout" },
    args: toCittyArgs(noOptions, storedNameArg),
    async run({ rawArgs }) {
      const name = nameFrom(rawArgs, "secret get", noOptions);
      const secret = await openManager().resolveSecret(name);
      printResult(secret.reveal());
    },
  }),
  [
    { description: "Print the value of 'github-token'", command: "mcpmgr secret get github-token" },
    { description: "Read a name that starts with '-'", command: "mcpmgr secret get -- -odd-name" },
  ],
);

const list = defineCommand({
  meta: {
    name: "list",
    description:
      "List the names of the stored secrets (never their values), each with the recorded workloads that use it; mcpmgr's oauth- entries say which remote and authorization server they are for",
  },
  args: toCittyArgs(listOptions),
  async run({ rawArgs }) {
    const parsed = parseArgv(rawArgs, listOptions, "secret list", false);
    const extra = [...parsed.positionals, ...parsed.passthrough];
    if (extra.length > 0) {
      throw new McpmgrError("INVALID_ARGUMENT", "'mcpmgr secret list' takes no arguments", {
        hint: "run 'mcpmgr secret list' or 'mcpmgr secret list --format json'",
      });
    }
    const provider = openManager().provider;
    const names = await provider.list();
    if (parsed.values.format === "json") {
      printResult(JSON.stringify(names));
      return;
    }
    if (names.length === 0) {
      log.info("no secrets stored");
      return;
    }
    // mcpmgr's own OAuth records are named by a hash: each says what it is for, from its label.
    const { describeRecord, isOAuthRecordName, oauthRecords } = await import("../auth/outgoing/grant-labels.ts");
    const labels = names.some(isOAuthRecordName) ? await oauthRecords(provider, names) : new Map();
    // Who looks each one up at its next start (what `secret delete` would refuse for).
    const { describeUsers, secretUsers } = await import("../workload/secret-references.ts");
    const { users, unreadable } = await secretUsers(resolvePaths(process.env));
    const usersOf = provider.kind === "environment" ? usersByVariable(users) : (name: string) => users.get(name);
    for (const name of names) {
      const label = labels.get(name);
      const usedBy = usersOf(name);
      const about = [
        ...(label === undefined ? [] : [describeRecord(label)]),
        ...(usedBy === undefined ? [] : [`used by ${describeUsers(usedBy)}`]),
      ];
      printResult([name, ...about].join("  "));
    }
    if (unreadable.length > 0)
      log.warn(`the records of ${unreadable.join(", ")} could not be read; they may use some of these secrets too`);
  },
});

const remove = defineCommand({
  meta: {
    name: "delete",
    description: "Delete a secret (refused while recorded workloads use it, naming them, unless --force)",
  },
  args: toCittyArgs(secretDeleteOptions, storedNameArg),
  async run({ rawArgs }) {
    const name = nameFrom(rawArgs, "secret delete", secretDeleteOptions);
    const force = parseArgv(rawArgs, secretDeleteOptions, "secret delete", false).values.force;
    const manager = openManager();
    if (!manager.provider.writable) throw readOnlyError(name);
    // A workload looks its secrets up at every start: without it, its next start or restart fails.
    const { deleteSecret, describeUsers } = await import("../workload/secret-references.ts");
    const { users, unreadable } = await deleteSecret(manager.provider, resolvePaths(process.env), name, force);
    log.success(`secret '${name}' deleted`);
    if (users.length > 0)
      log.warn(
        `still used by ${describeUsers(users)}: their next start or restart fails until 'mcpmgr secret set ${name}'`,
      );
    if (unreadable.length > 0)
      log.warn(`the records of ${unreadable.join(", ")} could not be read; they may use '${name}' too`);
  },
});

const subCommands = {
  set,
  get,
  list: withExamples(list, [
    {
      description: "The names of the stored secrets, with the workloads using each and what each oauth- entry is for",
      command: "mcpmgr secret list",
    },
    { description: "The names alone, as a JSON array", command: "mcpmgr secret list --format json" },
  ]),
  delete: withExamples(remove, [
    { description: "Delete the secret 'github-token'", command: "mcpmgr secret delete github-token" },
    { description: "Delete one whose name starts with '-'", command: "mcpmgr secret delete -- -odd-name" },
    {
      description: "Delete one that workloads still use (they fail at their next start until it is set again)",
      command: "mcpmgr secret delete github-token --force",
    },
  ]),
};

const secretCommand = routingCommand({
  meta: {
    name: "secret",
    description: "Manage secrets for MCP servers (encrypted file or environment; see MCPMGR_SECRETS_PROVIDER)",
  },
  subCommands,
});

export default withExamples(secretCommand, [
  { description: "Store a token (typed without echo, or piped in)", command: "mcpmgr secret set github-token" },
  { description: "List the stored names", command: "mcpmgr secret list" },
  { description: "Delete one", command: "mcpmgr secret delete github-token" },
]);

/** The one NAME argument; `--` lets a name start with '-'. */
function nameFrom(rawArgs: readonly string[], command: string, table: OptionTable): string {
  const parsed = parseArgv(rawArgs, table, command, false);
  const words = [...parsed.positionals, ...parsed.passthrough];
  if (words.length === 0) {
    throw new McpmgrError("INVALID_ARGUMENT", `'mcpmgr ${command}' needs a secret NAME`, {
      hint: `run 'mcpmgr ${command} NAME'`,
    });
  }
  if (words.length > 1) {
    // Never echo the extra words: after `set NAME`, the next word is most likely the value.
    throw command === "secret set"
      ? new McpmgrError(
          "INVALID_ARGUMENT",
          "'mcpmgr secret set' takes the value from stdin, never from the command line",
          {
            hint: "pipe it in: printf '%s' \"$VALUE\" | mcpmgr secret set NAME, or run 'mcpmgr secret set NAME' in a terminal and type it (clear the value from your shell history)",
          },
        )
      : new McpmgrError("INVALID_ARGUMENT", `'mcpmgr ${command}' takes exactly one NAME`, {
          hint: `run 'mcpmgr ${command} NAME'`,
        });
  }
  return validateSecretName(words[0] as string);
}

function openManager(): SecretManager {
  return createSecretManager({ dir: resolvePaths(process.env).dataDir, env: process.env });
}

async function readSecretValue(name: string): Promise<string> {
  const value = process.stdin.isTTY
    ? await promptHidden(`Value for secret '${name}' (input hidden): `)
    : await readSecretText(Bun.stdin.stream());
  if (value.length === 0) {
    throw new McpmgrError("INVALID_ARGUMENT", `no value for secret '${name}' on stdin`, {
      hint: "pipe it in: printf '%s' \"$VALUE\" | mcpmgr secret set NAME, or run the command in a terminal and type it",
    });
  }
  return value;
}

/**
 * The environment provider lists its variables' spelling (`GITHUB_TOKEN` for MCPMGR_SECRET_GITHUB_TOKEN), and
 * records name the secret as given (`github-token`): users are matched by the variable both read, else a
 * secret in use would be listed as used by none.
 */
function usersByVariable<User>(users: ReadonlyMap<string, User[]>): (listed: string) => User[] | undefined {
  const byVariable = new Map<string, User[]>();
  for (const [secret, its] of users) {
    const variable = environmentVariableFor(secret);
    byVariable.set(variable, [...(byVariable.get(variable) ?? []), ...its]);
  }
  return (listed) => byVariable.get(environmentVariableFor(listed));
}
