/**
 * How run-main.ts hands a command line to a command (the start-up of `mcpmgr registry list` and
 * `mcpmgr list`, bench `cli-startup`): past the commands that only route, and to a command that
 * only runs without citty parsing the argv first. The commands parse `rawArgs` themselves
 * (config/argv.ts); citty still reports what only it checks, a missing required argument.
 */
import { expect, test } from "bun:test";
import { type ArgsDef, type CommandContext, type CommandDef, defineCommand } from "citty";
import { isRoutingCommand, routingCommand } from "../../src/cli/citty-args.ts";
import { pastRouters, runTarget } from "../../src/cli/run-main.ts";

/** A command whose `args` is a function, so that every resolution of it (ours, citty's) is counted. */
function counted(args: ArgsDef, run: (ctx: CommandContext) => void) {
  const calls = { args: 0 };
  const command = defineCommand({
    meta: { name: "leaf" },
    args: () => {
      calls.args++;
      return args;
    },
    run,
  });
  return { command: command as CommandDef, calls };
}

test("a command that only runs gets its raw arguments without citty parsing them; args are parsed if read", async () => {
  let seen: CommandContext | undefined;
  const { command, calls } = counted({ format: { type: "string", default: "text" } }, (ctx) => {
    seen = ctx;
  });
  await runTarget(command, ["--format", "json", "extra"]);
  expect(seen?.rawArgs).toEqual(["--format", "json", "extra"]);
  // Resolved once, to see that citty could not reject them: citty itself never ran.
  expect(calls.args).toBe(1);
  expect(seen?.args.format as unknown).toBe("json");
  expect(seen?.args._).toEqual(["extra"]);
});

test("a required argument still goes through citty, which reports it missing", async () => {
  let ran = false;
  const { command, calls } = counted({ NAME: { type: "positional", description: "name" } }, () => {
    ran = true;
  });
  await expect(runTarget(command, [])).rejects.toMatchObject({ code: "EARG" });
  expect(ran).toBe(false);
  expect(calls.args).toBe(2);
});

test("a command with a setup hook is left to citty", async () => {
  const order: string[] = [];
  const command = defineCommand({
    meta: { name: "hooked" },
    setup: () => {
      order.push("setup");
    },
    run: () => {
      order.push("run");
    },
  });
  await runTarget(command as CommandDef, []);
  expect(order).toEqual(["setup", "run"]);
});

test("routers are passed by the subcommand a word names; their 'no subcommand' error stays theirs", async () => {
  const leaf = defineCommand({ meta: { name: "list" }, run: () => {} });
  const router = routingCommand({ meta: { name: "registry" }, subCommands: { list: leaf } }, () =>
    Object.assign(new Error("'mcpmgr registry' needs a subcommand"), { code: "NO_SUB" }),
  );
  expect(isRoutingCommand(router)).toBe(true);
  const root = defineCommand({ meta: { name: "mcpmgr" }, subCommands: { registry: router } }) as CommandDef;

  const [target, rest] = await pastRouters(root, ["registry", "list", "--format", "json"]);
  expect(target).toBe(leaf as CommandDef);
  expect(rest).toEqual(["--format", "json"]);

  // No subcommand named: the router is where dispatch stops, and its run says what is missing.
  // (An option it does not declare, "registry --bogus", is refused before that: see below.)
  const [stopped, args] = await pastRouters(root, ["registry"]);
  expect(stopped).toBe(router as CommandDef);
  await expect(runTarget(stopped, args)).rejects.toMatchObject({ code: "NO_SUB" });
  // After a subcommand ran (as citty calls it then), the router's run has nothing to say.
  await expect(Promise.resolve(router.run?.({ rawArgs: ["list"] } as CommandContext))).resolves.toBeUndefined();
});

test("a subcommand's name after -- names no subcommand: the router says one is missing (it ran nothing, exit 0)", async () => {
  const leaf = defineCommand({ meta: { name: "list" }, run: () => {} });
  const router = routingCommand({ meta: { name: "registry" }, subCommands: { list: leaf } }, () =>
    Object.assign(new Error("'mcpmgr registry' needs a subcommand"), { code: "NO_SUB" }),
  );
  const root = defineCommand({ meta: { name: "mcpmgr" }, subCommands: { registry: router } }) as CommandDef;
  const [target, rest] = await pastRouters(root, ["registry", "--", "list"]);
  expect(target).toBe(router as CommandDef);
  await expect(runTarget(target, rest)).rejects.toMatchObject({ code: "NO_SUB" });
});

test("an option a router does not declare is refused before the subcommand, not dropped; its own pass on", async () => {
  let ran = false;
  const leaf = defineCommand({
    meta: { name: "list" },
    run: () => {
      ran = true;
    },
  });
  const router = routingCommand(
    {
      meta: { name: "registry" },
      args: { help: { type: "boolean", alias: "h" } },
      subCommands: { list: leaf },
    },
    () => new Error("'mcpmgr registry' needs a subcommand"),
  );
  const root = defineCommand({
    meta: { name: "mcpmgr" },
    args: { debug: { type: "boolean" }, version: { type: "boolean" } },
    subCommands: { registry: router },
  }) as CommandDef;

  await expect(pastRouters(root, ["--frob", "registry", "list"])).rejects.toMatchObject({
    code: "INVALID_OPTION",
    message: "unknown option --frob",
  });
  await expect(pastRouters(root, ["registry", "--frob=1", "list"])).rejects.toMatchObject({
    code: "INVALID_OPTION",
    message: "unknown option --frob of 'mcpmgr registry'",
  });
  expect(ran).toBe(false);
  // Declared ones, in every spelling, are left where they are, for citty.
  for (const declared of [["--version"], ["--no-debug"], ["--debug=true"]]) {
    const [target, rest] = await pastRouters(root, [...declared, "registry", "list"]);
    expect(target).toBe(root);
    expect(rest).toEqual([...declared, "registry", "list"]);
  }
  const [target] = await pastRouters(root, ["registry", "-h", "list"]);
  expect(target).toBe(router as CommandDef);
  // A leaf's options are its own: dispatch ends there without looking at them.
  const [leafTarget, leafArgs] = await pastRouters(root, ["registry", "list", "--frob"]);
  expect(leafTarget).toBe(leaf as CommandDef);
  expect(leafArgs).toEqual(["--frob"]);
});
