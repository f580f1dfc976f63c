/**
 * The help layout moves whitespace only: for every command, laid out piped, at 80 columns and at 20,
 * the help holds the same words as citty's rendering, and every option its definition declares.
 */
import { expect, test } from "bun:test";
import { type CommandDef, renderUsage } from "citty";
import { layoutHelp } from "../../src/cli/help-layout.ts";
import { subcommands } from "../../src/cli/root.ts";

type Command = CommandDef<any>;

const resolved = async <T>(value: T | (() => T | Promise<T>) | Promise<T>): Promise<T> =>
  typeof value === "function" ? await (value as () => T | Promise<T>)() : await value;

/** Every command under the root, with its parent (citty renders `mcpmgr proxy stdio` from both). */
async function everyCommand(): Promise<{ path: string; command: Command; parent: Command | undefined }[]> {
  const found: { path: string; command: Command; parent: Command | undefined }[] = [];
  const walk = async (path: string, command: Command, parent: Command | undefined) => {
    found.push({ path, command, parent });
    const subs = command.subCommands ? await resolved(command.subCommands) : {};
    for (const [name, sub] of Object.entries(subs ?? {})) await walk(`${path} ${name}`, await resolved(sub), command);
  };
  for (const [name, summary] of Object.entries(subcommands)) await walk(name, await summary.load(), undefined);
  return found;
}

const words = (text: string) =>
  text
    .replace(/\x1b\[[0-9;]*m/g, "")
    .split(/\s+/)
    .filter(Boolean)
    .sort();

test("every command's help keeps citty's words and lists every declared option, at any width", async () => {
  const commands = await everyCommand();
  expect(commands.length).toBeGreaterThan(30);
  for (const { path, command, parent } of commands) {
    const usage = await renderUsage(command, parent);
    const args = command.args ? await resolved(command.args) : {};
    for (const columns of [undefined, 80, 20]) {
      const laid = layoutHelp(usage, columns);
      expect({ path, columns, words: words(laid) }).toEqual({ path, columns, words: words(usage) });
      for (const [name, arg] of Object.entries(args ?? {})) {
        const spec = arg as { type?: string; hidden?: boolean };
        if (spec.type === "positional" || spec.hidden) continue;
        expect({ path, columns, option: name, shown: laid.includes(`--${name}`) }).toEqual({
          path,
          columns,
          option: name,
          shown: true,
        });
      }
      expect(laid.split("\n").filter((line) => /\s$/.test(line))).toEqual([]);
    }
  }
});
