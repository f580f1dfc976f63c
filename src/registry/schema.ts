/**
 * Our compact catalog entry: everything `mcpmgr run <name>` needs to start a server with
 * least privilege, in one small object. The embedded catalog is written in this form, and
 * custom registries may use it (`{"servers": [...]}`) or MCP registry server.json documents
 * (server-json.ts converts those into this form).
 *
 *   {
 *     "name": "fetch",                        letters, digits, . _ - (no / or :, so it never looks like an image)
 *     "description": "...",
 *     "transport": "stdio" | "sse" | "streamable-http",
 *     "source": {"npx": "@scope/pkg@1.2.3"}   exactly one of image, npx, uvx, go, remote
 *     "targetPort": 8080,                     sse/streamable-http servers started locally only
 *     "permissions": "none" | "network" | {profile, see config/permission-profile.ts},
 *     "env": [{"name", "description", "required", "secret", "default"?}],
 *     "args": ["--flag"],                     default arguments; arguments after `--` replace them
 *     "tools": ["fetch"],
 *     "tags": [...], "repository": "https://...", "version": "...", "qualifiedName": "io.github.x/y"
 *   }
 */
import * as v from "valibot";
import { goSpecPattern, imageRefPattern, npmSpecPattern, pypiSpecPattern } from "../config/package-refs.ts";
import { permissionsSchema } from "../config/permission-profile.ts";
import { portNumber } from "../config/values.ts";
import { type EntrySource, type EnvVarSpec, type RegistryEntry, sourceKinds, transports } from "./entry.ts";
import { deepFreeze } from "../objects.ts";

// For the modules that validate entries (and their tests): the entry type and its readers with the schema.
export { type RegistryEntry, sourceKinds, sourceOf } from "./entry.ts";

const entryNamePattern = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,98}[A-Za-z0-9])?$/;

const nonEmptyText = v.pipe(v.string(), v.trim(), v.nonEmpty("must not be empty"));
const noSpaces = (what: string) => v.check((text: string) => !/\s/.test(text), `${what} must not contain spaces`);

/** [registry/]namespace/image[:tag][@digest]; no scheme. */
const imageRef = v.pipe(
  v.string(),
  v.nonEmpty("must not be empty"),
  noSpaces("an image reference"),
  v.regex(imageRefPattern, "must be an image reference such as ghcr.io/owner/image:1.0"),
  v.check((text) => !text.includes("://"), "must be an image reference, not a URL"),
);

/** name or @scope/name, optionally @version. */
const npmSpec = v.pipe(v.string(), v.regex(npmSpecPattern, "must be an npm package such as @scope/name or name@1.2.3"));

/** PyPI name, optionally [extras] and @version or ==version (both understood by uvx). */
const pypiSpec = v.pipe(
  v.string(),
  v.regex(pypiSpecPattern, "must be a PyPI package such as mcp-server-time or name@1.2.3"),
);

/** A Go module package path such as github.com/owner/repo/cmd/server@v1.2.3. */
const goSpec = v.pipe(
  v.string(),
  v.regex(goSpecPattern, "must be a Go package path such as github.com/owner/repo/cmd/server@v1.0.0"),
);

const remoteUrl = v.pipe(
  v.string(),
  v.url("must be an absolute URL such as https://example.com/mcp"),
  v.check((text) => /^https?:$/i.test(new URL(text).protocol), "must be an http:// or https:// URL"),
);

const sourceSchema = v.pipe(
  v.strictObject({
    image: v.optional(imageRef),
    npx: v.optional(npmSpec),
    uvx: v.optional(pypiSpec),
    go: v.optional(goSpec),
    remote: v.optional(remoteUrl),
  }),
  v.check(
    (source) => sourceKinds.filter((kind) => source[kind] !== undefined).length === 1,
    (issue) => {
      const given = sourceKinds.filter((kind) => (issue.input as EntrySource)[kind] !== undefined);
      return given.length === 0
        ? `must name one of ${sourceKinds.join(", ")}`
        : `must name exactly one of ${sourceKinds.join(", ")} (found ${given.join(" and ")}); describe each way of running the server as its own entry`;
    },
  ),
);

const envNamePattern = /^[A-Za-z_][A-Za-z0-9_]*$/;

const envVarSchema = v.strictObject({
  name: v.pipe(v.string(), v.regex(envNamePattern, "must be a valid environment variable name (letters, digits, _)")),
  description: v.optional(v.string(), ""),
  required: v.optional(v.boolean(), false),
  secret: v.optional(v.boolean(), false),
  default: v.optional(v.string()),
});

/** MCP tool names: 1-128 characters from A-Z a-z 0-9 _ - . (and / used by some servers). */
const toolName = v.pipe(
  v.string(),
  v.regex(/^[A-Za-z0-9_./-]{1,128}$/, "must be a tool name (1-128 letters, digits, _ - . /)"),
);

function _firstDuplicate(items: readonly string[]): string | undefined {
  const seen = new Set<string>();
  for (const item of items) {
    if (seen.has(item)) return item;
    seen.add(item);
  }
  return undefined;
}

const entryObject = v.strictObject({
  name: v.pipe(
    v.string(),
    v.regex(
      entryNamePattern,
      "must be 1-100 letters, digits, '.', '_' or '-', starting and ending with a letter or digit",
    ),
  ),
  description: nonEmptyText,
  transport: v.picklist(transports, `must be one of ${transports.join(", ")}`),
  source: sourceSchema,
  targetPort: v.optional(portNumber),
  permissions: permissionsSchema,
  env: v.optional(
    v.pipe(
      v.array(envVarSchema),
      v.check(
        (vars) => _firstDuplicate(vars.map((item) => item.name)) === undefined,
        (issue) => `lists ${_firstDuplicate((issue.input as EnvVarSpec[]).map((item) => item.name))} twice`,
      ),
    ),
    () => [],
  ),
  args: v.optional(v.array(v.string()), () => []),
  tools: v.pipe(
    v.array(toolName),
    v.check(
      (tools) => _firstDuplicate(tools) === undefined,
      (issue) => `lists ${_firstDuplicate(issue.input as string[])} twice`,
    ),
  ),
  tags: v.optional(v.array(nonEmptyText), () => []),
  repository: v.optional(remoteUrl),
  version: v.optional(nonEmptyText),
  qualifiedName: v.optional(
    v.pipe(v.string(), v.regex(/^[A-Za-z0-9.-]+\/[A-Za-z0-9._-]+$/, "must look like io.github.owner/server")),
  ),
});

export const registryEntrySchema = v.pipe(
  entryObject,
  v.forward(
    v.partialCheck(
      [["transport"], ["source", "remote"]],
      (entry) => entry.source.remote === undefined || entry.transport !== "stdio",
      "a remote server is reached over sse or streamable-http, not stdio",
    ),
    ["transport"],
  ),
  v.forward(
    v.partialCheck(
      [["transport"], ["targetPort"]],
      (entry) => entry.targetPort === undefined || entry.transport !== "stdio",
      "applies only to sse and streamable-http servers (a stdio server has no port)",
    ),
    ["targetPort"],
  ),
  v.forward(
    v.partialCheck(
      [["targetPort"], ["source", "remote"]],
      (entry) => entry.targetPort === undefined || entry.source.remote === undefined,
      "does not apply to a remote server (its port is part of the URL)",
    ),
    ["targetPort"],
  ),
  v.transform((entry): RegistryEntry => deepFreeze(entry)),
);

export type RegistryEntryInput = v.InferInput<typeof registryEntrySchema>;
