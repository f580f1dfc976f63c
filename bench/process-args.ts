/**
 * `--name value` / `--name=value` arguments of the bench's helper processes (the upstream and
 * the peers). They take a handful of options from the bench itself, so a full parser would be
 * more than they need.
 */

/** The value of `--name`, else `fallback`; with no fallback, a missing option ends the process (exit 2). */
export function processArg(program: string, name: string, fallback?: string): string {
  const argv = Bun.argv;
  for (let i = 0; i < argv.length; i++) {
    const given = argv[i] as string;
    if (given === `--${name}` && argv[i + 1] !== undefined) return argv[i + 1] as string;
    if (given.startsWith(`--${name}=`)) return given.slice(name.length + 3);
  }
  if (fallback === undefined) {
    process.stderr.write(`${program}: --${name} is required\n`);
    process.exit(2);
  }
  return fallback;
}
