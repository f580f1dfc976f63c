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
  /** Linux only: the C library the executable is linked against (package.json "libc"). */
  readonly libc?: "glibc" | "musl";
  /** The npm package holding this binary (an optional dependency of `mcpmgr`). */
  readonly npmPackage: string;
  /** The binary's name inside that package. */
  readonly npmBinary: string;
}

function target(os: ReleaseTarget["os"], cpu: ReleaseTarget["cpu"], libc?: "musl"): ReleaseTarget {
  const name = os === "win32" ? "windows" : os;
  const exe = os === "win32" ? ".exe" : "";
  // glibc is the Linux default, in names as in Bun's targets; musl says so.
  const id = `${name}-${cpu}${libc ? `-${libc}` : ""}`;
  return {
    id,
    bunTarget: `bun-${id}` as Bun.Build.CompileTarget,
    file: `mcpmgr-${id}${exe}`,
    os,
    cpu,
    ...(os === "linux" ? { libc: libc ?? "glibc" } : {}),
    npmPackage: `mcpmgr-${id}`,
    npmBinary: `bin/mcpmgr${exe}`,
  };
}

export const releaseTargets: readonly ReleaseTarget[] = [
  target("linux", "x64"),
  target("linux", "arm64"),
  // Alpine and other musl systems, where the glibc ones cannot start (no glibc loader).
  target("linux", "x64", "musl"),
  target("linux", "arm64", "musl"),
  target("darwin", "x64"),
  target("darwin", "arm64"),
  target("win32", "x64"),
];

/** The target this machine runs, if it is one we release for. */
export function hostTarget(): ReleaseTarget | undefined {
  const libc = process.platform === "linux" ? hostLibc() : undefined;
  return releaseTargets.find((t) => t.os === process.platform && t.cpu === process.arch && t.libc === libc);
}

/** glibc when the runtime reports the glibc it runs on (Node and Bun both do), else musl. */
function hostLibc(): "glibc" | "musl" {
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
  return report?.header?.glibcVersionRuntime ? "glibc" : "musl";
}

export function targetById(id: string): ReleaseTarget {
  const found = releaseTargets.find((t) => t.id === id);
  if (found === undefined) {
    throw new Error(`unknown target ${JSON.stringify(id)}; known: ${releaseTargets.map((t) => t.id).join(", ")}`);
  }
  return found;
}
