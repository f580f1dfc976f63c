/**
 * The MCP registry's `server.json` (schema 2025-09-29 and later: camelCase fields) and its
 * conversion into our compact entry. Only the fields we use are checked; everything else a
 * publisher adds (icons, _meta, websiteUrl, ...) is accepted and ignored, so real documents
 * from registry.modelcontextprotocol.io load as they are.
 *
 * Conversion:
 *   name       "io.github.owner/weather" → entry "weather", qualifiedName keeps the full name
 *   packages   the first npm, pypi or oci package, in the publisher's order (nuget and mcpb
 *              cannot be run by mcpmgr and are skipped); npm → npx, pypi → uvx, oci → image
 *   remotes    used only when there is no runnable package
 *   env        environmentVariables (isRequired/isSecret → required/secret; a fixed `value` becomes the default)
 *   args       packageArguments with a value or default; arguments the user must supply are
 *              left for `--`. runtimeArguments (flags for docker/npx themselves) are ignored.
 *   permissions  server.json has none: "network", the same default as running the package by hand
 *   tools      server.json lists none
 */
import * as v from "valibot";
import { namedRecord } from "../config/named-record.ts";
import type { Transport } from "./entry.ts";
import type { RegistryEntryInput } from "./schema.ts";

const inputSchema = v.object({
  description: v.optional(v.string()),
  isRequired: v.optional(v.boolean()),
  isSecret: v.optional(v.boolean()),
  default: v.optional(v.string()),
  value: v.optional(v.string()),
});

const keyValueSchema = v.object({
  ...inputSchema.entries,
  name: v.pipe(v.string(), v.nonEmpty("must not be empty")),
});

const argumentSchema = v.object({
  ...inputSchema.entries,
  type: v.picklist(["positional", "named"], "must be one of positional, named"),
  name: v.optional(v.string()),
  valueHint: v.optional(v.string()),
  variables: v.optional(namedRecord(v.string(), inputSchema)),
});

const packageTransportSchema = v.object({
  type: v.picklist(["stdio", "streamable-http", "sse"], "must be one of stdio, streamable-http, sse"),
  url: v.optional(v.string()),
});

const packageSchema = v.object({
  registryType: v.picklist(["npm", "pypi", "oci", "nuget", "mcpb"], "must be one of npm, pypi, oci, nuget, mcpb"),
  identifier: v.pipe(v.string(), v.nonEmpty("must not be empty")),
  version: v.optional(v.string()),
  transport: packageTransportSchema,
  environmentVariables: v.optional(v.array(keyValueSchema), () => []),
  packageArguments: v.optional(v.array(argumentSchema), () => []),
});

const remoteSchema = v.object({
  type: v.picklist(["streamable-http", "sse"], "must be one of streamable-http, sse"),
  url: v.pipe(v.string(), v.nonEmpty("must not be empty")),
});

export const serverJsonSchema = v.object({
  name: v.pipe(
    v.string(),
    v.regex(
      /^[A-Za-z0-9.-]+\/[A-Za-z0-9._-]+$/,
      "must look like io.github.owner/server (reverse-DNS namespace, one /)",
    ),
  ),
  description: v.pipe(v.string(), v.nonEmpty("must not be empty")),
  version: v.optional(v.string()),
  repository: v.optional(v.object({ url: v.optional(v.string()) })),
  packages: v.optional(v.array(packageSchema), () => []),
  remotes: v.optional(v.array(remoteSchema), () => []),
});

export type ServerJson = v.InferOutput<typeof serverJsonSchema>;
type Package = ServerJson["packages"][number];
type Argument = Package["packageArguments"][number];

const runnable: Readonly<Record<string, "npx" | "uvx" | "image">> = { npm: "npx", pypi: "uvx", oci: "image" };

/** Thrown when a valid server.json describes nothing mcpmgr can run; `path` names the field. */
export class UnrunnableServerError extends Error {
  readonly path: string;

  constructor(message: string, path: string) {
    super(message);
    this.name = "UnrunnableServerError";
    this.path = path;
  }
}

/** A parsed server.json → an unvalidated compact entry (the caller validates it like any other). */
export function serverJsonToEntry(doc: ServerJson): RegistryEntryInput {
  const shortName = doc.name.slice(doc.name.indexOf("/") + 1);
  const base = {
    name: shortName,
    description: doc.description.trim(),
    qualifiedName: doc.name,
    ...(doc.version ? { version: doc.version } : {}),
    ...(doc.repository?.url ? { repository: doc.repository.url } : {}),
    permissions: "network" as const,
    tools: [],
  };

  const pkg = doc.packages.find((candidate) => runnable[candidate.registryType] !== undefined);
  if (pkg !== undefined) {
    const kind = runnable[pkg.registryType] as "npx" | "uvx" | "image";
    const port = pkg.transport.type === "stdio" ? undefined : _portFromTemplate(pkg.transport.url);
    return {
      ...base,
      transport: pkg.transport.type,
      source: { [kind]: _packageRef(pkg) },
      ...(port !== undefined ? { targetPort: port } : {}),
      env: pkg.environmentVariables.map((item) => ({
        name: item.name,
        description: item.description ?? "",
        required: item.isRequired ?? false,
        secret: item.isSecret ?? false,
        ...((item.value ?? item.default) !== undefined ? { default: item.value ?? item.default } : {}),
      })),
      args: pkg.packageArguments.flatMap(_argumentWords),
    };
  }

  const remote = doc.remotes[0];
  if (remote !== undefined) {
    return { ...base, transport: remote.type satisfies Transport, source: { remote: remote.url } };
  }

  const kinds = doc.packages.map((item) => item.registryType);
  throw new UnrunnableServerError(
    kinds.length > 0
      ? `no npm, pypi or oci package and no remote (found ${[...new Set(kinds)].join(", ")}, which mcpmgr cannot run)`
      : "has no packages and no remotes",
    "packages",
  );
}

function _packageRef(pkg: Package): string {
  const version = pkg.version?.trim();
  if (!version || version === "latest") return pkg.identifier;
  if (pkg.registryType === "oci") {
    // Schema 2025-09-29 puts the tag in the identifier; older documents gave it as version.
    const lastSegment = pkg.identifier.slice(pkg.identifier.lastIndexOf("/") + 1);
    return lastSegment.includes(":") || pkg.identifier.includes("@") ? pkg.identifier : `${pkg.identifier}:${version}`;
  }
  return `${pkg.identifier}@${version}`;
}

/** `http://localhost:8080/mcp` → 8080; templated ports (`{port}`) are left to the user. */
function _portFromTemplate(url: string | undefined): number | undefined {
  const port = url === undefined ? undefined : /^[a-z]+:\/\/[^/:]+:(\d{1,5})(?:\/|$)/i.exec(url)?.[1];
  return port === undefined ? undefined : Number(port);
}

function _argumentWords(arg: Argument): string[] {
  const value = _resolveTemplate(arg.value ?? arg.default, arg.variables);
  if (arg.type === "positional") return value === undefined ? [] : [value];
  if (!arg.name) return [];
  if (value !== undefined) return [arg.name, value];
  // A flag without a value is only passed when the publisher says it must be.
  return arg.isRequired && arg.valueHint === undefined ? [arg.name] : [];
}

/** `{var}` placeholders filled from variables' values or defaults; unresolved → undefined (the user supplies it). */
function _resolveTemplate(
  text: string | undefined,
  variables: Readonly<Record<string, v.InferOutput<typeof inputSchema>>> | undefined,
): string | undefined {
  if (text === undefined) return undefined;
  let unresolved = false;
  const filled = text.replace(/\{([A-Za-z0-9_-]+)\}/g, (whole, key: string) => {
    const variable = variables?.[key];
    const replacement = variable?.value ?? variable?.default;
    if (replacement === undefined) unresolved = true;
    return replacement ?? whole;
  });
  return unresolved ? undefined : filled;
}
