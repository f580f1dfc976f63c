/**
 * The root command lists its subcommands from summaries (so `mcpmgr --help` loads none of
 * them): each summary must say what the command's own meta says, and help must show them all.
 */
import { expect, test, setDefaultTimeout } from "bun:test";
import { subcommands } from "../../src/cli/root.ts";
import { REPO_ROOT } from "../support/processes.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

test.each(Object.keys(subcommands))("the summary of '%s' matches the command's own meta", async (name) => {
  const summary = subcommands[name]!;
  const command = await summary.load();
  const meta = typeof command.meta === "function" ? await command.meta() : await command.meta;
  expect(meta?.name).toBe(name);
  expect(meta?.description).toBe(summary.description);
  expect(meta?.hidden).toBe(summary.hidden);
});

test("--help lists every visible command with its description, without colour codes on a pipe", () => {
  const env: Record<string, string | undefined> = { ...process.env };
  // Nothing asks for plain text here: a pipe alone must get it.
  delete env.NO_COLOR;
  delete env.FORCE_COLOR;
  delete env.CI;
  delete env.TEST;
  const run = Bun.spawnSync([process.execPath, "src/main.ts", "--help"], { cwd: REPO_ROOT, env, stdout: "pipe" });
  expect(run.exitCode).toBe(0);
  const help = run.stdout.toString();
  expect(help).not.toMatch(/\u001b\[/);
  for (const [name, { description, hidden }] of Object.entries(subcommands)) {
    const row = new RegExp(`^\\s+${name}\\s{2,}${description.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`, "m");
    if (hidden) expect(help).not.toContain(name);
    else expect(help).toMatch(row);
  }
});
