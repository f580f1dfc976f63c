/**
 * The platforms mcpmgr is released for, and every name each one goes by: Bun's compile
 * target, the release asset, the npm package that carries the binary, and the os/cpu
 * values npm and Node use. compile.ts, package-managers.ts and pack.ts all read this table.
 */
export interface ReleaseTarget {
  /** Our short name, e.g. "linux-x64". */
  readonly id: string;
  readonly bunTarget: Bun.Build.CompileTarget;
  /** The release asset (and dist/ file) name. */
  readonly file: string;
  /** process.platform / package.json "os". */
  readonly os: "linux" | "darwin" | "win32";
  /** process.arch / package.json "cpu". */
  readonly cpu: "x64" | "arm64";
  /** The npm package holding this binary (an optional dependency of `mcpmgr`). */
  readonly npmPackage: string;
  /** The binary's name inside that package. */
  readonly npmBinary: string;
}

function target(os: ReleaseTarget["os"], cpu: ReleaseTarget["cpu"]): ReleaseTarget {
  const name = os === "win32" ? "windows" : os;
  const exe = os === "win32" ? ".exe" : "";
  return {
    id: `${name}-${cpu}`,
    bunTarget: `bun-${name}-${cpu}` as Bun.Build.CompileTarget,
    file: `mcpmgr-${name}-${cpu}${exe}`,
    os,
    cpu,
    npmPackage: `mcpmgr-${name}-${cpu}`,
    npmBinary: `bin/mcpmgr${exe}`,
  };
}

export const releaseTargets: readonly ReleaseTarget[] = [
  target("linux", "x64"),
  target("linux", "arm64"),
  target("darwin", "x64"),
  target("darwin", "arm64"),
  target("win32", "x64"),
];

/** The target this machine runs, if it is one we release for. */
export function hostTarget(): ReleaseTarget | undefined {
  return releaseTargets.find((t) => t.os === process.platform && t.cpu === process.arch);
}

export function targetById(id: string): ReleaseTarget {
  const found = releaseTargets.find((t) => t.id === id);
  if (found === undefined) {
    throw new Error(`unknown target ${JSON.stringify(id)}; known: ${releaseTargets.map((t) => t.id).join(", ")}`);
  }
  return found;
}
