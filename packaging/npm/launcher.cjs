#!/usr/bin/env node
/*
 * The `mcpmgr` command of the npm package. mcpmgr itself is a compiled executable; npm
 * installs the one for this machine as an optional dependency (mcpmgr-linux-x64,
 * mcpmgr-linux-x64-musl, mcpmgr-darwin-arm64, ...: each package declares its os and cpu, the
 * Linux ones their libc too, so npm skips the others). This script finds it and runs it with
 * our arguments. It runs under Node and under Bun and uses nothing beyond their common
 * built-ins. Required rather than run (a test), it exports how it chooses.
 *
 * MCPMGR_BINARY=/path/to/mcpmgr runs that executable instead (a platform without a
 * prebuilt package, or a build of your own).
 */
"use strict";

const { spawn } = require("node:child_process");
const { existsSync, readdirSync, readFileSync } = require("node:fs");
const path = require("node:path");
const manifest = require("../package.json");

function fail(message) {
  process.stderr.write(`mcpmgr: ${message}\n`);
  process.exit(1);
}

function platformId() {
  const os = process.platform === "win32" ? "windows" : process.platform;
  return `${os}-${process.arch}`;
}

/**
 * Whether a Linux system's C library is musl (Alpine) rather than glibc, from what it shows:
 * the text of its ldd (a script naming the GNU C Library, or musl's loader), then the
 * runtime's report (Node and Bun give glibc's version on glibc, and list musl's loader among
 * the loaded libraries on musl), then musl's loader in /lib. A glibc system with musl
 * installed beside it (Debian's musl package) is glibc by the first two.
 */
function muslFrom({ ldd, report, libNames }) {
  if (typeof ldd === "string") {
    if (ldd.includes("musl")) return true;
    if (ldd.includes("GNU C Library") || ldd.includes("GLIBC")) return false;
  }
  const header = report?.header;
  if (header?.glibcVersionRuntime) return false;
  if ((report?.sharedObjects || []).some((lib) => /(^|\/)(ld-musl-|libc\.musl-)/.test(lib))) return true;
  return (libNames || []).some((lib) => /^ld-musl-.*\.so\.1$/.test(lib));
}

function isMusl() {
  if (process.platform !== "linux") return false;
  const attempt = (read) => {
    try {
      return read();
    } catch {
      return undefined;
    }
  };
  const ldd = attempt(() => readFileSync("/usr/bin/ldd", "latin1"));
  if (typeof ldd === "string" && /musl|GNU C Library|GLIBC/.test(ldd)) return muslFrom({ ldd });
  return muslFrom({ report: attempt(() => process.report.getReport()), libNames: attempt(() => readdirSync("/lib")) });
}

/** The platform package for this machine among those offered: the musl build on a musl Linux when there is one. */
function packageFor(id, musl, offered) {
  if (musl && offered.includes(`mcpmgr-${id}-musl`)) return `mcpmgr-${id}-musl`;
  return `mcpmgr-${id}`;
}

/** The executable to run, or a one-line explanation of why there is none. */
function findBinary(musl = isMusl()) {
  const override = process.env.MCPMGR_BINARY;
  if (override) {
    if (!existsSync(override)) fail(`MCPMGR_BINARY=${override}: no such file`);
    return override;
  }
  const id = platformId();
  const offered = Object.keys(manifest.optionalDependencies || {});
  const name = packageFor(id, musl, offered);
  if (!offered.includes(name)) {
    const ids = offered.map((pkg) => pkg.replace(/^mcpmgr-/, "")).join(", ");
    fail(
      `there is no prebuilt mcpmgr for ${id} (there is for ${ids}); ` +
        "build it from source (https://bun.sh + 'bun run compile') and set MCPMGR_BINARY to its path",
    );
  }
  let packageDir;
  try {
    packageDir = path.dirname(require.resolve(`${name}/package.json`));
  } catch {
    fail(
      `the package ${name}, which holds the mcpmgr executable for this machine, is not installed ` +
        `(an optional dependency: left out by --omit=optional or --no-optional, or its download failed); ` +
        // Next to mcpmgr: a global launcher does not look in the current project, nor a project's in the global folder.
        `install it where mcpmgr is: 'npm install -g ${name}@${manifest.version}' for a global mcpmgr, ` +
        `'npm install ${name}@${manifest.version}' in a project`,
    );
  }
  const binary = path.join(packageDir, "bin", process.platform === "win32" ? "mcpmgr.exe" : "mcpmgr");
  if (!existsSync(binary)) fail(`${binary} is missing; reinstall ${name}@${manifest.version}`);
  return binary;
}

/** Why `binary` did not start, in one line a user can act on (never the runtime's stack trace). */
function cannotStart(binary, err) {
  const code = err?.code;
  // ENOENT for a file that is there: what is missing is the loader it names. A glibc build on
  // a musl system (Alpine) when no musl build was found, or the other way round.
  if (code === "ENOENT" && existsSync(binary)) {
    const why =
      process.platform === "linux"
        ? "the loader it needs is missing (each prebuilt Linux executable needs its C library: " +
          `mcpmgr-${platformId()} glibc's, mcpmgr-${platformId()}-musl musl's, as on Alpine)`
        : "the loader it needs is missing";
    fail(
      `cannot start ${binary}: ${why}; build mcpmgr on this system ('bun run compile', docs/install.md) and set MCPMGR_BINARY to its path`,
    );
  }
  if (code === "EACCES") fail(`cannot start ${binary}: it is not executable ('chmod +x' it, or reinstall)`);
  if (code === "ENOEXEC") fail(`cannot start ${binary}: it is not an executable for ${platformId()}`);
  fail(`cannot start ${binary}: ${err?.message ?? String(err)}`);
}

function run(binary, args) {
  // Under Bun the launcher can become mcpmgr (same pid: signals and the exit status need no relaying).
  if (process.versions.bun && typeof process.execve === "function" && process.platform !== "win32") {
    try {
      process.execve(binary, [binary, ...args], process.env);
    } catch (err) {
      cannotStart(binary, err);
    }
  }
  const child = spawn(binary, args, { stdio: "inherit" });
  child.on("error", (err) => cannotStart(binary, err));
  // A process manager stops us with SIGTERM or SIGHUP: mcpmgr must hear it. Ctrl-C in a
  // terminal already reaches mcpmgr (the whole foreground group gets SIGINT); relaying it
  // too would be a second SIGINT, which mcpmgr takes as "stop at once, skip the clean-up".
  const interactive = require("node:tty").isatty(0);
  const relay = (signal) => {
    if (signal === "SIGINT" && interactive) return;
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  const signals = process.platform === "win32" ? ["SIGINT", "SIGTERM"] : ["SIGINT", "SIGTERM", "SIGHUP"];
  for (const signal of signals) process.on(signal, relay);
  child.on("exit", (code, signal) => {
    for (const s of signals) process.removeListener(s, relay);
    // Die the way mcpmgr died, so our parent sees the same status.
    if (signal) process.kill(process.pid, signal);
    else process.exit(code === null ? 1 : code);
  });
}

if (require.main === module) run(findBinary(), process.argv.slice(2));
else module.exports = { findBinary, isMusl, muslFrom, packageFor };
