/**
 * The dependency direction of ARCHITECTURE.md, checked on the real imports:
 *   {errors, version, printable, close-matches, bounded-body, bounded-file, objects, trusted-cas} ← {config, completion}
 *     ← {state, secrets, registry, telemetry} ← {auth, runtime} ← proxy ← middleware ← {gateway, clients}
 *     ← workload ← cli ← main.ts
 * A module may import its own folder or a lower layer. Besides the ranks: only main.ts imports
 * cli/; proxy/, middleware/ and cli/ never import dockerode; middleware/ never imports runtime/;
 * cli/ reaches containers only through workload/ (no runtime/docker/); only cli/ imports
 * consola; workload/ never talks to the terminal (no process.stdout/stderr, no console): the
 * CLI hands it a log.
 */
import { expect, test } from "bun:test";
import { dirname, join, relative, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "../../src");
const rank: Readonly<Record<string, number>> = {
  "errors.ts": 0,
  "version.ts": 0,
  "printable.ts": 0,
  "close-matches.ts": 0,
  "bounded-body.ts": 0,
  "bounded-file.ts": 0,
  "objects.ts": 0,
  "trusted-cas.ts": 0,
  config: 1,
  completion: 1,
  state: 2,
  secrets: 2,
  registry: 2,
  telemetry: 2,
  auth: 3,
  runtime: 3,
  proxy: 4,
  middleware: 5,
  gateway: 6,
  clients: 6,
  workload: 7,
  cli: 8,
  "main.ts": 9,
};

function layerOf(file: string): string {
  return relative(SRC, file).split("/")[0] as string;
}

test("every import follows the layering of ARCHITECTURE.md", async () => {
  const violations: string[] = [];
  for await (const path of new Bun.Glob("**/*.ts").scan({ cwd: SRC })) {
    const file = join(SRC, path);
    const from = layerOf(file);
    if (rank[from] === undefined) violations.push(`${path}: ${from} is not a known layer (add it to the ranks)`);
    const text = await Bun.file(file).text();
    if (from === "workload" && /\bprocess\.(stdout|stderr)\b|\bconsole\./.test(text))
      violations.push(`${path}: workload writes to the terminal (use the context's log or print)`);
    for (const match of text.matchAll(
      /(?:^|\n)\s*(?:import|export)[^"'`]*?from\s+["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g,
    )) {
      const spec = (match[1] ?? match[2]) as string;
      if (spec === "dockerode" && (from === "proxy" || from === "middleware" || from === "cli"))
        violations.push(`${path} imports dockerode`);
      if (spec.startsWith("consola") && from !== "cli") violations.push(`${path} imports the terminal logger`);
      if (!spec.startsWith(".")) continue;
      const target = resolve(dirname(file), spec);
      if (!target.startsWith(`${SRC}/`)) continue; // package.json and the like
      const to = layerOf(target);
      if (from === "cli" && relative(SRC, target).startsWith("runtime/docker/"))
        violations.push(`${path}: cli imports ${spec} (containers are workload/'s business)`);
      if (to === from) continue;
      if (to === "cli" && from !== "main.ts") violations.push(`${path} imports cli/ (${spec})`);
      else if (from === "middleware" && to === "runtime")
        violations.push(`${path}: middleware imports runtime (${spec})`);
      else if ((rank[to] ?? 99) >= (rank[from] ?? -1)) violations.push(`${path} (${from}) imports ${spec} (${to})`);
    }
  }
  expect(violations).toEqual([]);
});

test("no two modules import each other, directly or through others", async () => {
  const edges = new Map<string, string[]>();
  for await (const path of new Bun.Glob("**/*.ts").scan({ cwd: SRC })) {
    const file = join(SRC, path);
    const text = await Bun.file(file).text();
    const targets: string[] = [];
    for (const match of text.matchAll(/(?:^|\n)\s*(?:import|export)[^"'`]*?from\s+["'](\.[^"']+)["']/g))
      targets.push(relative(SRC, resolve(dirname(file), match[1] as string)));
    edges.set(path, targets);
  }
  const cycles: string[] = [];
  const state = new Map<string, "open" | "done">();
  const visit = (node: string, trail: string[]) => {
    if (state.get(node) === "done") return;
    if (state.get(node) === "open") {
      cycles.push([...trail.slice(trail.indexOf(node)), node].join(" -> "));
      return;
    }
    state.set(node, "open");
    for (const next of edges.get(node) ?? []) visit(next, [...trail, node]);
    state.set(node, "done");
  };
  for (const node of edges.keys()) visit(node, []);
  expect(cycles).toEqual([]);
});
