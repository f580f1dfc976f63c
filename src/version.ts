/**
 * The version is injected at build time (scripts/compile.ts defines
 * MCPMGR_BUILD_VERSION); running from source falls back to package.json. A require, not an
 * import: the build folds the condition and leaves package.json out of the executable, so
 * no command pays for evaluating it at start-up.
 */
declare const MCPMGR_BUILD_VERSION: string | undefined;

export const version: string =
  typeof MCPMGR_BUILD_VERSION === "string"
    ? MCPMGR_BUILD_VERSION
    : (require("../package.json") as typeof import("../package.json")).version;
