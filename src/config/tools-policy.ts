/**
 * `--tools` and `--tools-override FILE` as one validated policy: which of the server's tools
 * clients see, under which names and descriptions. The override file has the format other
 * MCP tooling uses (docs/file-formats.md): {"toolsOverride": {"<real name>": {"name": "...", "description": "..."}}}.
 * Names in --tools and in the file are the server's own names.
 */
import * as v from "valibot";
import { namedRecord } from "./named-record.ts";
import { McpmgrError } from "../errors.ts";
import { decodeConfigFile } from "./config-file.ts";

export interface ToolsPolicy {
  /** Real names clients may see and call; undefined: every tool. */
  readonly allowed: ReadonlySet<string> | undefined;
  /** Real name → what clients see instead. */
  readonly overrides: ReadonlyMap<string, { readonly name?: string; readonly description?: string }>;
  /** Name clients use → real name (only for renamed tools). */
  readonly realNames: ReadonlyMap<string, string>;
}

const toolName = v.pipe(
  v.string(),
  v.regex(/^[A-Za-z0-9_./-]{1,128}$/, "must be a tool name (1-128 letters, digits, _ - . /)"),
);
const overrideFileSchema = v.strictObject({
  toolsOverride: namedRecord(
    toolName,
    v.strictObject({
      name: v.optional(toolName),
      description: v.optional(v.pipe(v.string(), v.maxLength(10_000, "must be at most 10000 characters"))),
    }),
  ),
});

function loadOverrides(path: string): Record<string, { name?: string; description?: string }> {
  return decodeConfigFile(path, overrideFileSchema, {
    option: "--tools-override",
    yaml: false,
    hint: 'expected {"toolsOverride": {"tool": {"name": "...", "description": "..."}}}',
  }).toolsOverride;
}

/**
 * undefined when neither option is given (then nothing is filtered and the middleware is
 * not installed). `known`: the tools a registry entry lists, to catch typos up front.
 */
export function toolsPolicy(
  tools: readonly string[],
  overridePath: string | undefined,
  known?: readonly string[],
): ToolsPolicy | undefined {
  if (tools.length === 0 && overridePath === undefined) return undefined;
  const allowed = tools.length > 0 ? new Set(tools) : undefined;
  const file = overridePath ? loadOverrides(overridePath) : {};
  const overrides = new Map<string, { name?: string; description?: string }>();
  for (const [real, change] of Object.entries(file)) {
    if (change.name === undefined && change.description === undefined) {
      throw new McpmgrError(
        "INVALID_OPTION",
        `--tools-override ${overridePath}: the entry for ${real} changes nothing`,
        {
          hint: "give it a name, a description, or remove it",
        },
      );
    }
    if (allowed && !allowed.has(real)) {
      throw new McpmgrError(
        "CONFLICTING_OPTIONS",
        `--tools-override ${overridePath} ${change.name !== undefined ? "renames" : "re-describes"} ${real}, but --tools hides it`,
        {
          hint: `add ${real} to --tools, or remove its override`,
        },
      );
    }
    overrides.set(real, change);
  }
  if (known && known.length > 0) {
    const unknown = [...(allowed ?? []), ...overrides.keys()].filter((name) => !known.includes(name));
    if (unknown.length > 0) {
      throw new McpmgrError(
        "INVALID_OPTION",
        `unknown tool${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}: the registry entry lists ${known.join(", ")}`,
        {
          hint: "check the names in --tools / --tools-override, or run the server by its package if the entry is out of date",
        },
      );
    }
  }
  const realNames = new Map<string, string>();
  for (const [real, change] of overrides) {
    if (change.name === undefined || change.name === real) continue;
    if (realNames.has(change.name))
      throw new McpmgrError(
        "INVALID_OPTION",
        `--tools-override ${overridePath} gives two tools the name ${change.name}`,
        {
          hint: "choose distinct names",
        },
      );
    realNames.set(change.name, real);
  }
  // A new name must not shadow a tool still visible under its own name (as far as we know
  // the tools: --tools and the registry's list; at run time the renamed tool wins).
  for (const [shown, real] of realNames) {
    if (overrides.has(shown)) continue;
    const visibleTool = allowed ? allowed.has(shown) : known?.includes(shown) === true;
    if (visibleTool) {
      throw new McpmgrError(
        "INVALID_OPTION",
        `--tools-override ${overridePath} renames ${real} to ${shown}, which is another tool's name`,
        { hint: "choose a name no other tool has, or rename that tool too" },
      );
    }
  }
  return Object.freeze({ allowed, overrides, realNames });
}
