/**
 * The version and the build's metadata, injected at build time (scripts/compile.ts defines
 * MCPMGR_BUILD_VERSION, MCPMGR_BUILD_COMMIT and MCPMGR_BUILD_DATE). Running from source, the
 * version comes from package.json and the commit and date read "development". A require, not
 * an import: the build folds the condition and leaves package.json out of the executable, so
 * no command pays for evaluating it at start-up.
 */
declare const MCPMGR_BUILD_VERSION: string | undefined;
declare const MCPMGR_BUILD_COMMIT: string | undefined;
declare const MCPMGR_BUILD_DATE: string | undefined;

export const version: string =
  typeof MCPMGR_BUILD_VERSION === "string"
    ? MCPMGR_BUILD_VERSION
    : (require("../package.json") as typeof import("../package.json")).version;

/** The git commit the executable was built from (`git rev-parse HEAD`; "unknown" when built outside a checkout). */
export const commit: string = typeof MCPMGR_BUILD_COMMIT === "string" ? MCPMGR_BUILD_COMMIT : "development";

/** When it was built (ISO 8601, UTC; SOURCE_DATE_EPOCH when set, for reproducible builds). */
export const buildDate: string = typeof MCPMGR_BUILD_DATE === "string" ? MCPMGR_BUILD_DATE : "development";
