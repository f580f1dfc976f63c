/**
 * Builds the self-contained mcpmgr executable.
 *   bun run compile                      → dist/mcpmgr for this machine
 *   bun run compile --all                → dist/mcpmgr-<os>-<arch>[.exe] for every release target + dist/SHA256SUMS
 *   bun run compile --target linux-x64   → the named targets only (comma-separated) + a SHA256SUMS for them
 *   --outdir DIR                         → write there instead of dist/
 * The version (package.json + git commit), the full commit and the build date (SOURCE_DATE_EPOCH
 * when set, for reproducible builds) are injected with `define` (src/version.ts; `mcpmgr version`
 * shows them); the binary does not autoload .env or bunfig.toml from the directory it is started in.
 *
 * Start-up time is decided here as much as in the code (bench `cli-startup`):
 *   - bytecode: JavaScriptCore gets precompiled bytecode instead of parsing ~2 MB of
 *     JavaScript at every start;
 *   - splitting: each lazily imported module (every subcommand, the Docker client, Cedar,
 *     OpenTelemetry...) is a chunk of its own, evaluated only when imported; in one bundle,
 *     every Node built-in any of them imports (node:http, node:net, zlib...) would be
 *     loaded at start-up by every command;
 *   - citty's parser is taken from node:util when it first parses, not when citty loads
 *     (lazyCittyNodeUtil): node:util is the costliest module `--version` and `--help` would
 *     load, and neither parses anything;
 *   - jitPolicy: JavaScriptCore's tier-up thresholds start raised (startupJitPolicy), so a
 *     one-shot command runs in the interpreter and exits before any JIT thread starts; the
 *     commands that keep running put the normal policy back (src/cli/root.ts, longRunning).
 * The embedded source map makes stack traces (--debug) point into src/.
 */
import { mkdir, mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { join, relative, resolve } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { checkoutPathFree } from "./lib/build-plugins.ts";
import { formatChecksums, sha256File } from "./lib/checksums.ts";
import { type ReleaseTarget, releaseTargets, targetById } from "./lib/release-targets.ts";

const root = resolve(import.meta.dir, "..");

/** What an executable says about itself (`mcpmgr --version`, `mcpmgr version`). */
export interface BuildInfo {
  /** package.json's version, with the short commit as build metadata (0.2.0+1a2b3c4d5e6f). */
  readonly version: string;
  /** The full commit, or "unknown" outside a git checkout. */
  readonly commit: string;
  /** ISO 8601 in UTC, to the second. */
  readonly date: string;
}

export function buildInfo(env: Readonly<Record<string, string | undefined>> = process.env): BuildInfo {
  // The full commit, then a short one of a fixed 12 characters. Git's default abbreviation grows
  // with the number of objects it sees (7 characters, 8 past 16,384 objects...), so a shallow
  // clone would name the same commit differently from a full one and rebuild to another digest;
  // 12 is unambiguous in any repository of a plausible size, whole or shallow.
  const git = Bun.spawnSync(["git", "rev-parse", "HEAD", "--short=12", "HEAD"], { cwd: root, stderr: "ignore" });
  const [commit, short] = git.success ? git.stdout.toString().trim().split("\n") : [];
  return {
    version: short ? `${pkg.version}+${short}` : pkg.version,
    commit: commit || "unknown",
    date: buildDate(env.SOURCE_DATE_EPOCH),
  };
}

/** The build time, or SOURCE_DATE_EPOCH (seconds since 1970, https://reproducible-builds.org/specs/source-date-epoch/). */
export function buildDate(sourceDateEpoch: string | undefined, now = new Date()): string {
  const epoch = sourceDateEpoch?.trim();
  if (epoch === undefined || epoch === "") return now.toISOString().replace(/\.\d{3}Z$/, "Z");
  if (!/^\d+$/.test(epoch))
    throw new Error(`SOURCE_DATE_EPOCH=${JSON.stringify(sourceDateEpoch)}: expected whole seconds`);
  return new Date(Number(epoch) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/**
 * citty imports `parseArgs` from node:util at the top of its module; node:util (with the
 * internals it loads) is ~1.5 ms of every start-up (bench `cli-startup`), although only a
 * command's arguments need it. The import becomes a function that requires node:util on its
 * first call. A citty whose import reads differently fails the build, so this never goes
 * quietly out of date.
 */
export const cittyNodeUtilImport = 'import { parseArgs as parseArgs$1 } from "node:util";';
export const lazyCittyNodeUtil: Bun.BunPlugin = {
  name: "lazy-citty-node-util",
  setup(builder) {
    builder.onLoad({ filter: /[\\/]citty[\\/]dist[\\/]index\.mjs$/ }, async ({ path }) => {
      const text = await Bun.file(path).text();
      if (!text.includes(cittyNodeUtilImport)) {
        throw new Error(`${path} no longer imports node:util as scripts/compile.ts expects: update lazyCittyNodeUtil`);
      }
      const lazy = 'const parseArgs$1 = (...args) => require("node:util").parseArgs(...args);';
      return { contents: text.replace(cittyNodeUtilImport, lazy), loader: "js" };
    });
  },
};

/**
 * How many times JavaScriptCore's tier-up thresholds are raised at start-up. At the normal
 * policy, start-up code run a few hundred times (freezing the registry catalog, building
 * valibot schemas, node:fs setting itself up) was handed to JIT worker threads that the
 * command then had to start and wind down: ~0.5-1 ms of `list` and `registry list`.
 */
export const startupJitPolicy = 100;

export async function compile(outfile: string, build: BuildInfo, target?: Bun.Build.CompileTarget): Promise<void> {
  // Bun writes the chunks' source maps next to the executable (they are embedded too):
  // build in a scratch folder and keep only the executable.
  const scratch = await mkdtemp(join(resolve(outfile, ".."), ".compile-"));
  try {
    const staged = join(scratch, "mcpmgr");
    const result = await Bun.build({
      entrypoints: [join(root, "src/main.ts")],
      compile: {
        outfile: staged,
        ...(target ? { target } : {}),
        autoloadDotenv: false,
        autoloadBunfig: false,
        jitPolicy: startupJitPolicy,
      },
      define: {
        MCPMGR_BUILD_VERSION: JSON.stringify(build.version),
        MCPMGR_BUILD_COMMIT: JSON.stringify(build.commit),
        MCPMGR_BUILD_DATE: JSON.stringify(build.date),
      },
      // citty's first: a file is loaded by the first plugin that answers for it.
      plugins: [lazyCittyNodeUtil, checkoutPathFree(root)],
      loader: { ".wasm": "file" },
      format: "esm",
      splitting: true,
      bytecode: true,
      minify: true,
      sourcemap: "linked",
    });
    if (!result.success) {
      for (const log of result.logs) console.error(log);
      throw new Error(`build failed for ${target ?? "this machine"}`);
    }
    const built = result.outputs.find((o) => o.kind === "entry-point")?.path ?? staged;
    await rename(built, outfile);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  console.error(`built ${relative(root, outfile)} (${build.version}, ${build.date})`);
}

interface Options {
  readonly outdir: string;
  /** Release targets to build; none = this machine's dist/mcpmgr. */
  readonly targets: readonly ReleaseTarget[];
}

function parseOptions(argv: readonly string[]): Options {
  let outdir = join(root, "dist");
  let targets: readonly ReleaseTarget[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--all") targets = releaseTargets;
    else if (arg === "--target") targets = (argv[++i] ?? "").split(",").map(targetById);
    else if (arg === "--outdir") outdir = resolve(argv[++i] ?? "");
    else throw new Error(`unknown argument ${JSON.stringify(arg)} (use --all, --target ID[,ID], --outdir DIR)`);
  }
  return { outdir, targets };
}

async function main(): Promise<void> {
  const { outdir, targets } = parseOptions(process.argv.slice(2));
  const build = buildInfo();
  await mkdir(outdir, { recursive: true });
  if (targets.length === 0) {
    await compile(join(outdir, "mcpmgr"), build);
    return;
  }
  const sums: { file: string; sha256: string }[] = [];
  for (const { bunTarget, file } of targets) {
    const outfile = join(outdir, file);
    await compile(outfile, build, bunTarget);
    sums.push({ file, sha256: await sha256File(outfile) });
  }
  await writeFile(join(outdir, "SHA256SUMS"), formatChecksums(sums));
  console.error(`wrote ${relative(root, join(outdir, "SHA256SUMS"))}`);
}

if (import.meta.main) await main();
