/** argv of `mcpmgr run` → validated option values (workload/run-spec.ts turns them into a RunSpec). */
import { McpmgrError } from "../errors.ts";
import { parseArgv, type ParsedArgv } from "./argv.ts";
import { checkOutgoingAuthRules } from "./rules.ts";
import { runOptions } from "./run-options.ts";

export type ParsedRunArgv = ParsedArgv<typeof runOptions>;

export function parseRunArgv(argv: readonly string[]): ParsedRunArgv {
  // proxy and gateway call their listening port --port.
  const parsed = parseArgv(argv, runOptions, "run", true, {
    port: "did you mean --proxy-port? (the port clients connect to; proxy and gateway call it --port)",
  });
  const [source, ...extra] = parsed.positionals;
  if (parsed.given.has("from-config")) {
    if (source !== undefined) {
      throw new McpmgrError(
        "CONFLICTING_OPTIONS",
        `--from-config replaces the server argument, but ${JSON.stringify(source)} was given too`,
        {
          hint: "give either SERVER_OR_IMAGE_OR_PROTOCOL or --from-config PATH",
        },
      );
    }
  } else if (source === undefined) {
    throw new McpmgrError("MISSING_OPTION", "missing the server to run", {
      hint: "usage: mcpmgr run SERVER_OR_IMAGE_OR_PROTOCOL [-- ARGS...], or mcpmgr run --from-config PATH",
    });
  }
  if (extra.length > 0) {
    throw new McpmgrError("INVALID_ARGUMENT", `unexpected argument ${JSON.stringify(extra[0])}`, {
      hint: "arguments for the MCP server go after --, e.g. mcpmgr run SERVER -- --flag value",
    });
  }
  checkOutgoingAuthRules(parsed.given);
  return parsed;
}
