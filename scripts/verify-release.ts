/**
 * The release workflow's gate, after `bun run compile --all`:
 *   bun scripts/verify-release.ts --tag v0.2.0 [--dist DIR] [--print version|assets]
 * checks that the tag is v + package.json's version, that SHA256SUMS lists exactly the
 * release targets and each binary still has its digest and is an executable for its
 * platform (header: ELF/Mach-O/PE and CPU), and that this machine's binary
 * reports the version; then prints the version (for the later steps) or the release
 * assets, one path per line (for `gh release create`).
 */
import { join, resolve } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { assertBinaryFor } from "./lib/binary-format.ts";
import { readChecksums, verifiedDigest } from "./lib/checksums.ts";
import { hostTarget, releaseTargets } from "./lib/release-targets.ts";

export async function verifyRelease(tag: string, dist: string): Promise<{ version: string; assets: string[] }> {
  const match = /^v(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)$/.exec(tag);
  if (match === null) throw new Error(`tag ${JSON.stringify(tag)}: expected v<major>.<minor>.<patch>`);
  const version = match[1] as string;
  if (version !== pkg.version) {
    throw new Error(`tag ${tag} does not match package.json's version ${pkg.version}; bump package.json first`);
  }
  const sums = await readChecksums(dist);
  const expected = releaseTargets.map((t) => t.file);
  const extra = [...sums.keys()].filter((file) => !expected.includes(file));
  if (extra.length > 0) throw new Error(`SHA256SUMS lists files that are not release targets: ${extra.join(", ")}`);
  for (const target of releaseTargets) {
    await verifiedDigest(dist, sums, target.file);
    await assertBinaryFor(join(dist, target.file), target);
  }

  const host = hostTarget();
  if (host !== undefined) {
    const run = Bun.spawnSync([join(dist, host.file), "--version"], { stdout: "pipe", stderr: "pipe" });
    const printed = run.stdout.toString().trim();
    if (run.exitCode !== 0 || !(printed === version || printed.startsWith(`${version}+`))) {
      throw new Error(
        `${host.file} --version printed ${JSON.stringify(printed)} (exit ${run.exitCode}), not ${version}`,
      );
    }
  }
  return { version, assets: [...expected.map((file) => join(dist, file)), join(dist, "SHA256SUMS")] };
}

function parseArgs(argv: readonly string[]): { tag: string; dist: string; print: "version" | "assets" } {
  let tag: string | undefined;
  let dist = resolve(import.meta.dir, "../dist");
  let print: "version" | "assets" = "version";
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[++i];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === "--tag") tag = value;
    else if (flag === "--dist") dist = resolve(value);
    else if (flag === "--print" && (value === "version" || value === "assets")) print = value;
    else throw new Error(`unknown argument ${flag} ${value} (use --tag vX.Y.Z, --dist DIR, --print version|assets)`);
  }
  if (tag === undefined) throw new Error("usage: verify-release.ts --tag vX.Y.Z [--dist DIR] [--print version|assets]");
  return { tag, dist, print };
}

if (import.meta.main) {
  try {
    const args = parseArgs(process.argv.slice(2));
    const { version, assets } = await verifyRelease(args.tag, args.dist);
    console.log(args.print === "version" ? version : assets.join("\n"));
  } catch (err) {
    console.error(`verify-release: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
}
