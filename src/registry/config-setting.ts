/**
 * The "registry" setting of mcpmgr's config.json, read from the file's text: a registry the user meant
 * to configure is never skipped silently, so a file that is not one JSON object, a misspelt "registry"
 * (one edit away) or a value that is not a string is an error; other keys are left alone, for settings
 * of later versions ("registries" or "register" are words of their own, not typos).
 */
import { closeMatches } from "../close-matches.ts";
import { errorMessage, McpmgrError } from "../errors.ts";
import { isObject } from "../objects.ts";

/** The configured registry (a path or URL, untrimmed), or undefined when none is set. */
export function registrySetting(text: string, configPath: string): string | undefined {
  // UTF-16 (PowerShell's > and Out-File) reads as "not valid JSON" at its first character: named instead.
  // Required, not imported: node:fs (bounded-file.ts) is loaded only once a file is read (registry list's start).
  const { utf16Problem, SAVE_AS_UTF8 } = require("../bounded-file.ts") as typeof import("../bounded-file.ts");
  const utf16 = utf16Problem(text);
  if (utf16 !== undefined)
    throw new McpmgrError("REGISTRY_INVALID", `${configPath}: ${utf16}`, { hint: SAVE_AS_UTF8, exitCode: 2 });
  let config: unknown;
  try {
    // An editor's byte order mark (Windows Notepad) is no part of the JSON.
    config = JSON.parse(text.replace(/^\uFEFF/, ""));
  } catch (err) {
    throw new McpmgrError("REGISTRY_INVALID", `${configPath} is not valid JSON: ${errorMessage(err)}`, {
      hint: "fix the file (it must hold one JSON object)",
      cause: err,
      exitCode: 2,
    });
  }
  if (!isObject(config))
    throw new McpmgrError("REGISTRY_INVALID", `${configPath} must hold one JSON object`, {
      hint: 'write it as {"registry": "PATH_OR_URL"}, or remove the file',
      exitCode: 2,
    });
  const misspelt = Object.keys(config).find(
    (key) => key !== "registry" && closeMatches(key, ["registry"], { maxDistance: 1 }).length > 0,
  );
  if (!("registry" in config) && misspelt !== undefined)
    throw new McpmgrError(
      "REGISTRY_INVALID",
      `${configPath}: ${JSON.stringify(misspelt)} is not a setting (did you mean "registry"?)`,
      {
        hint: `rename it to "registry", or remove it to use only the embedded catalog`,
        exitCode: 2,
      },
    );
  const registry = config.registry;
  if (registry === undefined || registry === null || registry === "") return undefined;
  if (typeof registry !== "string") {
    throw new McpmgrError("REGISTRY_INVALID", `${configPath}: registry: must be a file path or an https:// URL`, {
      hint: `set "registry" to a string, or remove it to use only the embedded catalog`,
      exitCode: 2,
    });
  }
  return registry;
}
