/** `mcpmgr run`: start an MCP server as a managed workload behind the proxy. */
import { defineCommand } from "citty";
import { runOptions } from "../config/run-options.ts";
import { parseRunArgv } from "../config/run-spec.ts";
import { McpmgrError } from "../errors.ts";
import { toCittyArgs } from "./citty-args.ts";

export default defineCommand({
  meta: {
    name: "run",
    description: "Run an MCP server (registry name, image, npx:// uvx:// go:// package, exported config or URL) behind an HTTP proxy",
  },
  args: toCittyArgs(runOptions, {
    SERVER_OR_IMAGE_OR_PROTOCOL: { description: "Registry name, image reference, npx:// uvx:// go:// package, or URL", required: false },
  }),
  run({ rawArgs }) {
    // Every option is validated now, so typos and bad values are reported even before
    // workloads land; nothing is parsed and then ignored.
    parseRunArgv(rawArgs);
    throw new McpmgrError("NOT_SUPPORTED_YET", "'mcpmgr run' is not supported yet in this version", {
      hint: "to put a proxy in front of a server you already run, use 'mcpmgr proxy NAME --target-uri URL'",
    });
  },
});
