/**
 * Where mcpmgr keeps its files. Pure: the environment, platform and home directory are
 * passed in (defaults read the process), so tests can ask "what would macOS do?" on Linux.
 *
 * The five directories and what goes in each:
 *   configDir   files the user writes or edits (ignore patterns, custom registries)
 *   dataDir     files mcpmgr creates and the user wants to keep (encrypted secrets, caches worth keeping)
 *   stateDir    workload records and status; losing it loses the list of workloads and the home's
 *               container install id (install-id.ts), nothing else
 *   runtimeDir  pid files, sockets: meaningless after a reboot
 *   logDir      workload and proxy logs
 *
 * Layouts:
 *   MCPMGR_HOME  $MCPMGR_HOME/{config,data,state,run}, logs in state/logs. Wins over everything,
 *                so tests and portable installs never touch the real home.
 *   Linux/BSD    XDG Base Directory spec: $XDG_CONFIG_HOME, $XDG_DATA_HOME, $XDG_STATE_HOME,
 *                $XDG_RUNTIME_DIR, each + "/mcpmgr", with the spec's defaults under ~. Logs are
 *                state (the spec names logs as its example), so they go in stateDir/logs.
 *   macOS        Apple's guidance: app files in ~/Library/Application Support/mcpmgr and logs in
 *                ~/Library/Logs/mcpmgr (Console.app shows them). config is the top folder, with
 *                data/ and state/ inside, so every directory stays distinct (code may list one
 *                without tripping over another's files). Absolute XDG_* variables still win,
 *                because people who set them on a Mac do so to make CLI tools follow them.
 *   Windows      config roams with the user profile (%APPDATA%\mcpmgr); data, state, logs are
 *                machine-local (%LOCALAPPDATA%\mcpmgr\{data,state,logs}) since they hold
 *                pids, ports and caches that mean nothing on another machine.
 * Without $XDG_RUNTIME_DIR the runtime dir is stateDir/run: it is only ever ours, so that is safe.
 */
import { posix, win32 } from "node:path";
import { McpmgrError } from "../errors.ts";

export interface McpmgrPaths {
  readonly configDir: string;
  readonly stateDir: string;
  readonly dataDir: string;
  readonly runtimeDir: string;
  readonly logDir: string;
}

const APP = "mcpmgr";

/**
 * os.homedir() without loading node:os at start-up (~0.5 ms of every command, bench
 * `cli-startup`): it is HOME (USERPROFILE on Windows) when that is set, as here; node:os only
 * asks the system otherwise.
 */
function homeDirectory(): string {
  const fromEnv = process.platform === "win32" ? process.env.USERPROFILE : process.env.HOME;
  return fromEnv || (require("node:os") as typeof import("node:os")).homedir();
}

export type Env = Readonly<Record<string, string | undefined>>;

export function resolvePaths(
  env: Env = process.env,
  platform: NodeJS.Platform = process.platform,
  home: string = homeDirectory(),
): McpmgrPaths {
  const path = platform === "win32" ? win32 : posix;
  const read = platform === "win32" ? _caseInsensitive(env) : (name: string) => _nonEmpty(env[name]);

  const override = read("MCPMGR_HOME");
  if (override !== undefined) {
    // A relative MCPMGR_HOME is taken from the current directory once, here, so the detached
    // copy of mcpmgr and its children all agree on the same absolute folders.
    const root = path.isAbsolute(override) ? path.normalize(override) : path.resolve(override);
    const stateDir = path.join(root, "state");
    return _freeze({
      configDir: path.join(root, "config"),
      dataDir: path.join(root, "data"),
      stateDir,
      runtimeDir: path.join(root, "run"),
      logDir: path.join(stateDir, "logs"),
    });
  }

  // The XDG spec: "If an implementation encounters a relative path in any of these
  // variables it should consider the path invalid and ignore it."
  const xdg = (name: string): string | undefined => {
    const value = read(name);
    return value !== undefined && path.isAbsolute(value) ? path.join(value, APP) : undefined;
  };
  const userHome = (): string => {
    if (!path.isAbsolute(home)) {
      throw new McpmgrError(
        "INVALID_OPTION",
        "cannot tell where to keep mcpmgr's files: the home directory is unknown",
        {
          hint: "set HOME (or MCPMGR_HOME to a folder mcpmgr may use)",
        },
      );
    }
    return home;
  };

  if (platform === "win32") {
    const roaming = read("APPDATA") ?? path.join(userHome(), "AppData", "Roaming");
    const local = read("LOCALAPPDATA") ?? path.join(userHome(), "AppData", "Local");
    const base = path.join(local, APP);
    const stateDir = path.join(base, "state");
    return _freeze({
      configDir: path.join(roaming, APP),
      dataDir: path.join(base, "data"),
      stateDir,
      runtimeDir: path.join(stateDir, "run"),
      logDir: path.join(base, "logs"),
    });
  }

  if (platform === "darwin") {
    // Lazily computed so that a Mac with every XDG variable set works even without a home.
    const support = () => path.join(userHome(), "Library", "Application Support", APP);
    const stateDir = xdg("XDG_STATE_HOME") ?? path.join(support(), "state");
    return _freeze({
      configDir: xdg("XDG_CONFIG_HOME") ?? support(),
      dataDir: xdg("XDG_DATA_HOME") ?? path.join(support(), "data"),
      stateDir,
      runtimeDir: xdg("XDG_RUNTIME_DIR") ?? path.join(stateDir, "run"),
      logDir:
        xdg("XDG_STATE_HOME") !== undefined
          ? path.join(stateDir, "logs")
          : path.join(userHome(), "Library", "Logs", APP),
    });
  }

  const stateDir = xdg("XDG_STATE_HOME") ?? path.join(userHome(), ".local", "state", APP);
  return _freeze({
    configDir: xdg("XDG_CONFIG_HOME") ?? path.join(userHome(), ".config", APP),
    dataDir: xdg("XDG_DATA_HOME") ?? path.join(userHome(), ".local", "share", APP),
    stateDir,
    runtimeDir: xdg("XDG_RUNTIME_DIR") ?? path.join(stateDir, "run"),
    logDir: path.join(stateDir, "logs"),
  });
}

/** Empty variables count as unset (the XDG spec says so, and `FOO= cmd` is a common way to unset). */
function _nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}

/** Windows environment names are case-insensitive; a plain object passed by a test is not. */
function _caseInsensitive(env: Env): (name: string) => string | undefined {
  return (name) => {
    const exact = _nonEmpty(env[name]);
    if (exact !== undefined) return exact;
    const upper = name.toUpperCase();
    for (const [key, value] of Object.entries(env)) {
      if (key.toUpperCase() === upper && _nonEmpty(value) !== undefined) return value;
    }
    return undefined;
  };
}

function _freeze(paths: McpmgrPaths): McpmgrPaths {
  return Object.freeze({ ...paths });
}
