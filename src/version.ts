/**
 * The version is injected at build time (scripts/compile.ts defines
 * MCPMGR_BUILD_VERSION); running from source falls back to package.json.
 */
import pkg from "../package.json" with { type: "json" };

declare const MCPMGR_BUILD_VERSION: string | undefined;

export const version: string = typeof MCPMGR_BUILD_VERSION === "string" ? MCPMGR_BUILD_VERSION : pkg.version;
