/**
 * The dependency direction of DESIGN §2, checked on the real imports:
 *   errors ← config ← {state, secrets, registry, telemetry} ← {auth, runtime} ← proxy ← middleware ← gateway ← cli
 * A module may import its own folder or a lower layer; only main.ts imports cli/; proxy/
 * never imports dockerode; middleware/ never imports runtime/.
 */
import { expect, test } from "bun:test";
import { dirname, join, relative, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "../../src");
const rank: Readonly<Record<string, number>> = {
  "errors.ts": 0,
  "version.ts": 0,
  config: 1,
  state: 2,
  secrets: 2,
  registry: 2,
  telemetry: 2,
  auth: 3,
  runtime: 3,
  proxy: 4,
  middleware: 5,
  // The group gateway sits above middleware/ (DESIGN §2 update); fractional so the other ranks keep their values.
  gateway: 5.5,
  cli: 6,
  "main.ts": 7,
};

function layerOf(file: string): string {
  return relative(SRC, file).split("/")[0] as string;
}

test("every import follows the layering of DESIGN §2", async () => {
  const violations: string[] = [];
  for await (const path of new Bun.Glob("**/*.ts").scan({ cwd: SRC })) {
    const file = join(SRC, path);
    const from = layerOf(file);
    const text = await Bun.file(file).text();
    for (const match of text.matchAll(
      /(?:^|\n)\s*(?:import|export)[^"'`]*?from\s+["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g,
    )) {
      const spec = (match[1] ?? match[2]) as string;
      if (spec === "dockerode" && (from === "proxy" || from === "middleware"))
        violations.push(`${path} imports dockerode`);
      if (!spec.startsWith(".")) continue;
      const target = resolve(dirname(file), spec);
      if (!target.startsWith(`${SRC}/`)) continue; // package.json and the like
      const to = layerOf(target);
      if (to === from) continue;
      if (to === "cli" && from !== "main.ts") violations.push(`${path} imports cli/ (${spec})`);
      else if (from === "middleware" && to === "runtime")
        violations.push(`${path}: middleware imports runtime (${spec})`);
      else if ((rank[to] ?? 99) >= (rank[from] ?? -1)) violations.push(`${path} (${from}) imports ${spec} (${to})`);
    }
  }
  expect(violations).toEqual([]);
});
