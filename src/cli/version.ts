/**
 * `mcpmgr version [--format json]`: what a bug report needs to say about this mcpmgr: its
 * version, the commit and date it was built from (scripts/compile.ts injects them; "development"
 * from source), the Bun runtime inside it, and the platform. `mcpmgr --version` prints only the
 * version, for scripts.
 */
import { defineCommand } from "citty";
import { parseArgv } from "../config/argv.ts";
import { formatOptions } from "../config/command-options.ts";
import { McpmgrError } from "../errors.ts";
import { buildDate, commit, version } from "../version.ts";
import { toCittyArgs, withExamples } from "./citty-args.ts";
import { printResult } from "./output.ts";

interface VersionInfo {
  readonly version: string;
  readonly commit: string;
  readonly buildDate: string;
  /** The Bun runtime compiled into the executable (or running the source). */
  readonly bun: string;
  readonly os: string;
  readonly arch: string;
}

function versionInfo(): VersionInfo {
  return { version, commit, buildDate, bun: Bun.version, os: process.platform, arch: process.arch };
}

const versionCommand = defineCommand({
  meta: { name: "version", description: "Show the version, commit, build date and runtime (for bug reports)" },
  args: toCittyArgs(formatOptions),
  run({ rawArgs }) {
    const { values, positionals, passthrough } = parseArgv(rawArgs, formatOptions, "version", false);
    if (positionals.length > 0 || passthrough.length > 0) {
      throw new McpmgrError("INVALID_ARGUMENT", "'mcpmgr version' takes no arguments", {
        hint: "run 'mcpmgr version' or 'mcpmgr version --format json'",
      });
    }
    const info = versionInfo();
    if (values.format === "json") return printResult(JSON.stringify(info, null, 2));
    printResult(`mcpmgr ${info.version}`);
    printResult(`  commit:   ${info.commit}`);
    printResult(`  built:    ${info.buildDate}`);
    printResult(`  runtime:  Bun ${info.bun}`);
    printResult(`  platform: ${info.os}/${info.arch}`);
  },
});

export default withExamples(versionCommand, [
  { description: "The version and how this mcpmgr was built", command: "mcpmgr version" },
  { description: "The same as JSON, to paste into a bug report", command: "mcpmgr version --format json" },
  { description: "Only the version number, for scripts", command: "mcpmgr --version" },
]);
