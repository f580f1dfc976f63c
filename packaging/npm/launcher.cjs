#!/usr/bin/env node
/*
 * The `mcpmgr` command of the npm package. mcpmgr itself is a compiled executable; npm
 * installs the one for this machine as an optional dependency (mcpmgr-linux-x64,
 * mcpmgr-darwin-arm64, ...: each package declares its os and cpu, so npm skips the others).
 * This script finds it and runs it with our arguments. It runs under Node and under Bun and
 * uses nothing beyond their common built-ins.
 *
 * MCPMGR_BINARY=/path/to/mcpmgr runs that executable instead (a platform without a
 * prebuilt package, or a build of your own).
 */
"use strict";

const { spawn } = require("node:child_process");
const { existsSync } = require("node:fs");
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

/** The executable to run, or a one-line explanation of why there is none. */
function findBinary() {
  const override = process.env.MCPMGR_BINARY;
  if (override) {
    if (!existsSync(override)) fail(`MCPMGR_BINARY=${override}: no such file`);
    return override;
  }
  const id = platformId();
  const name = `mcpmgr-${id}`;
  const offered = Object.keys(manifest.optionalDependencies || {});
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
  // ENOENT for a file that is there: what is missing is the loader it names. The prebuilt Linux
  // executables are linked against glibc, which musl systems (Alpine) do not have.
  if (code === "ENOENT" && existsSync(binary)) {
    const why =
      process.platform === "linux"
        ? "the loader it needs is missing (the prebuilt Linux executables need glibc; Alpine and other musl systems do not have it)"
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

run(findBinary(), process.argv.slice(2));
