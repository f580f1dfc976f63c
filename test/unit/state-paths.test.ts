/**
 * resolvePaths for every platform, driven by explicit env/platform/home so the test
 * machine's own variables and home never leak in.
 */
import { describe, expect, test } from "bun:test";
import { McpmgrError } from "../../src/errors.ts";
import { resolvePaths } from "../../src/state/paths.ts";

const HOME = "/home/ada";

describe("Linux (XDG)", () => {
  test("defaults under the home directory", () => {
    expect(resolvePaths({}, "linux", HOME)).toEqual({
      configDir: "/home/ada/.config/mcpmgr",
      stateDir: "/home/ada/.local/state/mcpmgr",
      dataDir: "/home/ada/.local/share/mcpmgr",
      runtimeDir: "/home/ada/.local/state/mcpmgr/run",
      logDir: "/home/ada/.local/state/mcpmgr/logs",
    });
  });

  test("absolute XDG variables are followed", () => {
    const env = {
      XDG_CONFIG_HOME: "/x/config",
      XDG_STATE_HOME: "/x/state",
      XDG_DATA_HOME: "/x/data",
      XDG_RUNTIME_DIR: "/run/user/1000",
    };
    expect(resolvePaths(env, "linux", HOME)).toEqual({
      configDir: "/x/config/mcpmgr",
      stateDir: "/x/state/mcpmgr",
      dataDir: "/x/data/mcpmgr",
      runtimeDir: "/run/user/1000/mcpmgr",
      logDir: "/x/state/mcpmgr/logs",
    });
  });

  test("relative and empty XDG variables are ignored, as the spec says", () => {
    const env = {
      XDG_CONFIG_HOME: "relative/config",
      XDG_STATE_HOME: "",
      XDG_DATA_HOME: "./data",
      XDG_RUNTIME_DIR: "run",
    };
    expect(resolvePaths(env, "linux", HOME)).toEqual(resolvePaths({}, "linux", HOME));
  });

  test("other Unix systems follow XDG too", () => {
    expect(resolvePaths({}, "freebsd", HOME).configDir).toBe("/home/ada/.config/mcpmgr");
  });

  test("an unknown home with no XDG variables is a clear error", () => {
    let caught: unknown;
    try {
      resolvePaths({}, "linux", "");
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(McpmgrError);
    expect((caught as McpmgrError).code).toBe("INVALID_OPTION");
    expect((caught as McpmgrError).hint).toContain("MCPMGR_HOME");
  });
});

describe("macOS", () => {
  test("Application Support for config, data and state; ~/Library/Logs for logs", () => {
    expect(resolvePaths({}, "darwin", "/Users/ada")).toEqual({
      configDir: "/Users/ada/Library/Application Support/mcpmgr",
      dataDir: "/Users/ada/Library/Application Support/mcpmgr/data",
      stateDir: "/Users/ada/Library/Application Support/mcpmgr/state",
      runtimeDir: "/Users/ada/Library/Application Support/mcpmgr/state/run",
      logDir: "/Users/ada/Library/Logs/mcpmgr",
    });
  });

  test("explicit absolute XDG variables win", () => {
    const paths = resolvePaths(
      { XDG_CONFIG_HOME: "/Users/ada/.config", XDG_STATE_HOME: "/Users/ada/.local/state" },
      "darwin",
      "/Users/ada",
    );
    expect(paths.configDir).toBe("/Users/ada/.config/mcpmgr");
    expect(paths.stateDir).toBe("/Users/ada/.local/state/mcpmgr");
    expect(paths.logDir).toBe("/Users/ada/.local/state/mcpmgr/logs");
    expect(paths.dataDir).toBe("/Users/ada/Library/Application Support/mcpmgr/data");
  });
});

describe("Windows", () => {
  test("roaming config, local data/state/logs", () => {
    const env = { APPDATA: "C:\\Users\\ada\\AppData\\Roaming", LOCALAPPDATA: "C:\\Users\\ada\\AppData\\Local" };
    expect(resolvePaths(env, "win32", "C:\\Users\\ada")).toEqual({
      configDir: "C:\\Users\\ada\\AppData\\Roaming\\mcpmgr",
      dataDir: "C:\\Users\\ada\\AppData\\Local\\mcpmgr\\data",
      stateDir: "C:\\Users\\ada\\AppData\\Local\\mcpmgr\\state",
      runtimeDir: "C:\\Users\\ada\\AppData\\Local\\mcpmgr\\state\\run",
      logDir: "C:\\Users\\ada\\AppData\\Local\\mcpmgr\\logs",
    });
  });

  test("variable names are case-insensitive, and missing ones fall back under the profile", () => {
    expect(resolvePaths({ AppData: "D:\\Roam" }, "win32", "C:\\Users\\ada").configDir).toBe("D:\\Roam\\mcpmgr");
    expect(resolvePaths({}, "win32", "C:\\Users\\ada").stateDir).toBe("C:\\Users\\ada\\AppData\\Local\\mcpmgr\\state");
  });
});

describe("MCPMGR_HOME", () => {
  test("overrides every platform's layout", () => {
    const env = { MCPMGR_HOME: "/tmp/mh", XDG_CONFIG_HOME: "/x/config", XDG_RUNTIME_DIR: "/run/user/1" };
    const expected = {
      configDir: "/tmp/mh/config",
      stateDir: "/tmp/mh/state",
      dataDir: "/tmp/mh/data",
      runtimeDir: "/tmp/mh/run",
      logDir: "/tmp/mh/state/logs",
    };
    expect(resolvePaths(env, "linux", HOME)).toEqual(expected);
    expect(resolvePaths(env, "darwin", "/Users/ada")).toEqual(expected);
    expect(resolvePaths({ mcpmgr_home: "E:\\mh" }, "win32", "C:\\Users\\ada").runtimeDir).toBe("E:\\mh\\run");
  });

  test("a relative MCPMGR_HOME is made absolute once", () => {
    const paths = resolvePaths({ MCPMGR_HOME: "rel/home" }, "linux", HOME);
    expect(paths.configDir).toBe(`${process.cwd()}/rel/home/config`);
  });

  test("works without a home directory", () => {
    expect(resolvePaths({ MCPMGR_HOME: "/tmp/mh" }, "linux", "").stateDir).toBe("/tmp/mh/state");
  });
});

test("the result is frozen", () => {
  const paths = resolvePaths({}, "linux", HOME);
  expect(Object.isFrozen(paths)).toBe(true);
});
