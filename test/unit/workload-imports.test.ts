/**
 * Issue 15's footprint rule (ARCHITECTURE.md §11), checked on the real imports: a background
 * workload's supervisor keeps what it loaded for as long as it runs, so what every supervisor
 * evaluates (the static graph from `mcpmgr __supervise`) holds no runtime's, transport's or
 * optional feature's code, and each kind's modules hold no other kind's.
 */
import { expect, test } from "bun:test";
import { reachable } from "../support/import-graph.ts";

const matching = (modules: Set<string>, patterns: readonly RegExp[]) =>
  [...modules].filter((module) => patterns.some((pattern) => pattern.test(module))).sort();

/** Loaded only by the workloads whose kind or options need them. */
const optional: readonly RegExp[] = [
  // The runtimes: the sandbox's and the container's rules and launchers, dockerode.
  /^workload\/(process-placement|container-placement|local-server|launch-process|launch-container)\.ts$/,
  /^runtime\/(sandbox|sandbox-launch|seccomp|process)\.ts$/,
  /^runtime\/docker\/(?!engine\.ts$)/,
  /^dockerode$/,
  // The transports: the stdio bridge, the forwarder and its HTTP client.
  /^workload\/upstream-(stdio|http)\.ts$/,
  /^proxy\/(forward|stdio-bridge\/bridge)\.ts$/,
  /^proxy\/upstream\//,
  // Options: incoming and outgoing authentication, Cedar, telemetry, webhooks, registry names, env files, secrets.
  /^auth\/(incoming|outgoing)\//,
  /^middleware\/(authn|authz|audit|telemetry|webhooks)\.ts$/,
  /^(jose|oauth4webapi|@cedar-policy\/|@opentelemetry\/|@modelcontextprotocol\/|dotenv|yaml)/,
  /^registry\/loader\.ts$/,
  /^config\/env-files\.ts$/,
  /^secrets\/manager\.ts$/,
];

test("what every supervisor evaluates holds no runtime's, transport's or option's code", async () => {
  expect(matching(await reachable(["cli/supervise.ts"]), optional)).toEqual([]);
});

test("a stdio server's upstream holds no forwarder, an HTTP server's or remote's no bridge", async () => {
  expect(
    matching(await reachable(["workload/upstream-stdio.ts"]), [/^proxy\/forward\.ts$/, /^proxy\/upstream\//]),
  ).toEqual([]);
  expect(matching(await reachable(["workload/upstream-http.ts"]), [/^proxy\/stdio-bridge\//])).toEqual([]);
});

test("a sandboxed process's placement and launcher hold no container code", async () => {
  const modules = await reachable(["workload/process-placement.ts", "workload/launch-process.ts"]);
  expect(
    matching(modules, [/^runtime\/docker\//, /^dockerode$/, /^workload\/(container-placement|launch-container)\.ts$/]),
  ).toEqual([]);
});

test("the check sees an eager import when there is one", async () => {
  // The rule can fail: a container's launcher does evaluate the container runtime.
  expect(
    matching(await reachable(["workload/launch-container.ts"]), [/^runtime\/docker\/(?!engine\.ts$)/]).length,
  ).toBeGreaterThan(0);
});

test("a workload with Cedar policies evaluates no Cedar engine: only the evaluator's command reaches it", async () => {
  const engine = [/^@cedar-policy\//, /^middleware\/cedar-engine\.ts$/];
  const served = await reachable([
    "middleware/policy-chain.ts",
    "middleware/authz.ts",
    "middleware/cedar-decider.ts",
    "middleware/cedar-client.ts",
    "gateway/search.ts",
    "config/authz-config.ts",
  ]);
  expect(matching(served, engine)).toEqual([]);
  // The rule can fail: the evaluator does evaluate it.
  expect(matching(await reachable(["middleware/cedar-engine.ts"]), engine).length).toBe(2);
});

test("a container's launcher evaluates the set-ID guard's binary and filter only when it copies the guard in", async () => {
  const modules = await reachable(["workload/launch-container.ts"]);
  expect(modules.has("runtime/docker/setid-guard.ts")).toBe(true);
  expect(
    matching(modules, [/^runtime\/docker\/setid-guard-binary\.ts$/, /^runtime\/(setid-filter|seccomp)\.ts$/]),
  ).toEqual([]);
});

test("a server's environment and an outgoing credential evaluate no secret matcher until there is a secret", async () => {
  const modules = await reachable(["workload/server-environment.ts", "workload/outgoing-auth.ts"]);
  expect(modules.has("secrets/redact.ts")).toBe(true);
  expect(modules.has("secrets/spelling-matcher.ts")).toBe(false);
});

test("a gateway's membership evaluates the env-file parser only for a member that names a file", async () => {
  const modules = await reachable(["gateway/membership.ts"]);
  expect(matching(modules, [/^config\/env-files\.ts$/, /^dotenv$/])).toEqual([]);
});
