/** `mcpmgr run`: start an MCP server as a managed workload behind the proxy. */
import { defineCommand } from "citty";
import { runOptions } from "../config/run-options.ts";
import { caBundleOptions } from "../config/flags/ca-bundle.ts";
import { incomingAuthOptions } from "../config/flags/incoming-auth.ts";
import { outgoingAuthOptions } from "../config/flags/outgoing-auth.ts";
import { telemetryOptions } from "../config/flags/telemetry.ts";
import { parseRunArgv } from "../config/run-spec.ts";
import { assertSupported } from "../config/rules.ts";
import { McpmgrError } from "../errors.ts";
import { planRun } from "./run-plan.ts";
import { toCittyArgs } from "./citty-args.ts";
import { runForeground } from "./workload-runner.ts";
import { runDetached } from "./detached-run.ts";
import { assertContainerNameFree } from "./container-workload.ts";
import { readJsonFile } from "../state/atomic-file.ts";
import { workloadRecordSchema } from "../state/workload-record.ts";

/**
 * `--from-config PATH`: the exported record holds the run options as they were
 * validated; they are parsed again, so an edited file gets the same checks as a
 * command line. Relative paths in it are taken from its working directory.
 */
async function argsFromConfig(path: string, foreground: boolean): Promise<string[]> {
  const record = await readJsonFile(path, workloadRecordSchema, { hint: "export one with 'mcpmgr export NAME PATH'" });
  if (record === undefined)
    throw new McpmgrError("INVALID_OPTION", `--from-config ${JSON.stringify(path)}: no such file`, {
      hint: "give the path of an exported configuration",
    });
  if (record.runOptions.length === 0) {
    throw new McpmgrError("INVALID_OPTION", `--from-config ${path}: the file has no run options`, {
      hint: "export it again with 'mcpmgr export NAME PATH'",
    });
  }
  if (record.workingDir) process.chdir(record.workingDir);
  return foreground ? ["--foreground", ...record.runOptions] : [...record.runOptions];
}

/**
 * What works in this version: images, packages (in a container or a bwrap sandbox) and
 * remote URLs with the listener, transport, environment, mount, sandbox, container,
 * network and build options. Every other option
 * is refused rather than ignored until its feature lands.
 */
const supported: ReadonlySet<string> = new Set([
  "name",
  "foreground",
  "transport",
  "target-host",
  "target-port",
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
  "allow-registry-mount",
  "insecure-allow-unsandboxed",
  "group",
  "label",
  "from-config",
  "publish",
  "ignore-globally",
  "print-resolved-overlays",
  "network",
  "isolate-network",
  "allow-docker-gateway",
  "image-verification",
  "ca-cert",
  "runtime-image",
  "runtime-add-package",
  "tools",
  "tools-override",
  "enable-audit",
  "audit-config",
  "webhook-config",
  "authz-config",
  ...Object.keys(telemetryOptions),
  ...Object.keys(incomingAuthOptions),
  ...Object.keys(outgoingAuthOptions),
  ...Object.keys(caBundleOptions),
]);
const unsupported = new Map(
  Object.keys(runOptions)
    .filter((name) => !supported.has(name))
    .map((name) => [name, "its feature (telemetry) is not in this version"] as const),
);

export default defineCommand({
  meta: {
    name: "run",
    description:
      "Run an MCP server (registry name, image, npx:// uvx:// go:// package, exported config or URL) behind an HTTP proxy",
  },
  args: toCittyArgs(
    runOptions,
    {
      SERVER_OR_IMAGE_OR_PROTOCOL: {
        description: "Registry name, image reference, npx:// uvx:// go:// package, or URL",
        required: false,
      },
    },
    new Set(unsupported.keys()),
  ),
  async run({ rawArgs }) {
    let args: readonly string[] = rawArgs;
    let parsed = parseRunArgv(args);
    assertSupported(parsed.given, unsupported, "run", parsed.values);
    if (parsed.values["from-config"] !== undefined) {
      const others = [...parsed.given].filter((name) => name !== "from-config" && name !== "foreground");
      if (others.length > 0) {
        throw new McpmgrError(
          "CONFLICTING_OPTIONS",
          `--from-config runs the exported configuration as it is; --${others[0]} would be ignored`,
          {
            hint: "edit the exported file instead, or run the server with its options directly",
          },
        );
      }
      args = await argsFromConfig(parsed.values["from-config"], parsed.values.foreground);
      parsed = parseRunArgv(args);
      assertSupported(parsed.given, unsupported, "run", parsed.values);
    }
    const plan = await planRun(parsed);
    if (!parsed.values.foreground) return runDetached(plan, parsed, args);
    if (plan.runtime.kind === "container") await assertContainerNameFree(plan, plan.runtime.engine);
    const code = await runForeground(plan, parsed);
    if (code !== 0) process.exit(code);
  },
});
