/**
 * scripts/compile.ts makes citty take node:util's parseArgs on first use instead of at load
 * (start-up of `--version` and `--help`, bench `cli-startup`). Checked on the installed citty:
 * the import the plugin replaces is there, the bundle no longer imports node:util, and citty
 * still parses arguments.
 */
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { cittyNodeUtilImport, lazyCittyNodeUtil } from "../../scripts/compile.ts";

const root = resolve(import.meta.dir, "../..");

async function bundle(plugins: Bun.BunPlugin[]): Promise<{ text: string; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), "mcpmgr-citty-util-"));
  const entry = join(dir, "entry.ts");
  writeFileSync(
    entry,
    `import { parseArgs } from ${JSON.stringify(join(root, "node_modules/citty/dist/index.mjs"))};\n` +
      `console.log(JSON.stringify(parseArgs(["--name", "x"], { name: { type: "string" } })));\n`,
  );
  const result = await Bun.build({ entrypoints: [entry], target: "bun", format: "esm", plugins });
  expect(result.success).toBe(true);
  const text = await (result.outputs[0] as Bun.BuildArtifact).text();
  writeFileSync(join(dir, "out.mjs"), text);
  return { text, dir };
}

test("citty's node:util import is what the build plugin replaces", async () => {
  const citty = await Bun.file(join(root, "node_modules/citty/dist/index.mjs")).text();
  expect(citty).toContain(cittyNodeUtilImport);
});

test("the built citty no longer imports node:util at load, and still parses", async () => {
  const plain = await bundle([]);
  const lazy = await bundle([lazyCittyNodeUtil]);
  try {
    expect(plain.text).toMatch(/^import \{[^}]*parseArgs[^}]*\} from "(node:)?util";?$/m);
    expect(lazy.text).not.toMatch(/from "(node:)?util"/);
    const run = Bun.spawnSync(["bun", join(lazy.dir, "out.mjs")], { stdout: "pipe", stderr: "pipe" });
    expect(run.stderr.toString()).toBe("");
    expect(JSON.parse(run.stdout.toString())).toMatchObject({ name: "x" });
  } finally {
    rmSync(plain.dir, { recursive: true, force: true });
    rmSync(lazy.dir, { recursive: true, force: true });
  }
});
