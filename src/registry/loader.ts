/**
 * The registry `mcpmgr run <name>` looks names up in: the embedded catalog, merged with a
 * custom registry when one is configured. Custom entries replace embedded ones of the same
 * name and add new ones.
 *
 * Where the custom registry comes from (the first that is set wins):
 *   1. MCPMGR_REGISTRY             a file path (relative to the current directory), a file:// URL,
 *                                  or an http(s) URL
 *   2. <configDir>/config.json     its "registry" field, same forms; relative paths are taken
 *                                  from configDir
 * A configured registry that cannot be read or does not validate is an error, never silently
 * skipped: running servers from the wrong catalog would be worse than not running them.
 * Plain http:// is accepted only for loopback hosts, since the registry decides what runs; a
 * redirect is held to the same rule and never leads from https down to http. The answer is read
 * no further than 16 MiB.
 */
import { isAbsolute, join, resolve } from "node:path";
import { isLoopbackHostname } from "../config/loopback.ts";
import { readCappedText } from "../bounded-body.ts";
import { McpmgrError, errorMessage } from "../errors.ts";
import { validatedEmbeddedCatalogJson } from "./embedded.ts" with { type: "macro" };
import type { RegistryEntry } from "./entry.ts";
import { closeMatches } from "../close-matches.ts";
import { registrySetting } from "./config-setting.ts";
import { deepFreeze } from "../objects.ts";

export type FetchLike = (input: string | URL, init?: RequestInit) => Promise<Response>;

export interface LoadRegistryOptions {
  /** Read for MCPMGR_REGISTRY; nothing else. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Where config.json lives (state/paths.ts resolvePaths().configDir); without it config.json is not read. */
  readonly configDir?: string;
  /** Used for registries given by URL. */
  readonly fetch?: FetchLike;
  /** Base of a relative MCPMGR_REGISTRY path; default process.cwd(). */
  readonly cwd?: string;
  /** Time allowed for fetching a registry URL; default 15 s. */
  readonly timeoutMs?: number;
}

export type EntryOrigin = "embedded" | "custom";

export interface CustomRegistrySource {
  readonly kind: "file" | "url";
  /** Absolute file path or URL. */
  readonly location: string;
  /** "MCPMGR_REGISTRY" or the path of the config.json that named it. */
  readonly configuredBy: string;
}

export interface Registry {
  /** The custom registry merged in, if any. */
  readonly custom: CustomRegistrySource | undefined;
  /** Every entry, sorted by name. */
  list(): readonly RegistryEntry[];
  /** By name, or by the MCP registry name (io.github.owner/server) of converted entries. */
  lookup(name: string): RegistryEntry | undefined;
  /** Like lookup, but an unknown name is a REGISTRY_ENTRY_NOT_FOUND error (exit 2) that suggests close matches. */
  get(name: string): RegistryEntry;
  origin(name: string): EntryOrigin | undefined;
  closeMatches(name: string): readonly string[];
}

const MAX_REGISTRY_BYTES = 16 * 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 15_000;

let embeddedCache: readonly RegistryEntry[] | undefined;

/**
 * The embedded catalog, validated when mcpmgr was built (embedded.ts); frozen like any parsed entry. The
 * macro inlines it as JSON text: JSON.parse builds the entries natively, where an inlined object literal
 * is run as bytecode, op by op (bench `cli-startup`, `registry list`).
 */
export function embeddedEntries(): readonly RegistryEntry[] {
  embeddedCache ??= deepFreeze(JSON.parse(validatedEmbeddedCatalogJson()) as RegistryEntry[]);
  return embeddedCache;
}

export async function loadRegistry(options: LoadRegistryOptions = {}): Promise<Registry> {
  const custom = await _locateCustom(options);
  const customEntries = custom === undefined ? [] : await _loadCustom(custom, options);
  return mergeRegistry(embeddedEntries(), customEntries, custom);
}

/** Where the custom registry is configured, if anywhere (without reading it). */
export async function customRegistrySource(options: LoadRegistryOptions): Promise<CustomRegistrySource | undefined> {
  return _locateCustom(options);
}

async function _locateCustom(options: LoadRegistryOptions): Promise<CustomRegistrySource | undefined> {
  const fromEnv = options.env?.MCPMGR_REGISTRY?.trim();
  if (fromEnv) return _classify(fromEnv, options.cwd ?? process.cwd(), "MCPMGR_REGISTRY");
  if (options.configDir === undefined) return undefined;

  const configPath = join(options.configDir, "config.json");
  // Read at once, not looked for first: node:fs is loaded before any command that reads state anyway
  // (the private-folders check, run-main.ts), and Bun's asynchronous stat that looked for it started two
  // thread-pool threads and a wait on them in every `registry list` (bench `cli-startup`). Only "not
  // there" ends here: a config.json that cannot be reached (a folder without search permission, a
  // symlink loop) or is a directory is reported, since a configured registry must never be skipped silently.
  let text: string;
  try {
    text = _readText(configPath);
  } catch (err) {
    if (_errno(err) === "ENOENT" || _errno(err) === "ENOTDIR") return undefined;
    throw new McpmgrError("REGISTRY_UNREACHABLE", `cannot read ${configPath}: ${errorMessage(err)}`, {
      hint:
        _errno(err) === "EISDIR"
          ? "config.json must be a JSON file: move the directory of that name away"
          : "check the file's permissions",
      cause: err,
    });
  }
  const registry = registrySetting(text, configPath);
  if (registry === undefined) return undefined;
  return _classify(registry.trim(), options.configDir, configPath);
}

function _classify(value: string, base: string, configuredBy: string): CustomRegistrySource {
  const setting = configuredBy === "MCPMGR_REGISTRY" ? "MCPMGR_REGISTRY" : `"registry" in ${configuredBy}`;
  if (/^file:/i.test(value)) {
    try {
      // node:url only for file:// settings: loading it costs every `registry list` ~1 ms.
      const { fileURLToPath } = require("node:url") as typeof import("node:url");
      return { kind: "file", location: fileURLToPath(value), configuredBy };
    } catch (err) {
      throw new McpmgrError("REGISTRY_INVALID", `${setting} is not a usable file:// URL (${errorMessage(err)})`, {
        hint: "give a plain file path instead",
        cause: err,
        exitCode: 2,
      });
    }
  }
  if (/^https?:\/\//i.test(value)) {
    const url = new URL(value);
    if (url.protocol === "http:" && !isLoopbackHostname(url.hostname)) {
      throw new McpmgrError(
        "REGISTRY_INVALID",
        `${setting} names an http:// URL (${url.href}); a registry decides what runs, so it must come over https`,
        {
          hint: "use an https:// URL, or download the file and give its path",
          exitCode: 2,
        },
      );
    }
    return { kind: "url", location: url.href, configuredBy };
  }
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(value)) {
    throw new McpmgrError("REGISTRY_INVALID", `${setting} must be a file path or an http(s) URL, not ${value}`, {
      hint: "give a file path or an https:// URL",
      exitCode: 2,
    });
  }
  return { kind: "file", location: isAbsolute(value) ? value : resolve(base, value), configuredBy };
}

async function _loadCustom(source: CustomRegistrySource, options: LoadRegistryOptions): Promise<RegistryEntry[]> {
  const setting =
    source.configuredBy === "MCPMGR_REGISTRY" ? "MCPMGR_REGISTRY" : `"registry" in ${source.configuredBy}`;
  const text =
    source.kind === "file"
      ? await _readFile(source.location, setting)
      : await _fetch(source.location, setting, options);
  // UTF-16 (PowerShell's > and Out-File) reads as "not valid JSON" at its first character: named instead.
  const { utf16Problem, SAVE_AS_UTF8 } = require("../bounded-file.ts") as typeof import("../bounded-file.ts");
  const utf16 = utf16Problem(text);
  if (utf16 !== undefined) {
    throw new McpmgrError("REGISTRY_INVALID", `invalid registry ${source.location}: ${utf16}`, {
      hint: SAVE_AS_UTF8,
      exitCode: 2,
    });
  }
  let doc: unknown;
  try {
    // A file saved by Windows Notepad starts with a byte order mark, which JSON.parse stops at.
    doc = JSON.parse(text.replace(/^\uFEFF/, ""));
  } catch (err) {
    throw new McpmgrError(
      "REGISTRY_INVALID",
      `invalid registry ${source.location}: not valid JSON (${errorMessage(err)})`,
      {
        hint: `fix the JSON, or change ${setting} to use only the embedded catalog`,
        cause: err,
        exitCode: 2,
      },
    );
  }
  // The document parser (and server.json's schemas) only for a custom registry: `registry list`
  // with the embedded catalog alone does not pay for building them.
  const { parseRegistryDocument } = await import("./document.ts");
  return parseRegistryDocument(doc, {
    origin: source.location,
    hint: `fix that entry ('mcpmgr registry info NAME --format json' prints a valid one), or change ${setting}`,
  });
}

async function _readFile(path: string, setting: string): Promise<string> {
  try {
    return _readText(path);
  } catch (err) {
    const code = _errno(err);
    if (code === "ENOENT" || code === "ENOTDIR") {
      throw new McpmgrError(
        "REGISTRY_FILE_NOT_FOUND",
        `custom registry file ${path} does not exist (set by ${setting})`,
        {
          hint: `fix the path in ${setting}, or unset it to use only the embedded catalog`,
          cause: err,
          exitCode: 2,
        },
      );
    }
    if (code === "EISDIR") {
      throw new McpmgrError("REGISTRY_INVALID", `custom registry ${path} is a directory (set by ${setting})`, {
        hint: "give the path of a JSON file",
        cause: err,
        exitCode: 2,
      });
    }
    if (code === "EFBIG") {
      throw new McpmgrError("REGISTRY_INVALID", `custom registry ${path} (set by ${setting}): ${errorMessage(err)}`, {
        hint: "give the path of a registry JSON file",
        cause: err,
        exitCode: 2,
      });
    }
    throw new McpmgrError("REGISTRY_UNREACHABLE", `cannot read custom registry ${path}: ${errorMessage(err)}`, {
      hint: "check the file's permissions",
      cause: err,
    });
  }
}

/** Redirects followed by hand, each checked: a registry decides what runs, so no hop may leave https. */
const MAX_REDIRECTS = 5;

async function _fetch(url: string, setting: string, options: LoadRegistryOptions): Promise<string> {
  const fetchImpl = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const hint = `check the URL and the network, or change ${setting} to use only the embedded catalog`;
  const signal = AbortSignal.timeout(timeoutMs);
  let response: Response;
  let current = url;
  for (let hops = 0; ; hops++) {
    try {
      response = await fetchImpl(current, { headers: { accept: "application/json" }, redirect: "manual", signal });
    } catch (err) {
      const timedOut = err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError");
      const why = timedOut ? `no answer within ${Math.round(timeoutMs / 1000)} s` : errorMessage(err);
      throw new McpmgrError("REGISTRY_UNREACHABLE", `cannot fetch custom registry ${url}: ${why}`, {
        hint,
        cause: err,
      });
    }
    const location = response.headers.get("location");
    if (response.status < 300 || response.status > 399 || location === null) break;
    await response.body?.cancel().catch(() => {});
    if (hops === MAX_REDIRECTS) {
      throw new McpmgrError(
        "REGISTRY_UNREACHABLE",
        `cannot fetch custom registry ${url}: more than ${MAX_REDIRECTS} redirects`,
        { hint },
      );
    }
    current = _redirectTarget(url, current, location, setting);
  }
  if (!response.ok) {
    await response.body?.cancel().catch(() => {});
    throw new McpmgrError(
      "REGISTRY_UNREACHABLE",
      `cannot fetch custom registry ${url}: HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ""}`,
      { hint },
    );
  }
  const tooLarge = () =>
    new McpmgrError(
      "REGISTRY_INVALID",
      `custom registry ${url} is larger than ${MAX_REGISTRY_BYTES / 1024 / 1024} MiB`,
      { hint, exitCode: 2 },
    );
  try {
    return await readCappedText(response, MAX_REGISTRY_BYTES, tooLarge);
  } catch (err) {
    if (err instanceof McpmgrError) throw err;
    throw new McpmgrError("REGISTRY_UNREACHABLE", `cannot fetch custom registry ${url}: ${errorMessage(err)}`, {
      hint,
      cause: err,
    });
  }
}

/**
 * Where a redirect leads, under the rule a configured URL follows (https, or http on loopback) and never
 * from https down to http: on a plain-http hop anyone on the path could hand mcpmgr their own catalog.
 */
function _redirectTarget(configured: string, from: string, location: string, setting: string): string {
  let target: URL;
  try {
    target = new URL(location, from);
  } catch {
    throw new McpmgrError("REGISTRY_UNREACHABLE", `custom registry ${configured} redirected to an invalid URL`, {
      hint: `fix the server's redirect, or set ${setting} to the final URL`,
    });
  }
  const downgrade = new URL(from).protocol === "https:" && target.protocol !== "https:";
  const plainRemote = target.protocol === "http:" && !isLoopbackHostname(target.hostname);
  if (downgrade || plainRemote || !/^https?:$/.test(target.protocol)) {
    throw new McpmgrError(
      "REGISTRY_INVALID",
      `custom registry ${configured} redirected to ${target.protocol}//${target.host}${target.pathname}; a registry decides what runs, so every hop must be https`,
      { hint: `set ${setting} to the registry's https:// URL, or download the file and give its path`, exitCode: 2 },
    );
  }
  return target.href;
}

/** The embedded and custom entries as one registry (custom entries replace embedded ones of the same name). */
export function mergeRegistry(
  embedded: readonly RegistryEntry[],
  custom: readonly RegistryEntry[],
  source: CustomRegistrySource | undefined,
): Registry {
  const byName = new Map<string, { entry: RegistryEntry; origin: EntryOrigin }>();
  for (const entry of embedded) byName.set(entry.name, { entry, origin: "embedded" });
  for (const entry of custom) byName.set(entry.name, { entry, origin: "custom" });
  const aliases = new Map<string, string>();
  for (const { entry } of byName.values())
    if (entry.qualifiedName !== undefined) aliases.set(entry.qualifiedName, entry.name);

  const sorted = Object.freeze([...byName.values()].map((item) => item.entry).sort((a, b) => _byName(a.name, b.name)));
  const find = (name: string) =>
    byName.get(name) ?? byName.get(aliases.get(name) ?? "") ?? _caseInsensitive(byName, name);
  // Registry names are long and often half-remembered: a wider budget, and names containing the query.
  const matches = (name: string) =>
    closeMatches(name, byName.keys(), { maxDistance: Math.max(2, Math.floor(name.length / 3)), substrings: true });

  return Object.freeze({
    custom: source,
    list: () => sorted,
    lookup: (name: string) => find(name)?.entry,
    origin: (name: string) => find(name)?.origin,
    closeMatches: matches,
    get(name: string): RegistryEntry {
      const found = find(name);
      if (found !== undefined) return found.entry;
      const close = matches(name);
      throw new McpmgrError("REGISTRY_ENTRY_NOT_FOUND", `no server named '${name}' in the registry`, {
        hint:
          close.length > 0
            ? `did you mean ${close.join(", ")}? ('mcpmgr registry list' shows every server)`
            : "'mcpmgr registry list' shows every server",
        exitCode: 2,
      });
    },
  });
}

/**
 * Case-insensitive, then by code point: the same order on every machine. (localeCompare
 * depended on the user's locale, and its first call loads ICU's collation data, ~0.5 ms of
 * every `registry list`.)
 */
function _byName(a: string, b: string): number {
  const [x, y] = [a.toLowerCase(), b.toLowerCase()];
  if (x !== y) return x < y ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A unique case-insensitive match, so `GitHub` finds `github`. */
function _caseInsensitive<T>(byName: ReadonlyMap<string, T>, name: string): T | undefined {
  const lower = name.toLowerCase();
  const hits = [...byName.entries()].filter(([key]) => key.toLowerCase() === lower);
  return hits.length === 1 ? hits[0]?.[1] : undefined;
}

/**
 * Sync, as callers read a setting before anything else happens. node:fs comes with it (bounded-file.ts),
 * on every call: the CLI has loaded it already (the private-folders check). No further than 16 MiB, as a
 * registry at a URL.
 */
function _readText(path: string): string {
  return (require("../bounded-file.ts") as typeof import("../bounded-file.ts")).readCappedFile(
    path,
    MAX_REGISTRY_BYTES,
  );
}

function _errno(err: unknown): string | undefined {
  return (err as { code?: string } | undefined)?.code;
}
