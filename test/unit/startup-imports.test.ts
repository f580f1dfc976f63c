/**
 * The start-up rule of ARCHITECTURE.md ("What start-up may load"), checked on the real
 * imports: what `mcpmgr --version`, `--help`, `list` and `registry list` evaluate is the
 * static import graph from src/main.ts (plus the one subcommand module citty loads), because
 * the compiled executable is split into chunks and a module behind `import()` or a `require`
 * inside a function is evaluated only when that code runs. A static import of something heavy
 * anywhere in that graph is paid by every one of those commands (bench `cli-startup`).
 */
import { expect, test } from "bun:test";
import { reachable } from "../support/import-graph.ts";

/** Never evaluated by a fast path: the other commands' machinery and the heavy libraries. */
const heavy: readonly RegExp[] = [
  /^(gateway|clients|proxy|middleware|auth|runtime|telemetry|secrets)\//,
  /^workload\/(?!supervisor-control\.ts$|start-claim\.ts$|supervisor-teardown\.ts$|recorded-runtime\.ts$|self-command\.ts$|context\.ts$|list-rows\.ts$)/,
  /^registry\/(schema|catalog|document|server-json|embedded)\.ts$/,
  /^config\/(run-options|run-argv|permission-profile|authz-config|config-file)\.ts$/,
  /^config\/flags\//,
  /^(dockerode|@modelcontextprotocol\/|@cedar-policy\/|oauth4webapi|jose|@opentelemetry\/|yaml|dotenv|tar-stream)/,
  // node:fs/promises brings node:events and Node's validators along; node:os, node:tty likewise cost
  // a fast path more than everything of ours it evaluates (reads there are sync: state files are tiny).
  // node:util (parseArgs) is loaded by config/argv.ts only when there are arguments to parse.
  /^node:(child_process|crypto|net|url|tty|http|https|tls|zlib|fs\/promises|os|util)$/,
];

function heavyIn(modules: Set<string>): string[] {
  return [...modules].filter((module) => heavy.some((pattern) => pattern.test(module))).sort();
}

test("--version and --help evaluate the root command alone, none of the subcommands", async () => {
  const modules = await reachable(["main.ts"]);
  expect([...modules].filter((module) => module.startsWith("cli/")).sort()).toEqual([
    "cli/citty-args.ts",
    "cli/output.ts",
    "cli/root.ts",
    "cli/run-main.ts",
  ]);
  expect(heavyIn(modules)).toEqual([]);
});

// run-main.ts imports the stale-client-entry check before every command (it returns at once for these two).
test.each([
  ["list", "cli/list.ts"],
  ["registry list", "cli/registry.ts"],
])("'%s' loads nothing heavy at start-up", async (_command, module) => {
  expect(heavyIn(await reachable(["main.ts", "cli/stale-client-entries.ts", module]))).toEqual([]);
});

test("'registry list' loads no state module but the paths, nor node:fs by itself (config.json is read by a require in the loader)", async () => {
  const modules = await reachable(["main.ts", "cli/stale-client-entries.ts", "cli/registry.ts"]);
  expect([...modules].filter((module) => module.startsWith("state/"))).toEqual(["state/paths.ts"]);
  expect(modules).not.toContain("node:fs");
});

test("'list' loads the workload store only when there is a workloads folder (cli/list.ts looks for it first)", async () => {
  // A new MCPMGR_HOME has none: the store, its record schemas and the supervisor code stay unloaded.
  const modules = await reachable(["main.ts", "cli/stale-client-entries.ts", "state/private-dirs.ts", "cli/list.ts"]);
  const store = [
    "state/workloads.ts",
    "state/workload-record.ts",
    "workload/list-rows.ts",
    "workload/supervisor-control.ts",
  ];
  expect(store.filter((module) => modules.has(module))).toEqual([]);
});

test("the check sees an eager import when there is one", async () => {
  // The rule can fail: `run` (not a fast path) does evaluate the proxy and the run options.
  const modules = heavyIn(await reachable(["main.ts", "cli/run.ts"]));
  expect(modules).toContain("config/run-options.ts");
  expect(modules.some((module) => module.startsWith("proxy/"))).toBe(true);
});

// `stop NAME` and `rm NAME` share cli/lifecycle-actions.ts with `start`: what start's relay recognises in
// a supervisor's log (gateway warnings, OAuth login, plain-http credentials) is not theirs to load, nor
// the batch code several workloads need.
test.each([
  ["stop", "cli/stop.ts"],
  ["rm", "cli/rm.ts"],
])("'%s NAME' loads neither start's log relay nor the batch code", async (_command, module) => {
  const modules = await reachable(["main.ts", "cli/stale-client-entries.ts", module]);
  const notTheirs = [
    "cli/start-relay.ts",
    "workload/batch.ts",
    "workload/oauth-callback.ts",
    "gateway/unguarded-members.ts",
    "config/outgoing-auth-spec.ts",
  ];
  expect(notTheirs.filter((name) => modules.has(name))).toEqual([]);
});
