/**
 * A WorkloadContext for tests that call the workload layer in-process: its log lines and
 * printed results are kept for assertions instead of reaching the terminal. The environment
 * is the test's own (MCPMGR_HOME from the preload) plus what the test adds.
 */
import Docker from "dockerode";
import { parseRunArgv } from "../../src/config/run-argv.ts";
import { sourceOf, type RegistryEntry } from "../../src/registry/schema.ts";
import type { ContainerEngine } from "../../src/runtime/docker/engine.ts";
import { parseSource } from "../../src/runtime/source.ts";
import { workloadContext, type WorkloadContext } from "../../src/workload/context.ts";
import type { ConcreteSource, RuntimeSelection } from "../../src/workload/locate.ts";
import { resolveRunSpec, type RunSpec } from "../../src/workload/run-spec.ts";

export interface TestContext {
  readonly ctx: WorkloadContext;
  /** Every log line, as "level: message". */
  readonly logged: string[];
  readonly printed: string[];
  readonly stderr: string[];
}

export function testContext(env: Record<string, string | undefined> = {}): TestContext {
  const logged: string[] = [];
  const printed: string[] = [];
  const stderr: string[] = [];
  const at = (level: string) => (message: string) => void logged.push(`${level}: ${message}`);
  const ctx = workloadContext({
    log: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") },
    print: (line) => void printed.push(line),
    stderr: (text) => void stderr.push(text),
    env: { ...process.env, ...env },
  });
  return { ctx, logged, printed, stderr };
}

/**
 * An engine handle for placement rules, which never talk to the engine: nothing listens on
 * its socket, so a rule that did would fail the test.
 */
export const unreachableEngine: ContainerEngine = {
  kind: "docker",
  endpoint: "/nonexistent/docker.sock",
  docker: new Docker({ socketPath: "/nonexistent/docker.sock" }),
};

export type RuntimeKind = "process" | "container";

/** resolveRunSpec for `mcpmgr run ARGS` on the given runtime (a remote URL always runs nowhere). */
export function specFor(
  args: readonly string[],
  options: { runtime?: RuntimeKind; entry?: RegistryEntry; context?: TestContext; recorded?: boolean } = {},
): RunSpec {
  const parsed = parseRunArgv(args);
  const sourceText = parsed.positionals[0] as string;
  const source = parseSource(options.entry ? sourceOf(options.entry).runTarget : sourceText) as ConcreteSource;
  const runtime: RuntimeSelection =
    source.kind === "remote"
      ? { kind: "remote" }
      : options.runtime === "container"
        ? { kind: "container", engine: unreachableEngine }
        : { kind: "process" };
  return resolveRunSpec(
    { sourceText, source, entry: options.entry, runtime },
    parsed,
    (options.context ?? testContext()).ctx,
    { recorded: options.recorded },
  );
}
