/**
 * Builds the self-contained mcpmgr executable.
 *   bun run compile          → dist/mcpmgr for this machine
 *   bun run compile --all    → dist/mcpmgr-<os>-<arch>[.exe] for every release target + dist/SHA256SUMS
 * The version (package.json + git commit) is injected with `define`; the binary does
 * not autoload .env or bunfig.toml from the directory it is started in.
 */
import { createHash } from "node:crypto";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import pkg from "../package.json" with { type: "json" };

const root = resolve(import.meta.dir, "..");
const dist = join(root, "dist");

const releaseTargets = [
  { target: "bun-linux-x64", file: "mcpmgr-linux-x64" },
  { target: "bun-linux-arm64", file: "mcpmgr-linux-arm64" },
  { target: "bun-darwin-x64", file: "mcpmgr-darwin-x64" },
  { target: "bun-darwin-arm64", file: "mcpmgr-darwin-arm64" },
  { target: "bun-windows-x64", file: "mcpmgr-windows-x64.exe" },
] as const;

async function buildVersion(): Promise<string> {
  const git = Bun.spawnSync(["git", "rev-parse", "--short", "HEAD"], { cwd: root, stderr: "ignore" });
  const commit = git.success ? git.stdout.toString().trim() : "";
  return commit ? `${pkg.version}+${commit}` : pkg.version;
}

async function compile(outfile: string, version: string, target?: Bun.Build.CompileTarget): Promise<void> {
  const result = await Bun.build({
    entrypoints: [join(root, "src/main.ts")],
    compile: {
      outfile,
      ...(target ? { target } : {}),
      autoloadDotenv: false,
      autoloadBunfig: false,
    },
    define: { MCPMGR_BUILD_VERSION: JSON.stringify(version) },
    minify: true,
    sourcemap: "linked",
  });
  if (!result.success) {
    for (const log of result.logs) console.error(log);
    throw new Error(`build failed for ${target ?? "this machine"}`);
  }
  console.error(`built ${outfile.replace(`${root}/`, "")} (${version})`);
}

async function main(): Promise<void> {
  const all = process.argv.includes("--all");
  const version = await buildVersion();
  await mkdir(dist, { recursive: true });
  if (!all) {
    await compile(join(dist, "mcpmgr"), version);
    return;
  }
  const sums: string[] = [];
  for (const { target, file } of releaseTargets) {
    const outfile = join(dist, file);
    await rm(outfile, { force: true });
    await compile(outfile, version, target);
    const digest = createHash("sha256")
      .update(await readFile(outfile))
      .digest("hex");
    sums.push(`${digest}  ${basename(outfile)}`);
  }
  await writeFile(join(dist, "SHA256SUMS"), `${sums.join("\n")}\n`);
  console.error("wrote dist/SHA256SUMS");
}

await main();
