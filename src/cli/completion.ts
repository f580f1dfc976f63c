/**
 * `mcpmgr completion bash|zsh|fish|powershell`: the shell completion script on stdout, generated
 * from the command tree and the option tables (cli/completion/). Workload, group and registry
 * names are asked for at each tab press (`mcpmgr __complete KIND`), so the script never goes stale
 * on them; it does on new commands and options, like any installed completion.
 */
import { defineCommand } from "citty";
import { parseArgv } from "../config/argv.ts";
import { noOptions } from "../config/command-options.ts";
import { McpmgrError } from "../errors.ts";
import { toCittyArgs, withExamples } from "./citty-args.ts";
import { printResult } from "./output.ts";

export const shells = ["bash", "zsh", "fish", "powershell"] as const;
export type Shell = (typeof shells)[number];

function isShell(text: string): text is Shell {
  return (shells as readonly string[]).includes(text);
}

/** The completion script for `shell`, from the whole command tree (every command module is loaded). */
export async function completionScript(shell: Shell): Promise<string> {
  const [{ rootCommand }, { completionTree }] = await Promise.all([
    import("./root.ts"),
    import("./completion/model.ts"),
  ]);
  const tree = await completionTree(rootCommand);
  switch (shell) {
    case "bash":
      return (await import("./completion/bash.ts")).bashScript(tree);
    case "zsh":
      return (await import("./completion/zsh.ts")).zshScript(tree);
    case "fish":
      return (await import("./completion/fish.ts")).fishScript(tree);
    case "powershell":
      return (await import("./completion/powershell.ts")).powershellScript(tree);
  }
}

const completionCommand = defineCommand({
  meta: { name: "completion", description: "Print the shell completion script for bash, zsh, fish or PowerShell" },
  args: toCittyArgs(noOptions, {
    SHELL: { description: `The shell: ${shells.join(", ")}`, required: true, completes: shells },
  }),
  async run({ rawArgs }) {
    const { positionals, passthrough } = parseArgv(rawArgs, noOptions, "completion", false);
    const [shell, ...extra] = [...positionals, ...passthrough];
    if (shell === undefined || !isShell(shell) || extra.length > 0) {
      const { closeMatches, didYouMean } = await import("../close-matches.ts");
      const suggestion =
        shell === undefined ? undefined : didYouMean(closeMatches(shell, shells, { nearestOnly: true }));
      throw new McpmgrError(
        shell === undefined ? "MISSING_OPTION" : "INVALID_ARGUMENT",
        shell === undefined ? "missing the SHELL" : `'mcpmgr completion' takes one of ${shells.join(", ")}`,
        { hint: suggestion ?? "e.g. source <(mcpmgr completion bash); see 'mcpmgr completion --help'" },
      );
    }
    printResult((await completionScript(shell)).trimEnd());
  },
});

export default withExamples(completionCommand, [
  {
    description: "bash: add 'source <(mcpmgr completion bash)' to ~/.bashrc",
    command: "mcpmgr completion bash",
  },
  {
    description: "zsh: write it as _mcpmgr into a folder of your $fpath",
    command: "mcpmgr completion zsh",
  },
  {
    description: "fish: write it to ~/.config/fish/completions/mcpmgr.fish",
    command: "mcpmgr completion fish",
  },
]);
