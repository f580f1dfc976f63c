/** `mcpmgr run`: start an MCP server as a managed workload behind the proxy. */
import { defineCommand } from "citty";
import { runOptions } from "../config/run-options.ts";
import { parseRunArgv } from "../config/run-spec.ts";
import { assertSupported } from "../config/rules.ts";
import { McpmgrError } from "../errors.ts";
import { parseSource } from "../runtime/source.ts";
import { toCittyArgs } from "./citty-args.ts";
import { runForeground } from "./run-foreground.ts";

/**
 * What works in this version: --foreground runs of packages and remote URLs with
 * the listener, transport, environment, mount and sandbox options. Every other option
 * is refused rather than ignored until its feature lands.
 */
const supported: ReadonlySet<string> = new Set([
  "name",
  "foreground",
  "transport",
  "proxy-mode",
  "proxy-port",
  "host",
  "endpoint-prefix",
  "trust-proxy-headers",
  "env",
  "env-file",
  "env-file-dir",
  "secret",
  "volume",
  "permission-profile",
  "insecure-allow-unsandboxed",
]);
const unsupported = new Map(Object.keys(runOptions).filter((name) => !supported.has(name)).map((name) => [name, "this version runs servers in the foreground without workload management"] as const));

export default defineCommand({
  meta: {
    name: "run",
    description: "Run an MCP server (registry name, image, npx:// uvx:// go:// package, exported config or URL) behind an HTTP proxy",
  },
  args: toCittyArgs(runOptions, {
    SERVER_OR_IMAGE_OR_PROTOCOL: { description: "Registry name, image reference, npx:// uvx:// go:// package, or URL", required: false },
  }),
  async run({ rawArgs }) {
    const parsed = parseRunArgv(rawArgs);
    assertSupported(parsed.given, unsupported, "run", parsed.values);
    if (!parsed.values.foreground) {
      throw new McpmgrError("NOT_SUPPORTED_YET", "detached workloads are not supported yet", {
        hint: "add --foreground to run the server in this terminal (Ctrl-C stops it)",
      });
    }
    const source = parseSource(parsed.positionals[0] as string);
    const code = await runForeground(source, parsed);
    if (code !== 0) process.exit(code);
  },
});
